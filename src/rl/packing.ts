/**
 * Sequence packing for SFT.
 *
 * - `packDocuments`: first-fit-decreasing bin packing of whole documents into rows of at most `rowLen` tokens. A
 *   document is never split across rows (documents longer than a row must be truncated or dropped beforehand, see
 *   sft-data.ts). Deterministic: ties in length keep the input order.
 * - `microBatches`: rows grouped into micro-batches by a token budget. A micro-batch is a [B, T] block, T = its
 *   longest row (shorter rows are padded), and B·T ≤ budget: as many rows as fit.
 * - `microBatchInput`: the model input of one micro-batch: tokens, per-document `docIds` (attention never crosses a
 *   document, RoPE positions restart per document), next-token targets and the loss mask shifted onto them.
 *
 * Loss normalisation under gradient accumulation (verl's "global token" normalisation, notes §4.4): an optimizer
 * step minimises  Σ_step m·NLL / Σ_step m  over every masked token of every micro-batch of the step, not the mean of
 * per-micro-batch means. Each micro-batch's backward is therefore seeded with d/dlogprob = −m / W_step
 * (`accumulationGrad`), so k micro-batches give exactly the gradient of one big batch, and a long trajectory weighs
 * in proportion to its assistant tokens wherever the packer happened to put it.
 */
import type { ModelInput } from '../model/index.ts';

/** One tokenized training document: `lossMask[i] = 1` when token i is one the model should learn to produce. */
export interface SftDocument {
  tokens: Int32Array;
  lossMask: Uint8Array;
}

/** A packed row: the indices of its documents (in row order) and the tokens they fill. */
export interface PackedRow {
  docs: number[];
  length: number;
}

export interface MicroBatch {
  /** Indices into the row list, in block order. */
  rows: number[];
  /** T of the [B, T] block: the longest row's length. */
  seqLen: number;
}

export interface MicroBatchInput extends ModelInput {
  tokens: Int32Array;
  batch: number;
  docIds: Int32Array;
  targets: Int32Array;
  lossMask: Float32Array;
  /** 1 where the target is an assistant token (the document's mask), else 0. */
  assistantMask: Float32Array;
  /** Σ assistantMask. */
  assistantWeight: number;
  /** Σ lossMask: the assistant tokens this micro-batch trains on, plus `contextWeight` × the other targets. */
  weightSum: number;
  /** Non-padding tokens. */
  realTokens: number;
}

/** First-fit-decreasing packing of documents (given by length) into rows of at most `rowLen` tokens. */
export function packDocuments(lengths: readonly number[], rowLen: number): PackedRow[] {
  if (!(Number.isInteger(rowLen) && rowLen >= 2)) throw new RangeError(`packing: rowLen must be an integer ≥ 2, got ${rowLen}`);
  lengths.forEach((len, i) => {
    if (!(Number.isInteger(len) && len >= 1)) throw new RangeError(`packing: document ${i} has length ${len}; lengths must be integers ≥ 1`);
    if (len > rowLen) throw new RangeError(`packing: document ${i} has ${len} tokens, more than a row holds (${rowLen}); truncate or drop it first`);
  });
  const order = lengths.map((_, i) => i).sort((a, b) => lengths[b] - lengths[a] || a - b);
  const rows: PackedRow[] = [];
  for (const doc of order) {
    const len = lengths[doc];
    let row = rows.find((r) => r.length + len <= rowLen);
    if (!row) {
      row = { docs: [], length: 0 };
      rows.push(row);
    }
    row.docs.push(doc);
    row.length += len;
  }
  return rows;
}

/**
 * Splits `rowIds` (indices into `rows`) into micro-batches of at most `tokenBudget` tokens counted with padding
 * (B·T). Rows are taken longest first, so each block pads little; the result is deterministic.
 */
export function microBatches(rows: readonly PackedRow[], rowIds: readonly number[], tokenBudget: number): MicroBatch[] {
  if (!(Number.isInteger(tokenBudget) && tokenBudget >= 1)) throw new RangeError(`packing: tokenBudget must be an integer ≥ 1, got ${tokenBudget}`);
  const sorted = [...rowIds].sort((a, b) => rows[b].length - rows[a].length || a - b);
  const out: MicroBatch[] = [];
  let current: MicroBatch | null = null;
  for (const id of sorted) {
    const len = rows[id].length;
    if (len > tokenBudget) throw new RangeError(`packing: row ${id} has ${len} tokens, more than the micro-batch token budget ${tokenBudget}`);
    if (current && (current.rows.length + 1) * current.seqLen <= tokenBudget) {
      current.rows.push(id);
    } else {
      current = { rows: [id], seqLen: len };
      out.push(current);
    }
  }
  return out;
}

/**
 * The model input of one micro-batch (padding: `padId` tokens, no target, no weight, their own document id).
 * `contextWeight` (0–1) is the loss weight of targets outside the assistant's tokens (system, user, tool): 0 trains
 * the policy only; > 0 also models the conversation around it, which gives a from-scratch model many more examples
 * of ids being repeated from earlier in the context for the same forward/backward cost.
 */
export function microBatchInput(docs: readonly SftDocument[], rows: readonly PackedRow[], mb: MicroBatch, padId = 0, contextWeight = 0): MicroBatchInput {
  if (!(contextWeight >= 0 && contextWeight <= 1)) throw new RangeError(`packing: contextWeight must be in [0, 1], got ${contextWeight}`);
  const B = mb.rows.length, T = mb.seqLen;
  const tokens = new Int32Array(B * T).fill(padId);
  const docIds = new Int32Array(B * T);
  const targets = new Int32Array(B * T).fill(-1);
  const lossMask = new Float32Array(B * T);
  const assistantMask = new Float32Array(B * T);
  let weightSum = 0, assistantWeight = 0, realTokens = 0;
  mb.rows.forEach((rowId, b) => {
    const row = rows[rowId];
    if (row.length > T) throw new RangeError(`packing: row ${rowId} (${row.length} tokens) does not fit a block of width ${T}`);
    let at = b * T;
    row.docs.forEach((d, k) => {
      const { tokens: t, lossMask: m } = docs[d];
      if (t.length !== m.length) throw new RangeError(`packing: document ${d} has ${t.length} tokens but ${m.length} mask entries`);
      for (let j = 0; j < t.length; j++) {
        tokens[at + j] = t[j];
        docIds[at + j] = k;
        if (j + 1 < t.length) {
          targets[at + j] = t[j + 1];
          const w = m[j + 1] ? 1 : contextWeight;
          lossMask[at + j] = w;
          assistantMask[at + j] = m[j + 1] ? 1 : 0;
          weightSum += w;
          assistantWeight += assistantMask[at + j];
        }
      }
      at += t.length;
      realTokens += t.length;
    });
    for (let j = at; j < (b + 1) * T; j++) docIds[j] = row.docs.length;
  });
  return { tokens, batch: B, docIds, targets, lossMask, assistantMask, assistantWeight, weightSum, realTokens };
}

/** Σ of the loss weights a set of documents contributes (mask entries after each document's first token). */
export function documentWeight(doc: SftDocument): number {
  let w = 0;
  for (let j = 1; j < doc.lossMask.length; j++) w += doc.lossMask[j];
  return w;
}

/**
 * The backward seed of one micro-batch under global normalisation: d(Σ_step m·NLL / W_step)/d logprob = −m / W_step.
 */
export function accumulationGrad(lossMask: Float32Array, stepWeight: number): Float32Array {
  if (!(stepWeight > 0)) throw new RangeError(`packing: the step's total loss weight must be > 0, got ${stepWeight}`);
  const out = new Float32Array(lossMask.length);
  for (let i = 0; i < lossMask.length; i++) out[i] = -lossMask[i] / stepWeight;
  return out;
}
