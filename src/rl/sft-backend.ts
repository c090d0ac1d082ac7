/**
 * SFT through the training-backend seam (backend.ts): the pieces `runSft` (sft.ts) uses when it is given a
 * `TrainingBackend` instead of an in-process model. One optimizer step:
 *   micro-batches   = the step's rows grouped by token budget, exactly as in process (packing.ts)
 *   W               = Σ loss mask over the whole step (assistant tokens, plus contextLossWeight × the others)
 *   per micro-batch: one `forward_backward` with loss `cross_entropy` over one datum per DOCUMENT of its rows —
 *                    input x = tokens[0..L−1), targets y = tokens[1..L), weights = (mask of y) / W
 *                    (Tinker's cross_entropy is −Σ w·lp, a sum: dividing by W makes it runSft's Σ m·NLL / W)
 *   one `optim_step` with the step's learning rate (the schedule's), AdamW β1/β2/ε/decoupled weight decay and the
 *   global-norm clip `gradClip` (0: none) — the seam carries all of them (AdamParams.gradClipNorm).
 * A document is one datum because a Tinker datum is one causal sequence: the rows' other documents must not be
 * attended to, which the in-process model's document mask ensures and a datum boundary ensures here. The position
 * after a document's last token has no target and is left out (it changes nothing before it).
 * The held-out loss is one `forward` per micro-batch with weights = the assistant mask: Σ m·NLL / Σ m.
 *
 * Checkpoints: `checkpoints/step-NNNNNNNN/` holds `trainer.json` (the SFT trainer state, `backend: true`) and
 * `sft-policy/`, the backend's `saveState` (for `TinkerBackend`, `tinker-state.json` with the `tinker://` path of
 * weights + optimizer state on the service). It is assembled in `checkpoints/.partial/step-NNNNNNNN/` and renamed
 * when complete, so the service-side name stays `step-NNNNNNNN-sft-policy` (distinct from GRPO's `…-policy`).
 */
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { Datum, TrainingBackend } from './backend.ts';
import { microBatches, packDocuments, type MicroBatch, type PackedRow, type SftDocument } from './packing.ts';
import { SftTrainerStateSchema, writeCheckpointFolderAsync, type SftTrainerState } from './sft-checkpoint.ts';

/** The folder of a backend SFT checkpoint that holds the backend's own state. */
export const SFT_BACKEND_STATE_DIR = 'sft-policy';

/** The datums of one micro-batch (one per document, in row order) and, per datum, its targets' masks. */
export function sftDatums(docs: readonly SftDocument[], rows: readonly PackedRow[], mb: MicroBatch, stepWeight: number, contextWeight: number):
  { datums: Datum[]; assistant: Uint8Array[] } {
  const datums: Datum[] = [];
  const assistant: Uint8Array[] = [];
  // The in-process loss mask holds the context weight as a float32 (packing.ts): the same value here.
  const cw = Math.fround(contextWeight);
  for (const rowId of mb.rows) {
    for (const d of rows[rowId].docs) {
      const { tokens: t, lossMask: m } = docs[d];
      const n = t.length - 1;
      const weights = new Float64Array(n);
      const a = new Uint8Array(n);
      for (let j = 0; j < n; j++) {
        a[j] = m[j + 1] ? 1 : 0;
        weights[j] = (a[j] ? 1 : cw) / stepWeight;
      }
      datums.push({ tokens: t.subarray(0, n), lossInputs: { target_tokens: t.subarray(1), weights } });
      assistant.push(a);
    }
  }
  return { datums, assistant };
}

export interface BackendSftStepResult {
  /** Σ −lp over the assistant targets, and over the other targets when they carry weight. */
  nll: number;
  contextNll: number;
  contextCount: number;
  gradNorm: number;
  skipped: boolean;
}

/** One SFT optimizer step on a backend (see the file comment). */
export async function backendSftStep(backend: TrainingBackend, docs: readonly SftDocument[], rows: readonly PackedRow[], mbs: readonly MicroBatch[],
  o: { stepWeight: number; contextWeight: number; lr: number; beta1: number; beta2: number; eps: number; weightDecay: number; gradClip: number }): Promise<BackendSftStepResult> {
  let nll = 0, contextNll = 0, contextCount = 0;
  for (const mb of mbs) {
    const { datums, assistant } = sftDatums(docs, rows, mb, o.stepWeight, o.contextWeight);
    const r = await backend.forwardBackward(datums, 'cross_entropy');
    r.logprobs.forEach((lp, k) => {
      const a = assistant[k];
      for (let j = 0; j < lp.length; j++) {
        if (a[j]) nll -= lp[j];
        else if (o.contextWeight > 0) { contextNll -= lp[j]; contextCount++; }
      }
    });
  }
  const step = await backend.optimStep({ learningRate: o.lr, beta1: o.beta1, beta2: o.beta2, eps: o.eps, weightDecay: o.weightDecay, gradClipNorm: o.gradClip });
  // A server that reports no gradient norm (the hosted service may not): NaN, which the metrics file writes as null.
  const gradNorm = typeof step.metrics.grad_norm === 'number' ? step.metrics.grad_norm : NaN;
  return { nll, contextNll, contextCount, gradNorm, skipped: step.metrics.skipped === 1 };
}

/** Held-out loss Σ m·NLL / Σ m of documents on a backend (`forward` only, no gradients). */
export async function evaluateSftViaBackend(backend: TrainingBackend, docs: readonly SftDocument[], config: { seqLen: number; microBatchTokens: number }): Promise<{ loss: number; tokens: number }> {
  if (docs.length === 0) return { loss: NaN, tokens: 0 };
  const rows = packDocuments(docs.map((d) => d.tokens.length), config.seqLen);
  let nll = 0, weight = 0;
  for (const mb of microBatches(rows, rows.map((_, i) => i), config.microBatchTokens)) {
    const { datums, assistant } = sftDatums(docs, rows, mb, 1, 0);
    const r = await backend.forward(datums, 'cross_entropy');
    r.logprobs.forEach((lp, k) => {
      for (let j = 0; j < lp.length; j++) if (assistant[k][j]) { nll -= lp[j]; weight++; }
    });
  }
  return { loss: weight > 0 ? nll / weight : NaN, tokens: weight };
}

/** Writes a backend SFT checkpoint (see the file comment) and keeps the newest `keep`. Returns its folder. */
export async function writeBackendCheckpoint(root: string, backend: TrainingBackend, state: SftTrainerState, keep: number): Promise<string> {
  return writeCheckpointFolderAsync(root, state.step, keep, async (tmp) => {
    await backend.saveState(join(tmp, SFT_BACKEND_STATE_DIR));
    writeFileSync(join(tmp, 'trainer.json'), JSON.stringify(state, null, 2) + '\n');
  });
}

/** A backend SFT checkpoint, read and checked before anything is changed; `restore` loads it into the backend. */
export interface LoadedBackendCheckpoint {
  dir: string;
  state: SftTrainerState;
  restore(backend: TrainingBackend): Promise<void>;
}

function fail(dir: string, what: string, cause?: unknown): never {
  throw new Error(`cannot resume from checkpoint ${dir}: ${what}. Nothing was changed.`, cause === undefined ? undefined : { cause });
}

export function readBackendCheckpoint(dir: string): LoadedBackendCheckpoint {
  if (!existsSync(dir)) fail(dir, 'the directory does not exist');
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(join(dir, 'trainer.json'), 'utf8'));
  } catch (error) {
    fail(dir, `trainer.json is missing or unreadable (${(error as Error).message}) — a partial checkpoint?`, error);
  }
  const parsed = SftTrainerStateSchema.safeParse(raw);
  if (!parsed.success) fail(dir, `trainer.json is not a valid SFT trainer state:\n${z.prettifyError(parsed.error)}`);
  const state = parsed.data;
  if (!state.backend) fail(dir, 'it was written by an in-process SFT run (its weights are in the folder); a run on a training backend resumes only from checkpoints written through a backend — run it without backend, or start afresh in another outDir');
  const stateDir = join(dir, SFT_BACKEND_STATE_DIR);
  if (!existsSync(stateDir)) fail(dir, `it has no ${SFT_BACKEND_STATE_DIR}/ (the backend's state)`);
  return { dir, state, restore: (backend) => backend.loadState(stateDir, { optimizer: true }) };
}
