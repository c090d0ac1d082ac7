/**
 * KL penalties between the current policy and the reference (verl.md §4.5), and the entropy bonus (§4.3).
 *
 * With d = logπ − logπref:
 * - `kl` / `k1`: d;  `abs`: |d|;  `mse` / `k2`: ½d²
 * - `low_var_kl` / `k3`: x = clamp(logπref − logπ, −20, 20), k3 = exp(x) − x − 1, clamped to [−10, 10]
 * - a trailing `+` (e.g. `k3+`) is the straight-through variant: the value of the estimator, the gradient of k2.
 * `full` needs full-vocabulary distributions and is rejected, as in verl.
 */
import { checkShape } from './advantages.ts';

export type KlBase = 'kl' | 'k1' | 'abs' | 'mse' | 'k2' | 'low_var_kl' | 'k3';
export type KlPenaltyType = KlBase | `${KlBase}+`;
export const KL_PENALTY_TYPES: readonly string[] = ['kl', 'k1', 'abs', 'mse', 'k2', 'low_var_kl', 'k3'].flatMap((t) => [t, `${t}+`]);

export const K3_LOG_RATIO_CLAMP = 20;
export const K3_VALUE_CLAMP = 10;

export interface KlResult {
  /** Per-token penalty (0 where the mask is 0). */
  values: Float32Array;
  /** ∂value/∂logπ per token. */
  dLogprob: Float32Array;
}

function kind(type: KlPenaltyType): { base: 'k1' | 'abs' | 'k2' | 'k3'; straightThrough: boolean } {
  if (type === ('full' as string)) throw new Error('kl penalty "full" needs full-vocabulary distributions and is not implemented (as in verl)');
  const straightThrough = type.endsWith('+');
  const b = straightThrough ? type.slice(0, -1) : type;
  const map: Record<string, 'k1' | 'abs' | 'k2' | 'k3'> = { kl: 'k1', k1: 'k1', abs: 'abs', mse: 'k2', k2: 'k2', low_var_kl: 'k3', k3: 'k3' };
  const base = map[b];
  if (!base) throw new Error(`unknown kl penalty type "${type}" (use one of ${KL_PENALTY_TYPES.join(', ')})`);
  return { base, straightThrough };
}

/** One token's penalty and its derivative w.r.t. logπ. */
export function klPenaltyScalar(logprob: number, refLogprob: number, type: KlPenaltyType): { value: number; grad: number } {
  const { base, straightThrough } = kind(type);
  const d = logprob - refLogprob;
  let value: number;
  let grad: number;
  switch (base) {
    case 'k1':
      value = d;
      grad = 1;
      break;
    case 'abs':
      value = Math.abs(d);
      grad = Math.sign(d);
      break;
    case 'k2':
      value = 0.5 * d * d;
      grad = d;
      break;
    case 'k3': {
      const xRaw = refLogprob - logprob;
      const x = Math.min(Math.max(xRaw, -K3_LOG_RATIO_CLAMP), K3_LOG_RATIO_CLAMP);
      const k3 = Math.exp(x) - x - 1;
      value = Math.min(Math.max(k3, -K3_VALUE_CLAMP), K3_VALUE_CLAMP);
      // dk3/dlogπ = (exp(x) − 1)·(−1), zero where either clamp is active.
      grad = x !== xRaw || value !== k3 ? 0 : 1 - Math.exp(x);
      break;
    }
  }
  if (straightThrough) grad = d;
  return { value, grad };
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
 * KL in reward (verl.md §2 step 11): `token_level_rewards = token_level_scores − β·kl_penalty(old, ref)·m`.
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

/** Entropy of softmax(z) for one logits row: `logsumexp(z) − Σ softmax(z)·z`. */
export function entropyFromLogits(logits: ArrayLike<number>, offset = 0, size = logits.length - offset): number {
  let m = -Infinity;
  for (let j = 0; j < size; j++) m = Math.max(m, logits[offset + j]);
  let z = 0;
  for (let j = 0; j < size; j++) z += Math.exp(logits[offset + j] - m);
  const lse = m + Math.log(z);
  let pz = 0;
  for (let j = 0; j < size; j++) {
    const p = Math.exp(logits[offset + j] - lse);
    pz += p * logits[offset + j];
  }
  return lse - pz;
}

/**
 * ∂H/∂z_j = −p_j·(z_j − Σ_k p_k z_k) = −p_j·(log p_j + H), for one logits row; multiplied by `scale` and added into
 * `out` (so a caller can accumulate dLoss/dlogits).
 */
export function entropyGradLogits(logits: ArrayLike<number>, out: Float32Array | Float64Array, scale = 1, offset = 0, size = logits.length - offset): number {
  let m = -Infinity;
  for (let j = 0; j < size; j++) m = Math.max(m, logits[offset + j]);
  let z = 0;
  for (let j = 0; j < size; j++) z += Math.exp(logits[offset + j] - m);
  const lse = m + Math.log(z);
  let pz = 0;
  const p = new Float64Array(size);
  for (let j = 0; j < size; j++) {
    p[j] = Math.exp(logits[offset + j] - lse);
    pz += p[j] * logits[offset + j];
  }
  for (let j = 0; j < size; j++) out[offset + j] += scale * -p[j] * (logits[offset + j] - pz);
  return lse - pz;
}
