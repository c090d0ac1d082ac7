/**
 * Model input: a [B, T] batch, or packed rows holding several documents each. Everything is flattened into one
 * packed sequence of N = B·T tokens; a token attends only to earlier tokens of the same row and document (the
 * attention layer's document mask), and RoPE positions restart at 0 for every row and document unless given.
 * Window masks are evaluated on packed order, which equals position order inside a document.
 */
import type { AttentionMask } from '../attention/masks.ts';
import { andMasks, causalMask, documentMask, slidingWindowMask } from '../attention/masks.ts';

export interface ModelInput {
  /** N = B·T token ids, row-major. */
  tokens: Int32Array | readonly number[];
  /** Rows B (default 1); T = N / B. */
  batch?: number;
  /** Per token: document id within its row (packing); ids must not decrease along a row. */
  docIds?: Int32Array | readonly number[];
  /** Per token RoPE position; default: index within its row and document. */
  positions?: Int32Array | readonly number[];
  /** Per token target id (usually the next token), −1 = none. */
  targets?: Int32Array | readonly number[];
  /** Per token loss weight (0/1 mask or weights); default 1 where targets ≥ 0. */
  lossMask?: ArrayLike<number>;
}

export interface PackedBatch {
  tokens: Int32Array;
  n: number;
  batch: number;
  /** Non-decreasing sequence id over the packed order (a new id per row and per document). */
  seqIds: Int32Array;
  positions: Int32Array;
  targets: Int32Array;
  weights: Float32Array;
  numSequences: number;
}

function int32(name: string, x: Int32Array | readonly number[], n: number): Int32Array {
  if (x.length !== n) throw new RangeError(`model input: ${name} has ${x.length} entries, expected one per token (${n})`);
  return x instanceof Int32Array ? x : Int32Array.from(x);
}

export function packBatch(input: ModelInput): PackedBatch {
  const tokens = input.tokens instanceof Int32Array ? input.tokens : Int32Array.from(input.tokens);
  const n = tokens.length;
  if (n === 0) throw new RangeError('model input: no tokens');
  const batch = input.batch ?? 1;
  if (!Number.isInteger(batch) || batch < 1 || n % batch !== 0) throw new RangeError(`model input: ${n} tokens do not split into ${batch} equal rows`);
  const T = n / batch;
  const docs = input.docIds ? int32('docIds', input.docIds, n) : null;
  const seqIds = new Int32Array(n);
  let id = -1;
  for (let i = 0; i < n; i++) {
    const newRow = i % T === 0;
    if (docs && !newRow && docs[i] < docs[i - 1]) throw new RangeError(`model input: docIds decrease at token ${i}; documents must be contiguous`);
    if (newRow || (docs && docs[i] !== docs[i - 1])) id++;
    seqIds[i] = id;
  }
  let positions: Int32Array;
  if (input.positions) {
    positions = int32('positions', input.positions, n);
    for (let i = 0; i < n; i++) if (!(positions[i] >= 0)) throw new RangeError(`model input: positions[${i}] = ${positions[i]} must be ≥ 0`);
  } else {
    positions = new Int32Array(n);
    for (let i = 1; i < n; i++) positions[i] = seqIds[i] === seqIds[i - 1] ? positions[i - 1] + 1 : 0;
  }
  const targets = input.targets ? int32('targets', input.targets, n) : new Int32Array(n).fill(-1);
  const weights = new Float32Array(n);
  if (input.lossMask) {
    if (input.lossMask.length !== n) throw new RangeError(`model input: lossMask has ${input.lossMask.length} entries, expected ${n}`);
    for (let i = 0; i < n; i++) {
      weights[i] = input.lossMask[i];
      if (weights[i] !== 0 && targets[i] < 0) throw new RangeError(`model input: lossMask[${i}] is set but targets[${i}] is −1`);
    }
  } else {
    for (let i = 0; i < n; i++) weights[i] = targets[i] >= 0 ? 1 : 0;
  }
  return { tokens, n, batch, seqIds, positions, targets, weights, numSequences: id + 1 };
}

/** The attention mask of one layer type for a packed batch. */
export function layerMask(kind: 'sliding_attention' | 'full_attention', window: number, b: PackedBatch): AttentionMask {
  const base = kind === 'sliding_attention' ? slidingWindowMask(window) : causalMask();
  return b.numSequences > 1 ? andMasks(base, documentMask(b.seqIds)) : base;
}
