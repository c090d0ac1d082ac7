/**
 * The training-backend seam: what a trainer asks of the engine that holds the weights, in the shape of the Tinker
 * API (Thinking Machines, https://tinker-docs.thinkingmachines.ai/ — "Training and sampling", "Loss functions"):
 * `forwardBackward` over datums with a named loss (gradients accumulate), `optimStep` with Adam parameters (applies
 * and clears them), `sample` with per-token log-probs, and weights saved and loaded by name. The client owns the
 * data, the rollouts and the RL loop; the backend owns forward, backward, the optimizer and sampling, in process
 * (`GptOssBackend`, below) or behind HTTP with the Tinker JSON protocol (`TinkerBackend`, tinker/backend.ts, is the
 * client; `src/serve/trainer-server.ts` serves a `GptOssBackend` that way).
 *
 * A datum is one document: model input tokens x[0..N) and, per position n, the target token y[n] the position is
 * scored on (normally x[n+1]) and the loss inputs of that position. The losses are the Tinker docs' definitions,
 * per token and SUMMED over every token of every datum (no mean anywhere), with lp = log p_θ(y[n] | x[..n]) and the
 * ratio r = exp(lp − sampling_lp):
 *   cross_entropy:        L = −Σ w · lp                                       (inputs: target_tokens, weights)
 *   importance_sampling:  L = −Σ r · A                                        (target_tokens, logprobs, advantages)
 *   ppo:                  L = −Σ min(r · A, clip(r, lo, hi) · A)              (+ clip_low_threshold, clip_high_threshold)
 *   cispo:                L = −Σ sg(clip(r, lo, hi)) · lp · A                 (sg = stop-gradient)
 *   dro:                  L = −Σ (lp · A − ½ β (lp − sampling_lp)²)           (config `beta`)
 * lo and hi are bounds on the ratio itself (defaults 0.8 and 1.2), from `loss_fn_config` or per-token inputs of the
 * same names. The loss reported is `loss:sum`.
 *
 * Any normalisation (token-mean, sequence-mean, Dr.GRPO's constant) is the caller's: it goes into the per-token
 * weights for cross_entropy and into the advantages for the RL losses (each is linear in A, and for ppo a weight
 * c ≥ 0 commutes with the min: min(r·cA, clip(r)·cA) = c·min(r·A, clip(r)·A)). `actorUpdateViaBackend` does exactly
 * that with verl's aggregation weights (aggregate.ts).
 */
import { mkdirSync } from 'node:fs';
import { clipGradNorm, globalNorm } from '../engine/index.ts';
import type { GptOssModel } from '../model/model.ts';
import { modelGenerateBatch } from '../rollout/model-engine.ts';
import type { GptOssPolicy } from './model-policy.ts';

export type LossFn = 'cross_entropy' | 'importance_sampling' | 'ppo' | 'cispo' | 'dro';
export const LOSS_FNS: readonly LossFn[] = ['cross_entropy', 'importance_sampling', 'ppo', 'cispo', 'dro'];

/** Per-position loss inputs of one datum; every array has the datum's length N. */
export interface LossInputs {
  target_tokens: ArrayLike<number>;
  weights?: ArrayLike<number>;
  /** Sampling log-probs of the targets (the behaviour policy's). */
  logprobs?: ArrayLike<number>;
  advantages?: ArrayLike<number>;
  clip_low_threshold?: ArrayLike<number>;
  clip_high_threshold?: ArrayLike<number>;
}

export interface Datum {
  /** Model input tokens (the concatenated encoded-text chunks). */
  tokens: ArrayLike<number>;
  lossInputs: LossInputs;
}

export type LossConfig = Partial<Record<'clip_low_threshold' | 'clip_high_threshold' | 'beta', number>>;

export interface ForwardBackwardResult {
  /** Per datum, the target log-probs lp[n] under the weights the forward ran with. */
  logprobs: Float32Array[];
  /** `loss:sum` and any other metrics. */
  metrics: Record<string, number>;
}

/** Tinker's `AdamParams` (its defaults: lr 1e-4, β 0.9/0.95, ε 1e-12, no weight decay, no clipping). */
export interface AdamParams {
  learningRate: number;
  beta1: number;
  beta2: number;
  eps: number;
  /** Decoupled weight decay. */
  weightDecay: number;
  /** Global-norm clip; 0: none. */
  gradClipNorm: number;
}
export const DEFAULT_ADAM: AdamParams = { learningRate: 1e-4, beta1: 0.9, beta2: 0.95, eps: 1e-12, weightDecay: 0, gradClipNorm: 0 };

export interface SampleParams {
  maxTokens: number;
  temperature?: number;
  topK?: number;
  topP?: number;
  /** The same seed gives the same samples (default 0). */
  seed?: number;
  /** Stop after sampling one of these tokens (kept in the output). */
  stopTokens?: readonly number[];
}

export interface SampledSequence {
  tokens: number[];
  logprobs: number[];
  stopReason: 'stop' | 'length';
}

export interface TrainingBackend {
  /** Forward and backward; the gradients ACCUMULATE until the next `optimStep`. */
  forwardBackward(data: readonly Datum[], lossFn: LossFn, config?: LossConfig): Promise<ForwardBackwardResult>;
  /** The same forward and loss without a backward. */
  forward(data: readonly Datum[], lossFn: LossFn, config?: LossConfig): Promise<ForwardBackwardResult>;
  /** Clips (when asked), steps Adam with these parameters, and clears the gradients. */
  optimStep(adam: AdamParams): Promise<{ metrics: Record<string, number> }>;
  /** `n` completions of `prompt` with the current weights. */
  sample(prompt: readonly number[], n: number, params: SampleParams): Promise<SampledSequence[]>;
  /** Weights and optimizer state to `dir`; `loadState` restores them (the optimizer only when asked). */
  saveState(dir: string): Promise<void>;
  loadState(dir: string, options: { optimizer: boolean }): Promise<void>;
}

function finiteArray(name: string, a: ArrayLike<number> | undefined, n: number, required: boolean): ArrayLike<number> | undefined {
  if (a === undefined) {
    if (required) throw new Error(`datum: loss input '${name}' is required for this loss`);
    return undefined;
  }
  if (a.length !== n) throw new Error(`datum: loss input '${name}' has ${a.length} values, the model input has ${n} tokens`);
  for (let i = 0; i < n; i++) if (!Number.isFinite(a[i])) throw new Error(`datum: loss input '${name}'[${i}] is not a finite number`);
  return a;
}

/** Checks a datum's shapes, finiteness and token range against a vocabulary. */
export function validateDatum(d: Datum, lossFn: LossFn, vocab: number): void {
  const n = d.tokens.length;
  if (n === 0) throw new Error('datum: the model input is empty');
  for (let i = 0; i < n; i++) {
    const t = d.tokens[i];
    if (!(Number.isInteger(t) && t >= 0 && t < vocab)) throw new Error(`datum: input token ${i} (${t}) is not an id in [0, ${vocab})`);
  }
  const y = finiteArray('target_tokens', d.lossInputs.target_tokens, n, true)!;
  for (let i = 0; i < n; i++) if (!(Number.isInteger(y[i]) && y[i] >= 0 && y[i] < vocab)) throw new Error(`datum: target token ${i} (${y[i]}) is not an id in [0, ${vocab})`);
  const rl = lossFn !== 'cross_entropy';
  finiteArray('weights', d.lossInputs.weights, n, false);
  finiteArray('logprobs', d.lossInputs.logprobs, n, rl);
  finiteArray('advantages', d.lossInputs.advantages, n, rl);
  finiteArray('clip_low_threshold', d.lossInputs.clip_low_threshold, n, false);
  finiteArray('clip_high_threshold', d.lossInputs.clip_high_threshold, n, false);
}

export function validateLossConfig(lossFn: LossFn, config: LossConfig = {}): void {
  for (const [k, v] of Object.entries(config)) {
    if (!['clip_low_threshold', 'clip_high_threshold', 'beta'].includes(k)) throw new Error(`loss_fn_config: unknown key '${k}' (known: clip_low_threshold, clip_high_threshold, beta)`);
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new Error(`loss_fn_config.${k} must be a finite number`);
  }
  if ((config.clip_low_threshold ?? 0.8) > (config.clip_high_threshold ?? 1.2)) throw new Error('loss_fn_config: clip_low_threshold must not exceed clip_high_threshold');
  if (config.beta !== undefined && lossFn !== 'dro') throw new Error(`loss_fn_config.beta belongs to the dro loss, not ${lossFn}`);
}

/**
 * One datum's loss (its sum over positions) and ∂L/∂lp per position, from the target log-probs `lp`.
 * For ppo the min picks the unclipped term on ties; the clipped term has zero gradient (clip is flat outside
 * [lo, hi] and is chosen only there). For cispo the clipped ratio is a constant.
 */
export function tinkerLoss(lossFn: LossFn, lp: ArrayLike<number>, inputs: LossInputs, config: LossConfig = {}): { loss: number; dLogprob: Float32Array } {
  const n = lp.length;
  const d = new Float32Array(n);
  let loss = 0;
  const at = (a: ArrayLike<number> | undefined, i: number, dflt: number) => (a ? a[i] : dflt);
  for (let i = 0; i < n; i++) {
    if (lossFn === 'cross_entropy') {
      const w = at(inputs.weights, i, 1);
      loss -= w * lp[i];
      d[i] = -w;
      continue;
    }
    const A = inputs.advantages![i];
    const slp = inputs.logprobs![i];
    const r = Math.exp(lp[i] - slp);
    const lo = at(inputs.clip_low_threshold, i, config.clip_low_threshold ?? 0.8);
    const hi = at(inputs.clip_high_threshold, i, config.clip_high_threshold ?? 1.2);
    const clipped = Math.min(Math.max(r, lo), hi);
    if (lossFn === 'importance_sampling') {
      loss -= r * A;
      d[i] = -r * A;
    } else if (lossFn === 'ppo') {
      const un = r * A, cl = clipped * A;
      if (un <= cl) {
        loss -= un;
        d[i] = -r * A;
      } else {
        loss -= cl;
        d[i] = r > lo && r < hi ? -r * A : 0;
      }
    } else if (lossFn === 'cispo') {
      loss -= clipped * lp[i] * A;
      d[i] = -clipped * A;
    } else {
      const beta = config.beta ?? 0;
      const delta = lp[i] - slp;
      loss -= lp[i] * A - 0.5 * beta * delta * delta;
      d[i] = -(A - beta * delta);
    }
  }
  return { loss, dLogprob: d };
}

/**
 * `n` samples of `prompt` from a model (the seam's `sample`, in process). Sample k is one in-process engine request
 * seeded seed + k·φ (k = 0: the seed itself), so one sample through the seam is the token sequence the rollout engine
 * samples for the same request (src/rollout/model-engine.ts).
 */
export async function sampleModel(model: GptOssModel, prompt: readonly number[], n: number, params: SampleParams): Promise<SampledSequence[]> {
  if (!(Number.isInteger(n) && n >= 1)) throw new Error(`sample: num_samples must be a positive integer, got ${n}`);
  if (!(Number.isInteger(params.maxTokens) && params.maxTokens >= 1)) throw new Error(`sample: max_tokens must be a positive integer, got ${params.maxTokens}`);
  const V = model.config.vocab_size;
  if (prompt.length === 0) throw new Error('sample: the prompt is empty');
  for (const t of prompt) if (!(Number.isInteger(t) && t >= 0 && t < V)) throw new Error(`sample: prompt token ${t} is not an id in [0, ${V})`);
  const seed = params.seed ?? 0;
  const out = await modelGenerateBatch(model)(Array.from({ length: n }, (_, k) => ({
    tokens: prompt, maxNewTokens: params.maxTokens, temperature: params.temperature ?? 1, topK: params.topK, topP: params.topP,
    seed: (seed + Math.imul(k, 0x9e3779b9)) >>> 0, stop: params.stopTokens ?? [],
  })));
  return out.map((s) => ({ tokens: s.tokens, logprobs: s.logprobs, stopReason: s.finishReason === 'stop' ? 'stop' : 'length' }));
}

/**
 * The in-process gpt-oss model behind the seam. Built from a `GptOssPolicy` it shares that policy's model and AdamW,
 * so the two views of one engine stay in step. Datums are packed into one sequence of documents per call.
 */
export class GptOssBackend implements TrainingBackend {
  readonly model: GptOssModel;

  constructor(private readonly policy: GptOssPolicy) {
    this.model = policy.model;
  }

  private run(data: readonly Datum[], lossFn: LossFn, config: LossConfig | undefined, grad: boolean): ForwardBackwardResult {
    if (!LOSS_FNS.includes(lossFn)) throw new Error(`unknown loss function '${String(lossFn)}' (known: ${LOSS_FNS.join(', ')})`);
    if (data.length === 0) throw new Error('forward_backward: no datums');
    validateLossConfig(lossFn, config);
    const V = this.model.config.vocab_size;
    let total = 0;
    for (const d of data) {
      validateDatum(d, lossFn, V);
      total += d.tokens.length;
    }
    const tokens = new Int32Array(total), docIds = new Int32Array(total), targets = new Int32Array(total);
    let off = 0;
    data.forEach((d, k) => {
      for (let i = 0; i < d.tokens.length; i++) {
        tokens[off + i] = d.tokens[i];
        docIds[off + i] = k;
        targets[off + i] = d.lossInputs.target_tokens[i];
      }
      off += d.tokens.length;
    });
    const r = this.model.forward({ tokens, docIds, targets }, { grad });
    const logprobs: Float32Array[] = [];
    const dl = new Float32Array(total);
    let loss = 0;
    off = 0;
    for (const d of data) {
      const lp = Float32Array.from(r.logprobs.subarray(off, off + d.tokens.length));
      const l = tinkerLoss(lossFn, lp, d.lossInputs, config);
      loss += l.loss;
      dl.set(l.dLogprob, off);
      logprobs.push(lp);
      off += d.tokens.length;
    }
    if (grad) this.model.backward(dl);
    return { logprobs, metrics: { 'loss:sum': loss } };
  }

  async forwardBackward(data: readonly Datum[], lossFn: LossFn, config?: LossConfig): Promise<ForwardBackwardResult> {
    return this.run(data, lossFn, config, true);
  }

  async forward(data: readonly Datum[], lossFn: LossFn, config?: LossConfig): Promise<ForwardBackwardResult> {
    return this.run(data, lossFn, config, false);
  }

  async optimStep(adam: AdamParams): Promise<{ metrics: Record<string, number> }> {
    const opt = this.policy.optimizer;
    opt.configure({ lr: adam.learningRate, beta1: adam.beta1, beta2: adam.beta2, eps: adam.eps, weightDecay: adam.weightDecay });
    const grads = [...this.model.gradients().values()];
    const gradNorm = adam.gradClipNorm > 0 ? clipGradNorm(grads, adam.gradClipNorm) : globalNorm(grads);
    const skipped = !Number.isFinite(gradNorm);
    if (!skipped) opt.update();
    this.model.zeroGrad();
    return { metrics: { grad_norm: gradNorm, skipped: skipped ? 1 : 0 } };
  }

  async sample(prompt: readonly number[], n: number, params: SampleParams): Promise<SampledSequence[]> {
    return sampleModel(this.model, prompt, n, params);
  }

  async saveState(dir: string): Promise<void> {
    mkdirSync(dir, { recursive: true });
    await this.policy.saveCheckpoint(dir);
  }

  async loadState(dir: string, options: { optimizer: boolean }): Promise<void> {
    const opt = this.policy.optimizer;
    const lr = opt.lr;
    await this.policy.loadCheckpoint(dir);
    if (options.optimizer) return;
    // Weights only: the optimizer starts afresh (zero moments, step 0), as for a newly created model.
    for (let i = 0; i < opt.params.length; i++) {
      const { m, v } = opt.moments(i);
      m.fill(0);
      v.fill(0);
    }
    opt.step = 0;
    opt.lr = lr;
  }
}
