/**
 * Supervised fine-tuning (warm start before GRPO): next-token loss on the assistant tokens of expert trajectories.
 *
 * One optimizer step, the whole logic:
 *   rows of the step  = a slice of this epoch's row order (rows = whole documents packed first-fit-decreasing;
 *                       the row order is a seeded shuffle per epoch, a pure function of (seed, epoch))
 *   micro-batches     = the step's rows grouped by token budget (B·T ≤ microBatchTokens)
 *   W                 = Σ loss mask over the whole step
 *   per micro-batch:  forward, backward seeded with −m/W        (so the step minimises Σ m·NLL / W exactly)
 *   clip the global grad norm; lr ← schedule(step); AdamW update; zero the gradients
 *   (a non-finite grad norm skips the update, as verl does, and is counted)
 * Every `evalEvery` steps and at the end: held-out loss Σ m·NLL / Σ m. Every `checkpointEvery` steps and at the end:
 * a checkpoint (model, AdamW moments and step, trainer state); resuming from it continues bit-identically.
 * Metrics go to `OUT/metrics.jsonl`, one JSON object per step (`type: 'train'`) or evaluation (`type: 'eval'`).
 *
 * Given a `backend` (a `TrainingBackend`, backend.ts) instead of a `model`, the same steps run through the seam:
 * per micro-batch a `forward_backward` with loss `cross_entropy` and weights m/W, per step an `optim_step` with the
 * same AdamW parameters, the schedule's learning rate and the clip; checkpoints through the backend's save, the
 * held-out loss through `forward` (sft-backend.ts). Without a backend nothing changes.
 */
import { createHash } from 'node:crypto';
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Presets, SingleBar } from 'cli-progress';
import { z } from 'zod';
import { clipGradNorm, globalNorm, Mulberry32Rng, type AdamW } from '../engine/index.ts';
import type { GptOssModel } from '../model/index.ts';
import { saveModel } from '../model/checkpoint/index.ts';
import type { TrainingBackend } from './backend.ts';
import { accumulationGrad, documentWeight, microBatches, microBatchInput, packDocuments, type PackedRow, type SftDocument } from './packing.ts';
import { lrAt, type LrSchedule } from './schedule.ts';
import { listCheckpoints, readSftCheckpoint, trainableNames, writeCheckpoint, type LoadedSftCheckpoint, type SftTrainerState } from './sft-checkpoint.ts';
import { backendSftStep, evaluateSftViaBackend, readBackendCheckpoint, writeBackendCheckpoint, type LoadedBackendCheckpoint } from './sft-backend.ts';

export const SftConfigSchema = z
  .object({
    /** Seeds the eval split and the per-epoch row order. */
    seed: z.number().int().min(0).default(0),
    /** Packed row length = the longest document (tokens). */
    seqLen: z.number().int().min(2).default(512),
    /** Token budget of one micro-batch, counted with padding (B·T). */
    microBatchTokens: z.number().int().min(2).default(2048),
    /** Packed rows per optimizer step (the last step of an epoch may hold fewer). */
    rowsPerStep: z.number().int().min(1).default(4),
    /** Total optimizer steps (cycling through epochs); default: epochs × steps per epoch. */
    steps: z.number().int().min(1).optional(),
    /**
     * Wall-time budget: the run ends (checkpoint, eval, OUT/model) after the step that brings its summed step time —
     * data, forward, backward, update, resumed steps included; evals and checkpoints not — to this many seconds. The
     * schedule still spans `steps`, so a budgeted baseline trains exactly as the unbudgeted run would up to there.
     */
    maxWallSeconds: z.number().positive().optional(),
    epochs: z.number().int().min(1).default(1),
    lr: z.number().positive().default(3e-3),
    warmupSteps: z.number().int().min(0).default(0),
    minLrRatio: z.number().min(0).max(1).default(0.1),
    schedule: z.enum(['cosine', 'linear', 'constant']).default('cosine'),
    beta1: z.number().min(0).lt(1).default(0.9),
    beta2: z.number().min(0).lt(1).default(0.95),
    eps: z.number().positive().default(1e-8),
    weightDecay: z.number().min(0).default(0.01),
    /** Max global grad norm (0 = no clipping; the norm is still logged). */
    gradClip: z.number().min(0).default(1),
    /** Held-out share of the documents when no separate eval set is given. */
    evalFraction: z.number().min(0).max(0.5).default(0),
    /** Evaluate every N steps (0 = only at the end). */
    evalEvery: z.number().int().min(0).default(0),
    /** Checkpoint every N steps (0 = only at the end). */
    checkpointEvery: z.number().int().min(0).default(0),
    keepCheckpoints: z.number().int().min(1).default(2),
    /**
     * Loss weight of the non-assistant targets (system prompt, user, tool results), 0–1. 0 (default) is plain
     * policy SFT. > 0 also trains the model on the conversation around its turns at no extra compute; the logged
     * `loss` stays the assistant tokens' mean NLL, `contextLoss` is the other targets'.
     */
    contextLossWeight: z.number().min(0).max(1).default(0),
    /** Token id used for padding (never a target). */
    padId: z.number().int().min(0).default(0),
  })
  .strict()
  .superRefine((c, ctx) => {
    if (c.microBatchTokens < c.seqLen) {
      ctx.addIssue({ code: 'custom', path: ['microBatchTokens'], message: `microBatchTokens (${c.microBatchTokens}) must be ≥ seqLen (${c.seqLen}) so one full row fits a micro-batch` });
    }
  });

export type SftConfigInput = z.input<typeof SftConfigSchema>;
export type SftConfig = z.output<typeof SftConfigSchema>;

/** Config keys that must match on resume (anything that changes the computation of steps already taken). */
const RESUME_KEYS = ['seed', 'seqLen', 'microBatchTokens', 'rowsPerStep', 'lr', 'warmupSteps', 'minLrRatio', 'schedule', 'beta1', 'beta2', 'eps',
  'weightDecay', 'gradClip', 'evalFraction', 'padId', 'contextLossWeight'] as const;
/** Keys added after checkpoints were first written: a checkpoint without one was made with this value. */
const RESUME_DEFAULTS: Partial<Record<(typeof RESUME_KEYS)[number], unknown>> = { contextLossWeight: 0 };

export function parseSftConfig(input: unknown): SftConfig {
  const r = SftConfigSchema.safeParse(input ?? {});
  if (!r.success) throw new Error(`invalid SFT config:\n${z.prettifyError(r.error)}`);
  return r.data;
}

export interface SftStepMetrics {
  type: 'train';
  /** Optimizer steps completed (1-based index of this step). */
  step: number;
  epoch: number;
  /** Mean NLL of the assistant tokens. */
  loss: number;
  /** Mean NLL of the other targets, when `contextLossWeight` > 0. */
  contextLoss?: number;
  lr: number;
  /** Before clipping. On a backend: the `grad_norm` its optim_step reports, NaN (null in the file) when it reports none. */
  gradNorm: number;
  /** True when the update was skipped for a non-finite gradient norm. */
  skipped: boolean;
  tokens: number;
  lossTokens: number;
  paddedTokens: number;
  microBatches: number;
  tokensSeen: number;
  tokensPerSec: number;
  /** In process: the model's peak working memory; 0 on a backend. */
  peakBytes: number;
  /** Seconds spent building the step's documents (streamed sources). */
  dataSeconds?: number;
  /** Wall seconds of the whole step (data included); absent in rows written before it was logged. */
  seconds?: number;
}

export interface SftEvalMetrics {
  type: 'eval';
  step: number;
  evalLoss: number;
  evalTokens: number;
}

export interface SftRunOptions {
  /** The model trained in process; or give `backend`. */
  model?: GptOssModel;
  /**
   * A training backend to train through instead (sft-backend.ts): its weights are the policy's, its optimizer the
   * run's. The run holds no weights then: no OUT/model is written (the final checkpoint is the backend's).
   */
  backend?: TrainingBackend;
  /** With a backend: the vocabulary size the documents' token ids are checked against (default: not checked here). */
  vocabSize?: number;
  /** Saved as OUT/tokenizer.json when a fresh run starts (a resumed run leaves it alone). */
  tokenizer?: { save(path: string): void };
  /**
   * Documents (an eval share is split off by `evalFraction`), explicit train / eval sets, or a step source (a stream;
   * `config.steps` is then required) with optional eval documents.
   */
  data: readonly SftDocument[] | { train: readonly SftDocument[]; eval?: readonly SftDocument[] } | { source: SftSource; eval?: readonly SftDocument[] };
  outDir: string;
  /** true: continue from the newest checkpoint in OUT/checkpoints (fresh start when there is none); a path: that one. */
  resume?: boolean | string;
  /** No progress bar (tests, logs). */
  quiet?: boolean;
  /** Stop after this many completed steps (with a checkpoint), as if preempted; the schedule still spans all steps. */
  stopAfterStep?: number;
  /** Aborting checkpoints and stops after the current step. */
  signal?: AbortSignal;
  onStep?: (m: SftStepMetrics) => void;
  onEval?: (m: SftEvalMetrics) => void;
}

export interface SftResult {
  /** Steps completed in total (including those before a resume). */
  steps: number;
  totalSteps: number;
  stepsPerEpoch: number;
  /** The steps run in this call. */
  history: SftStepMetrics[];
  evals: SftEvalMetrics[];
  finalLoss: number | null;
  finalEvalLoss: number | null;
  tokensSeen: number;
  skippedSteps: number;
  resumedFromStep: number | null;
  /** The last checkpoint written. */
  checkpointDir: string | null;
  /** OUT/model (plain HF-style checkpoint), written when training finished all steps in process (null on a backend). */
  modelDir: string | null;
  stoppedEarly: boolean;
  /** The run ended on `maxWallSeconds` (a finished run: OUT/model is written, `stoppedEarly` is false). */
  stoppedByBudget: boolean;
  /** Summed step seconds, resumed steps included. */
  trainSeconds: number;
  rows: number;
  evalDocuments: number;
}

/** SHA-256 over the documents' tokens and masks. */
export function documentsFingerprint(sets: readonly (readonly SftDocument[])[]): string {
  const h = createHash('sha256');
  for (const docs of sets) {
    h.update(`set:${docs.length};`);
    for (const d of docs) {
      h.update(`doc:${d.tokens.length};`);
      h.update(new Uint8Array(d.tokens.buffer, d.tokens.byteOffset, d.tokens.byteLength));
      h.update(d.lossMask);
    }
  }
  return h.digest('hex');
}

/** A seeded Fisher–Yates permutation of 0..n−1. */
export function seededPermutation(n: number, seed: number): number[] {
  const rng = new Mulberry32Rng(seed);
  const p = Array.from({ length: n }, (_, i) => i);
  for (let i = n - 1; i > 0; i--) {
    const j = rng.int(i + 1);
    [p[i], p[j]] = [p[j], p[i]];
  }
  return p;
}

function mixSeed(seed: number, salt: number): number {
  return (Math.imul(seed ^ 0x9e3779b9, 0x85ebca6b) + Math.imul(salt + 1, 0xc2b2ae35)) >>> 0;
}

/** Splits documents into train / eval by a seeded shuffle (eval gets round(n·fraction), at least 1 when fraction > 0). */
export function splitEval(docs: readonly SftDocument[], fraction: number, seed: number): { train: SftDocument[]; eval: SftDocument[] } {
  if (fraction <= 0 || docs.length < 2) return { train: [...docs], eval: [] };
  const k = Math.min(docs.length - 1, Math.max(1, Math.round(docs.length * fraction)));
  const perm = seededPermutation(docs.length, mixSeed(seed, 0x5eed));
  const evalIdx = new Set(perm.slice(0, k));
  return { train: docs.filter((_, i) => !evalIdx.has(i)), eval: docs.filter((_, i) => evalIdx.has(i)) };
}

/** The documents and packed rows of one optimizer step (the step trains on every row). */
export interface SftStepData {
  docs: readonly SftDocument[];
  rows: readonly PackedRow[];
}

/**
 * Where the steps of an SFT run come from: a fixed corpus (`SftPlan`, epochs of shuffled rows) or a stream that builds
 * each step from its index alone (e.g. src/recipes/retail/stream.ts). Either way step s is a pure function of s, so a
 * resumed run needs only the step count. `fingerprint` identifies the data for resume checks.
 */
export interface SftSource {
  readonly stepsPerEpoch: number;
  readonly fingerprint: string;
  epochOf(step: number): number;
  stepData(step: number): SftStepData | Promise<SftStepData>;
}

/** The deterministic data plan of a fixed corpus: rows, and which rows form optimizer step s. */
export class SftPlan implements SftSource {
  readonly fingerprint: string;
  readonly rows: PackedRow[];
  readonly stepsPerEpoch: number;
  private cachedEpoch = -1;
  private cachedOrder: number[] = [];

  constructor(readonly docs: readonly SftDocument[], readonly config: SftConfig) {
    if (docs.length === 0) throw new Error('sft: no training documents');
    this.fingerprint = documentsFingerprint([docs]);
    this.rows = packDocuments(docs.map((d) => d.tokens.length), config.seqLen);
    this.stepsPerEpoch = Math.ceil(this.rows.length / config.rowsPerStep);
  }

  epochOf(step: number): number {
    return Math.floor(step / this.stepsPerEpoch);
  }

  /** Row ids of optimizer step `step` (0-based). */
  stepRows(step: number): number[] {
    const epoch = this.epochOf(step);
    if (epoch !== this.cachedEpoch) {
      this.cachedOrder = seededPermutation(this.rows.length, mixSeed(this.config.seed, epoch));
      this.cachedEpoch = epoch;
    }
    const k = step % this.stepsPerEpoch;
    return this.cachedOrder.slice(k * this.config.rowsPerStep, (k + 1) * this.config.rowsPerStep);
  }

  stepData(step: number): SftStepData {
    return { docs: this.docs, rows: this.stepRows(step).map((i) => this.rows[i]) };
  }
}

/** Loss Σ m·NLL / Σ m of documents under the model (no gradients). */
export function evaluateSft(model: GptOssModel, docs: readonly SftDocument[], config: Pick<SftConfig, 'seqLen' | 'microBatchTokens' | 'padId'>): { loss: number; tokens: number } {
  if (docs.length === 0) return { loss: NaN, tokens: 0 };
  const rows = packDocuments(docs.map((d) => d.tokens.length), config.seqLen);
  let nll = 0, weight = 0;
  for (const mb of microBatches(rows, rows.map((_, i) => i), config.microBatchTokens)) {
    const input = microBatchInput(docs, rows, mb, config.padId);
    const r = model.logprobs(input);
    nll += r.loss * r.tokenWeight;
    weight += r.tokenWeight;
  }
  return { loss: weight > 0 ? nll / weight : NaN, tokens: weight };
}

function checkDocuments(docs: readonly SftDocument[], vocab: number, seqLen: number, which: string): void {
  docs.forEach((d, i) => {
    if (d.tokens.length !== d.lossMask.length) throw new Error(`sft: ${which} document ${i} has ${d.tokens.length} tokens but ${d.lossMask.length} mask entries`);
    if (d.tokens.length > seqLen) throw new Error(`sft: ${which} document ${i} has ${d.tokens.length} tokens, more than seqLen ${seqLen}; truncate it (buildSftDocuments maxSeqLen) or raise seqLen`);
    for (const t of d.tokens) if (!(t >= 0 && t < vocab)) throw new Error(`sft: ${which} document ${i} holds token id ${t}, outside the model's vocabulary [0, ${vocab}) — tokenizer and model do not match`);
    if (documentWeight(d) === 0) throw new Error(`sft: ${which} document ${i} has no loss tokens (no assistant token after its first token); drop it (buildSftDocuments does)`);
  });
}

/** Runs SFT. See the file comment for the step; `SftConfigSchema` for the knobs. */
export async function runSft(configInput: SftConfigInput | SftConfig, options: SftRunOptions): Promise<SftResult> {
  const config = parseSftConfig(configInput);
  const { outDir, backend } = options;
  if (backend && options.model) throw new Error('sft: give either a model (training in process) or a backend (training through it), not both');
  if (!backend && !options.model) throw new Error('sft: no model and no backend to train');
  if (backend && options.vocabSize !== undefined && !(Number.isInteger(options.vocabSize) && options.vocabSize >= 1)) throw new Error(`sft: vocabSize must be a positive integer, got ${options.vocabSize}`);
  // In process the model is always there; on a backend, `model` is undefined and never read.
  const model = options.model as GptOssModel;
  const vocab = backend ? options.vocabSize ?? Number.MAX_SAFE_INTEGER : model.config.vocab_size;
  if (!backend && model.gradients().size === 0) throw new Error('sft: the model has no gradient buffers (construct it with grads: true)');
  if (!backend && config.padId >= model.config.vocab_size) throw new Error(`sft: padId ${config.padId} is outside the model's vocabulary (${model.config.vocab_size})`);
  const data = options.data;
  const sets = Array.isArray(data)
    ? splitEval(data as readonly SftDocument[], config.evalFraction, config.seed)
    : { train: 'train' in data ? [...data.train] : [], eval: [...((data as { eval?: readonly SftDocument[] }).eval ?? [])] };
  const streamed = !Array.isArray(data) && 'source' in data;
  if (!streamed) checkDocuments(sets.train, vocab, config.seqLen, 'train');
  checkDocuments(sets.eval, vocab, config.seqLen, 'eval');
  const plan: SftSource = streamed ? (data as { source: SftSource }).source : new SftPlan(sets.train, config);
  if (streamed && config.steps === undefined) throw new Error('sft: a streamed data source has no epochs; set config.steps');
  const totalSteps = config.steps ?? config.epochs * plan.stepsPerEpoch;
  const schedule: LrSchedule = { lr: config.lr, warmupSteps: config.warmupSteps, totalSteps, minLrRatio: config.minLrRatio, kind: config.schedule };
  if (options.stopAfterStep !== undefined && !(Number.isInteger(options.stopAfterStep) && options.stopAfterStep >= 1)) {
    throw new Error(`sft: stopAfterStep must be an integer ≥ 1, got ${options.stopAfterStep}`);
  }
  const dataFingerprint = streamed ? createHash('sha256').update(`${plan.fingerprint};eval:${documentsFingerprint([sets.eval])}`).digest('hex') : documentsFingerprint([sets.train, sets.eval]);
  const ckptRoot = join(outDir, 'checkpoints');
  const metricsPath = join(outDir, 'metrics.jsonl');

  // Resume: read and validate everything before touching the model, the optimizer or any file.
  const existing = listCheckpoints(ckptRoot);
  const resumeDir = typeof options.resume === 'string' ? options.resume : options.resume ? existing.at(-1)?.dir : undefined;
  if (!options.resume && existing.length > 0) {
    throw new Error(`sft: ${ckptRoot} already holds checkpoints (newest ${existing.at(-1)!.dir}); pass resume ('longrun sft --resume') to continue, or use another output folder`);
  }
  const loaded: LoadedSftCheckpoint | LoadedBackendCheckpoint | null = resumeDir === undefined ? null : backend ? readBackendCheckpoint(resumeDir) : readSftCheckpoint(resumeDir, model);
  if (loaded) {
    const saved = (k: (typeof RESUME_KEYS)[number]) => loaded.state.config[k] ?? RESUME_DEFAULTS[k];
    const diffs = RESUME_KEYS.filter((k) => JSON.stringify(saved(k)) !== JSON.stringify(config[k]));
    if (diffs.length > 0) {
      throw new Error(`cannot resume from checkpoint ${loaded.dir}: config differs in ${diffs.map((k) => `${k} (${JSON.stringify(saved(k))} → ${JSON.stringify(config[k])})`).join(', ')}. Nothing was changed.`);
    }
    if (loaded.state.dataFingerprint !== dataFingerprint) {
      throw new Error(`cannot resume from checkpoint ${loaded.dir}: the training data differ from the checkpoint's (tokenizer, trajectories or data options changed). Nothing was changed.`);
    }
    if (loaded.state.step > totalSteps) throw new Error(`cannot resume from checkpoint ${loaded.dir}: it is at step ${loaded.state.step}, past the ${totalSteps} steps configured. Nothing was changed.`);
  }

  mkdirSync(outDir, { recursive: true });
  const opt: AdamW | null = backend ? null : model.optimizer({ lr: lrAt(0, schedule), beta1: config.beta1, beta2: config.beta2, eps: config.eps, weightDecay: config.weightDecay });
  const names = backend ? [] : trainableNames(model);
  const grads = backend ? [] : [...model.gradients().values()];
  let step = 0, tokensSeen = 0, skippedSteps = 0;
  let lastLoss: number | null = null;
  let lastEvalStep = -1;
  /** Summed step seconds (resumed rows included): what `maxWallSeconds` is measured against. */
  let trainSeconds = 0;
  if (loaded) {
    if ('restore' in loaded) await loaded.restore(backend!);
    else loaded.apply(model, opt!);
    step = loaded.state.step;
    tokensSeen = loaded.state.tokensSeen;
    skippedSteps = loaded.state.skippedSteps;
    lastLoss = loaded.state.lastLoss;
    // Metrics logged after the checkpoint (a crashed run) would be repeated: keep the lines up to its step.
    if (existsSync(metricsPath)) {
      const kept = readFileSync(metricsPath, 'utf8').split('\n').filter((line) => {
        if (line.trim() === '') return false;
        try {
          const m = JSON.parse(line) as { step?: number; type?: string; seconds?: number; tokens?: number; tokensPerSec?: number };
          if (m.type === 'eval' && m.step === step) lastEvalStep = step;
          if (m.step! <= step && m.type === 'train') trainSeconds += m.seconds ?? (m.tokens && m.tokensPerSec ? m.tokens / m.tokensPerSec : 0);
          return m.step! <= step;
        } catch {
          return false;
        }
      });
      writeFileSync(metricsPath, kept.map((l) => l + '\n').join(''));
    }
  } else {
    writeFileSync(metricsPath, '');
    // Saved up front so a resumed run (e.g. `longrun sft --resume`) can read back the very same tokenizer.
    options.tokenizer?.save(join(outDir, 'tokenizer.json'));
  }
  if (!backend) model.zeroGrad();

  const history: SftStepMetrics[] = [];
  const evals: SftEvalMetrics[] = [];
  let checkpointDir: string | null = loaded?.dir ?? null;
  const stateNow = (): SftTrainerState => ({
    format: 'longrun-sft-checkpoint', version: 1, step, totalSteps, optimizerStep: opt ? opt.step : step - skippedSteps, tokensSeen, skippedSteps, dataFingerprint,
    config: config as unknown as Record<string, unknown>, trainableNames: names, lastLoss, ...(backend ? { backend: true as const } : {}),
  });
  const log = (m: SftStepMetrics | SftEvalMetrics) => appendFileSync(metricsPath, JSON.stringify(m) + '\n');
  const runEval = async () => {
    if (sets.eval.length === 0) return;
    const r = backend ? await evaluateSftViaBackend(backend, sets.eval, config) : evaluateSft(model, sets.eval, config);
    const m: SftEvalMetrics = { type: 'eval', step, evalLoss: r.loss, evalTokens: r.tokens };
    lastEvalStep = step;
    evals.push(m);
    log(m);
    options.onEval?.(m);
  };

  const bar = options.quiet ? null : new SingleBar({
    format: 'sft [{bar}] {value}/{total} steps | loss {loss} | lr {lr} | {tps} tok/s | eta {eta_formatted}', hideCursor: true,
  }, Presets.shades_classic);
  bar?.start(totalSteps, step, { loss: lastLoss?.toFixed(4) ?? '-', lr: '-', tps: '-' });
  const stopAt = Math.min(totalSteps, options.stopAfterStep ?? totalSteps);
  const budgetSpent = () => config.maxWallSeconds !== undefined && trainSeconds >= config.maxWallSeconds;
  let stoppedEarly = false;
  let stoppedByBudget = budgetSpent();
  try {
    while (step < stopAt && !stoppedByBudget) {
      const t0 = performance.now();
      const data = await plan.stepData(step);
      const dataSeconds = (performance.now() - t0) / 1000;
      if (streamed) checkDocuments(data.rows.flatMap((r) => r.docs.map((i) => data.docs[i])), vocab, config.seqLen, `step ${step + 1}`);
      const mbs = microBatches(data.rows, data.rows.map((_, i) => i), config.microBatchTokens);
      const inputs = mbs.map((mb) => microBatchInput(data.docs, data.rows, mb, config.padId, config.contextLossWeight));
      let W = 0, A = 0, tokens = 0, padded = 0, nll = 0, contextNll = 0, contextCount = 0, peakBytes = 0;
      for (const x of inputs) { W += x.weightSum; A += x.assistantWeight; tokens += x.realTokens; padded += x.tokens.length; }
      const lr = lrAt(step, schedule);
      let gradNorm: number, skipped: boolean;
      if (backend) {
        const r = await backendSftStep(backend, data.docs, data.rows, mbs, {
          stepWeight: W, contextWeight: config.contextLossWeight, lr, beta1: config.beta1, beta2: config.beta2, eps: config.eps, weightDecay: config.weightDecay, gradClip: config.gradClip,
        });
        ({ nll, contextNll, contextCount, gradNorm, skipped } = r);
        if (skipped) skippedSteps++;
      } else {
        for (const x of inputs) {
          const r = model.forward(x);
          for (let i = 0; i < x.targets.length; i++) {
            if (x.targets[i] < 0) continue;
            if (x.assistantMask[i]) nll -= r.logprobs[i];
            else if (x.lossMask[i] > 0) { contextNll -= r.logprobs[i]; contextCount++; }
          }
          model.backward(accumulationGrad(x.lossMask, W));
          peakBytes = Math.max(peakBytes, model.lastMemory?.peakBytes ?? 0);
        }
        gradNorm = config.gradClip > 0 ? clipGradNorm(grads, config.gradClip) : globalNorm(grads);
        skipped = !Number.isFinite(gradNorm);
        if (skipped) skippedSteps++;
        else {
          opt!.lr = lr;
          opt!.update();
        }
        model.zeroGrad();
      }
      const loss = nll / A;
      const epoch = plan.epochOf(step);
      step++;
      tokensSeen += tokens;
      lastLoss = loss;
      const seconds = (performance.now() - t0) / 1000;
      trainSeconds += seconds;
      const m: SftStepMetrics = {
        type: 'train', step, epoch, loss, ...(contextCount > 0 ? { contextLoss: contextNll / contextCount } : {}), lr, gradNorm, skipped, tokens, lossTokens: A, paddedTokens: padded, microBatches: inputs.length, tokensSeen,
        tokensPerSec: seconds > 0 ? tokens / seconds : 0, peakBytes, ...(streamed ? { dataSeconds } : {}), seconds,
      };
      history.push(m);
      log(m);
      options.onStep?.(m);
      bar?.update(step, { loss: loss.toFixed(4), lr: lr.toExponential(2), tps: m.tokensPerSec.toFixed(0) });
      const aborted = options.signal?.aborted ?? false;
      stoppedByBudget = step < totalSteps && budgetSpent();
      const last = step === stopAt || aborted || stoppedByBudget;
      if ((config.evalEvery > 0 && step % config.evalEvery === 0) || step === totalSteps || stoppedByBudget) await runEval();
      if ((config.checkpointEvery > 0 && step % config.checkpointEvery === 0) || last) {
        checkpointDir = backend ? await writeBackendCheckpoint(ckptRoot, backend, stateNow(), config.keepCheckpoints) : writeCheckpoint(ckptRoot, model, opt!, stateNow(), config.keepCheckpoints);
      }
      if (aborted) {
        stoppedEarly = step < totalSteps;
        break;
      }
      // Let signal handlers and I/O run between steps.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    if (step < totalSteps && !stoppedByBudget) stoppedEarly = true;
  } finally {
    bar?.stop();
    opt?.dispose();
  }
  let modelDir: string | null = null;
  if (step === totalSteps || stoppedByBudget) {
    if (!backend) {
      modelDir = join(outDir, 'model');
      saveModel(modelDir, model);
    }
    if (lastEvalStep !== step) await runEval();
  }
  return {
    steps: step, totalSteps, stepsPerEpoch: plan.stepsPerEpoch, history, evals, finalLoss: lastLoss, finalEvalLoss: evals.at(-1)?.evalLoss ?? null,
    tokensSeen, skippedSteps, resumedFromStep: loaded?.state.step ?? null, checkpointDir, modelDir, stoppedEarly, stoppedByBudget, trainSeconds, rows: plan instanceof SftPlan ? plan.rows.length : step * config.rowsPerStep,
    evalDocuments: sets.eval.length,
  };
}
