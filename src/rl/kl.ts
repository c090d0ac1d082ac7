/**
 * KL penalties between the current policy and the reference (docs/grpo.md, "KL penalties"; the k1/k2/k3
 * estimators of J. Schulman, http://joschu.net/blog/kl-approx.html, with verl's names and clamps).
 *
 * With d = logπ − logπref:
 * - `kl` / `k1`: d;  `abs`: |d|;  `mse` / `k2`: ½d²
 * - `low_var_kl` / `k3`: x = clamp(logπref − logπ, −20, 20), k3 = exp(x) − x − 1, clamped to [−10, 10]
 * - a trailing `+` (e.g. `k3+`) is the straight-through variant: the value of the estimator, the gradient of k2.
 * `full` needs full-vocabulary distributions and is rejected, as in verl.
 */
import { checkShape } from './advantages.ts';
import { namesOf } from './registry.ts';

export const K3_LOG_RATIO_CLAMP = 20;
export const K3_VALUE_CLAMP = 10;

/** One token's penalty and its derivative w.r.t. logπ. */
type KlEstimator = (logprob: number, refLogprob: number) => { value: number; grad: number };

const k1: KlEstimator = (logprob, refLogprob) => ({ value: logprob - refLogprob, grad: 1 });
const abs: KlEstimator = (logprob, refLogprob) => {
  const d = logprob - refLogprob;
  return { value: Math.abs(d), grad: Math.sign(d) };
};
const k2: KlEstimator = (logprob, refLogprob) => {
  const d = logprob - refLogprob;
  return { value: 0.5 * d * d, grad: d };
};
const k3: KlEstimator = (logprob, refLogprob) => {
  const xRaw = refLogprob - logprob;
  const x = Math.min(Math.max(xRaw, -K3_LOG_RATIO_CLAMP), K3_LOG_RATIO_CLAMP);
  const raw = Math.exp(x) - x - 1;
  const value = Math.min(Math.max(raw, -K3_VALUE_CLAMP), K3_VALUE_CLAMP);
  // dk3/dlogπ = (exp(x) − 1)·(−1), zero where either clamp is active.
  return { value, grad: x !== xRaw || value !== raw ? 0 : 1 - Math.exp(x) };
};

/** The KL estimators by `actor.klLossType` / `algorithm.klPenalty` name (verl's names); each also has a `+` form. */
export const KL_ESTIMATORS = { kl: k1, k1, abs, mse: k2, k2, low_var_kl: k3, k3 } as const satisfies Record<string, KlEstimator>;

export type KlBase = keyof typeof KL_ESTIMATORS;
export type KlPenaltyType = KlBase | `${KlBase}+`;
/** Every accepted name: each estimator, then its straight-through `+` variant. */
export const KL_PENALTY_TYPES = namesOf(KL_ESTIMATORS).flatMap((t) => [t, `${t}+` as const]) as [KlPenaltyType, ...KlPenaltyType[]];

export interface KlResult {
  /** Per-token penalty (0 where the mask is 0). */
  values: Float32Array;
  /** ∂value/∂logπ per token. */
  dLogprob: Float32Array;
}

function kind(type: KlPenaltyType): { estimator: KlEstimator; straightThrough: boolean } {
  if (type === ('full' as string)) throw new Error('kl penalty "full" needs full-vocabulary distributions and is not implemented (as in verl)');
  const straightThrough = type.endsWith('+');
  const base = straightThrough ? type.slice(0, -1) : type;
  if (!Object.hasOwn(KL_ESTIMATORS, base)) throw new Error(`unknown kl penalty type "${type}" (use one of ${KL_PENALTY_TYPES.join(', ')})`);
  return { estimator: KL_ESTIMATORS[base as KlBase], straightThrough };
}

/** One token's penalty and its derivative w.r.t. logπ. */
export function klPenaltyScalar(logprob: number, refLogprob: number, type: KlPenaltyType): { value: number; grad: number } {
  const { estimator, straightThrough } = kind(type);
  const r = estimator(logprob, refLogprob);
  // Straight-through: the estimator's value with k2's gradient d.
  return straightThrough ? { value: r.value, grad: logprob - refLogprob } : r;
}

export function klPenalty(logprobs: ArrayLike<number>, refLogprobs: ArrayLike<number>, mask: ArrayLike<number>, rows: number, cols: number, type: KlPenaltyType): KlResult {
  checkShape('logprobs', logprobs, rows, cols);
  checkShape('refLogprobs', refLogprobs, rows, cols);
  checkShape('mask', mask, rows, cols);
  kind(type);
  const values = new Float32Array(rows * cols);
  const dLogprob = new Float32Array(rows * cols);
  for (let k = 0; k < rows * cols; k++) {
    if (mask[k] === 0) continue;
    const r = klPenaltyScalar(logprobs[k], refLogprobs[k], type);
    values[k] = r.value;
    dLogprob[k] = r.grad;
  }
  return { values, dLogprob };
}

/**
 * KL in the reward (docs/grpo.md, "KL penalties"): `token_level_rewards = token_level_scores − β·kl_penalty(old, ref)·m`.
 */
export function applyKlInReward(scores: ArrayLike<number>, oldLogprobs: ArrayLike<number>, refLogprobs: ArrayLike<number>, mask: ArrayLike<number>, rows: number, cols: number, beta: number, type: KlPenaltyType): { rewards: Float32Array; meanKl: number } {
  const kl = klPenalty(oldLogprobs, refLogprobs, mask, rows, cols, type);
  const rewards = new Float32Array(rows * cols);
  let sum = 0;
  let n = 0;
  for (let k = 0; k < rows * cols; k++) {
    rewards[k] = scores[k] - beta * kl.values[k] * mask[k];
    if (mask[k]) {
      sum += kl.values[k];
      n++;
    }
  }
  return { rewards, meanKl: n ? sum / n : 0 };
}
