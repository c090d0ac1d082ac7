/**
 * Policy-gradient losses, per token, with their analytic derivative w.r.t. the current log-probs (docs/grpo.md,
 * "Policy losses").
 *
 * Every function returns `losses[B·R]` (0 where the mask is 0) and `dLogprob[B·R]` = ∂ losses[i,t] / ∂ logπθ[i,t]
 * (the per-token loss depends only on its own log-prob through the gradient, also for GSPO because of its
 * stop-gradient construction). The aggregation (aggregate.ts) turns the per-token losses into a scalar and supplies
 * the weights that multiply `dLogprob`.
 */
import { checkShape } from './advantages.ts';
import type { LossAggMode } from './aggregate.ts';
import { namesOf } from './registry.ts';

/** verl clamps `log_ratio` to [−20, 20] before exponentiating (vanilla). */
export const LOG_RATIO_CLAMP = 20;
/** GSPO clamps the token-level log-ratio to at most 10. */
export const GSPO_LOG_RATIO_MAX = 10;

export interface ClipConfig {
  /** `clip_ratio`, the fallback for low/high (default 0.2). */
  clipRatio?: number;
  /** `clip_ratio_low` ε_low (default clipRatio). */
  clipRatioLow?: number;
  /** `clip_ratio_high` ε_high (default clipRatio; DAPO's clip-higher uses 0.28). */
  clipRatioHigh?: number;
  /** `clip_ratio_c`, the dual-clip constant c > 1 (default 3.0); vanilla only. */
  clipRatioC?: number;
}

export interface PolicyLossInput {
  /** Current log-probs logπθ, `[B, R]`. */
  logprobs: ArrayLike<number>;
  /** π_old log-probs, `[B, R]`. */
  oldLogprobs: ArrayLike<number>;
  /** Per-token advantages, `[B, R]`. */
  advantages: ArrayLike<number>;
  responseMask: ArrayLike<number>;
  rows: number;
  cols: number;
  /** Optional rollout-correction importance weights, multiplied into the per-token loss (treated as constants). */
  isWeights?: ArrayLike<number>;
}

export interface PolicyLossStats {
  /** Masked mean of 1[L2 > L1]. */
  clipFrac: number;
  /** Masked mean of 1[Lclip > L3 and A < 0] (dual clip). */
  clipFracLower: number;
  /** `ppo_kl`: masked mean of −log_ratio. */
  approxKl: number;
  ratioMean: number;
  ratioMin: number;
  ratioMax: number;
}

export interface PolicyLossResult {
  losses: Float32Array;
  dLogprob: Float32Array;
  stats: PolicyLossStats;
}

export function resolveClip(c: ClipConfig): { low: number; high: number; dual: number } {
  const base = c.clipRatio ?? 0.2;
  const low = c.clipRatioLow ?? base;
  const high = c.clipRatioHigh ?? base;
  const dual = c.clipRatioC ?? 3.0;
  if (!(low >= 0 && low < 1)) throw new RangeError(`clip_ratio_low must be in [0, 1), got ${low}`);
  if (!(high >= 0)) throw new RangeError(`clip_ratio_high must be ≥ 0, got ${high}`);
  if (!(dual > 1)) throw new RangeError(`clip_ratio_c must be > 1 (dual clip), got ${dual}`);
  return { low, high, dual };
}

function checkInput(x: PolicyLossInput): void {
  const { rows, cols } = x;
  checkShape('logprobs', x.logprobs, rows, cols);
  checkShape('oldLogprobs', x.oldLogprobs, rows, cols);
  checkShape('advantages', x.advantages, rows, cols);
  checkShape('responseMask', x.responseMask, rows, cols);
  if (x.isWeights) checkShape('isWeights', x.isWeights, rows, cols);
}

class StatsAccumulator {
  n = 0;
  clip = 0;
  clipLower = 0;
  negLogRatio = 0;
  ratio = 0;
  min = Infinity;
  max = -Infinity;
  add(ratio: number, logRatio: number, clipped: boolean, clippedLower: boolean): void {
    this.n++;
    if (clipped) this.clip++;
    if (clippedLower) this.clipLower++;
    this.negLogRatio -= logRatio;
    this.ratio += ratio;
    if (ratio < this.min) this.min = ratio;
    if (ratio > this.max) this.max = ratio;
  }
  result(): PolicyLossStats {
    const d = Math.max(this.n, 1);
    return {
      clipFrac: this.clip / d,
      clipFracLower: this.clipLower / d,
      approxKl: this.negLogRatio / d,
      ratioMean: this.n ? this.ratio / d : 1,
      ratioMin: this.n ? this.min : 1,
      ratioMax: this.n ? this.max : 1,
    };
  }
}

/**
 * Vanilla PPO-clip (arXiv 1707.06347) with dual clip (Ye et al., arXiv 1912.09729; verl's `clip_ratio_c`):
 * `r = exp(clamp(logπθ − logπold, −20, 20))`, `L1 = −A·r`, `L2 = −A·clip(r, 1−ε_low, 1+ε_high)`, `Lclip = max(L1, L2)`;
 * for A < 0, `L = min(Lclip, −A·c)`; otherwise `L = Lclip`.
 */
export function vanillaPolicyLoss(x: PolicyLossInput, clip: ClipConfig = {}): PolicyLossResult {
  checkInput(x);
  const { low, high, dual } = resolveClip(clip);
  const n = x.rows * x.cols;
  const losses = new Float32Array(n);
  const grad = new Float32Array(n);
  const stats = new StatsAccumulator();
  for (let k = 0; k < n; k++) {
    if (x.responseMask[k] === 0) continue;
    const a = x.advantages[k];
    const raw = x.logprobs[k] - x.oldLogprobs[k];
    const logRatio = Math.min(Math.max(raw, -LOG_RATIO_CLAMP), LOG_RATIO_CLAMP);
    const clampedLogRatio = logRatio !== raw;
    const r = Math.exp(logRatio);
    // d r / d logπθ = r inside the clamp, 0 where the clamp is active.
    const dr = clampedLogRatio ? 0 : r;
    const l1 = -a * r;
    const rClipped = Math.min(Math.max(r, 1 - low), 1 + high);
    const l2 = -a * rClipped;
    const inRange = r > 1 - low && r < 1 + high;
    const clipped = l2 > l1;
    let loss = clipped ? l2 : l1;
    let g = clipped ? (inRange ? -a * dr : 0) : -a * dr;
    let clippedLower = false;
    if (a < 0) {
      const l3 = -a * dual;
      if (loss > l3) {
        loss = l3;
        g = 0;
        clippedLower = true;
      }
    }
    const w = x.isWeights ? x.isWeights[k] : 1;
    losses[k] = loss * w;
    grad[k] = g * w;
    stats.add(r, logRatio, clipped, clippedLower);
  }
  return { losses, dLogprob: grad, stats: stats.result() };
}

/**
 * GSPO (arXiv 2507.18071): sequence log-ratio `log s_i = mean_t(logπθ − logπold)` over the masked tokens; token
 * surrogate `log s_{i,t} = sg(log s_i) + logπθ − sg(logπθ)`, clamped to ≤ 10 and exponentiated; PPO clip with
 * ε_low/ε_high and no dual clip. Its value equals s_i on every token; its gradient w.r.t. logπθ[i,t] is s_{i,t}
 * (0 where the clamp is active). verl always aggregates it with `seq-mean-token-mean`.
 */
export function gspoPolicyLoss(x: PolicyLossInput, clip: ClipConfig = {}): PolicyLossResult {
  checkInput(x);
  const { low, high } = resolveClip(clip);
  const { rows, cols } = x;
  const losses = new Float32Array(rows * cols);
  const grad = new Float32Array(rows * cols);
  const stats = new StatsAccumulator();
  for (let i = 0; i < rows; i++) {
    let sum = 0;
    let count = 0;
    for (let t = 0; t < cols; t++) {
      const k = i * cols + t;
      if (x.responseMask[k] === 0) continue;
      sum += x.logprobs[k] - x.oldLogprobs[k];
      count++;
    }
    if (count === 0) continue;
    const seqLogRatio = sum / count;
    for (let t = 0; t < cols; t++) {
      const k = i * cols + t;
      if (x.responseMask[k] === 0) continue;
      const a = x.advantages[k];
      // sg(log s_i) + logπθ − sg(logπθ): the forward value is log s_i.
      const raw = seqLogRatio;
      const logRatio = Math.min(raw, GSPO_LOG_RATIO_MAX);
      const r = Math.exp(logRatio);
      const dr = logRatio !== raw ? 0 : r;
      const l1 = -a * r;
      const rClipped = Math.min(Math.max(r, 1 - low), 1 + high);
      const l2 = -a * rClipped;
      const inRange = r > 1 - low && r < 1 + high;
      const clipped = l2 > l1;
      const w = x.isWeights ? x.isWeights[k] : 1;
      losses[k] = (clipped ? l2 : l1) * w;
      grad[k] = (clipped ? (inRange ? -a * dr : 0) : -a * dr) * w;
      stats.add(r, x.logprobs[k] - x.oldLogprobs[k], clipped, false);
    }
  }
  return { losses, dLogprob: grad, stats: stats.result() };
}

/**
 * Supervised fine-tuning on the batch's own tokens (rejection-sampling fine-tuning's loss, `advEstimator: 'rft'`):
 * `L = −logπθ` per response token, ∂L/∂logπθ = −1; with token-mean aggregation the gradient is that of
 * −Σ_i Σ_t m·logπθ / Σ m, the mean NLL of the rows' response tokens. No ratio, no clip, and the advantages are not
 * read: which rows are imitated is decided before the loss (the trainer drops the rows RFT does not keep, so the
 * aggregation's denominators count only kept tokens). Importance weights are refused (an SFT step has no behaviour
 * policy to correct for). The statistics still compare logπθ with π_old (`ppo_kl`, the ratio), as a drift measure;
 * `clipFrac` is 0.
 */
export function sftPolicyLoss(x: PolicyLossInput): PolicyLossResult {
  checkInput(x);
  if (x.isWeights) throw new Error('sft policy loss: importance weights (rolloutCorrection.rolloutIs) do not apply to an SFT step');
  const n = x.rows * x.cols;
  const losses = new Float32Array(n);
  const grad = new Float32Array(n);
  const stats = new StatsAccumulator();
  for (let k = 0; k < n; k++) {
    if (x.responseMask[k] === 0) continue;
    losses[k] = -x.logprobs[k];
    grad[k] = -1;
    const logRatio = x.logprobs[k] - x.oldLogprobs[k];
    stats.add(Math.exp(Math.min(Math.max(logRatio, -LOG_RATIO_CLAMP), LOG_RATIO_CLAMP)), logRatio, false, false);
  }
  return { losses, dLogprob: grad, stats: stats.result() };
}

/**
 * Truncated importance weights π_old/π_rollout for rollout correction (`algorithm.rolloutCorrection.rolloutIs`;
 * docs/grpo.md, "Rollout correction"; https://verl.readthedocs.io/en/latest/algo/rollout_corr.html): per token
 * `min(exp(old − rollout), threshold)`, or per sequence `min(exp(Σ_t (old − rollout)·m), threshold)` broadcast over its
 * tokens; 0 where the mask is 0. The policy losses multiply them in as constants (`PolicyLossInput.isWeights`).
 */
export function rolloutIsWeights(old: ArrayLike<number>, rollout: ArrayLike<number>, mask: ArrayLike<number>, B: number, R: number, level: 'token' | 'sequence', threshold: number): Float32Array {
  const w = new Float32Array(B * R);
  for (let i = 0; i < B; i++) {
    let seq = 0;
    for (let t = 0; t < R; t++) if (mask[i * R + t]) seq += old[i * R + t] - rollout[i * R + t];
    for (let t = 0; t < R; t++) {
      const k = i * R + t;
      if (!mask[k]) continue;
      w[k] = Math.min(Math.exp(level === 'token' ? old[k] - rollout[k] : seq), threshold);
    }
  }
  return w;
}

/**
 * The policy losses by `actor.policyLoss` name (docs/grpo.md, "Policy losses"). `aggregation` forces a loss's
 * aggregation over `actor.lossAggMode`: GSPO is defined with the sequence-level mean (arXiv 2507.18071), and verl
 * forces seq-mean-token-mean for it.
 */
export const POLICY_LOSSES = {
  vanilla: { loss: vanillaPolicyLoss },
  gspo: { loss: gspoPolicyLoss, aggregation: 'seq-mean-token-mean' },
  sft: { loss: (x: PolicyLossInput) => sftPolicyLoss(x) },
} as const satisfies Record<string, { loss: (x: PolicyLossInput, clip: ClipConfig) => PolicyLossResult; aggregation?: LossAggMode }>;

export type PolicyLossMode = keyof typeof POLICY_LOSSES;
export const POLICY_LOSS_MODES = namesOf(POLICY_LOSSES);

/** The aggregation a policy loss is taken with: its own when it forces one, else the configured `lossAggMode`. */
export function policyLossAggregation(mode: PolicyLossMode, configured: LossAggMode): LossAggMode {
  const entry = POLICY_LOSSES[mode];
  return 'aggregation' in entry ? entry.aggregation : configured;
}

export function computePolicyLoss(mode: PolicyLossMode, x: PolicyLossInput, clip: ClipConfig = {}): PolicyLossResult {
  if (!Object.hasOwn(POLICY_LOSSES, mode)) throw new Error(`unknown policy loss mode "${String(mode)}" (use ${POLICY_LOSS_MODES.join(', ')})`);
  return POLICY_LOSSES[mode].loss(x, clip);
}
