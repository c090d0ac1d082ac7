/**
 * Token-level generalised advantage estimation for PPO with a learned critic (`algorithm.advEstimator: 'gae'`,
 * docs/grpo.md, "PPO with a critic").
 *
 * GAE (Schulman et al., arXiv 1506.02438, Eq. 16) over the response tokens of each row, with verl's convention for
 * multi-turn responses (`compute_gae_advantage_return` in
 * https://github.com/volcengine/verl/blob/main/verl/trainer/ppo/core_algos.py): the recursion runs right to left over
 * all R slots, and a slot with response mask 0 (an observation the env wrote, or padding) is skipped: it neither
 * replaces the next value nor the running advantage, so the sampled token before an observation gap bootstraps from
 * the value of the first sampled token after it.
 *   δ_t = r_t + γ·V_next − V_t
 *   A_t = δ_t + γλ·A_next                          (on a sampled token, m_t = 1)
 *   V_next, A_next ← V_t, A_t if m_t = 1, else unchanged (both start at 0 past the end)
 *   returns_t = A_t + V_t                          (the critic's regression target)
 *   advantages = masked_whiten(A, m)               (batch mean 0, unbiased variance 1 over the sampled tokens)
 * One departure, stated: verl leaves the carried A_next on mask-0 slots (the losses mask them out); here they are 0,
 * so a row's advantages outside its sampled tokens are exactly 0 (as the outcome estimators' are).
 */
import { checkShape } from './advantages.ts';

/** verl's `masked_whiten` epsilon: (x − μ)·(σ² + 1e-8)^−½. */
export const WHITEN_EPSILON = 1e-8;

export interface GaeResult {
  /** `[B, R]`, whitened over the sampled tokens, 0 elsewhere. */
  advantages: Float32Array;
  /** `[B, R]` A_t + V_t before whitening (0 where m = 0): the value targets. */
  returns: Float32Array;
  /** `[B, R]` the GAE advantages before whitening (0 where m = 0). */
  raw: Float32Array;
}

/**
 * Moves every reward that sits on a slot with mask 0 onto the nearest earlier sampled token of its row (the action
 * that led to it), so the episode's terminal reward is on the last sampled token: verl's recursion skips mask-0
 * slots, and a reward left there would be lost. A reward before the row's first sampled token stays (it cannot be
 * credited to an action). Returns a new array.
 */
export function rewardsOnSampledTokens(tokenLevelRewards: ArrayLike<number>, responseMask: ArrayLike<number>, rows: number, cols: number): Float32Array {
  checkShape('tokenLevelRewards', tokenLevelRewards, rows, cols);
  checkShape('responseMask', responseMask, rows, cols);
  const out = Float32Array.from(tokenLevelRewards);
  for (let i = 0; i < rows; i++) {
    let last = -1;
    for (let t = 0; t < cols; t++) {
      const k = i * cols + t;
      if (responseMask[k]) last = k;
      else if (out[k] !== 0 && last >= 0) {
        out[last] += out[k];
        out[k] = 0;
      }
    }
  }
  return out;
}

/** verl's `masked_whiten` (shift_mean): mean and unbiased variance over the slots with m ≠ 0; other slots → 0. */
export function maskedWhiten(values: ArrayLike<number>, mask: ArrayLike<number>): Float32Array {
  if (values.length !== mask.length) throw new Error(`masked whiten: ${values.length} values but ${mask.length} mask entries`);
  let n = 0, sum = 0;
  for (let k = 0; k < values.length; k++) if (mask[k]) { n++; sum += values[k]; }
  const out = new Float32Array(values.length);
  if (n === 0) return out;
  const mean = sum / n;
  let sq = 0;
  for (let k = 0; k < values.length; k++) if (mask[k]) sq += (values[k] - mean) ** 2;
  // verl's masked_var with unbiased=True: the masked mean of the squares times n/(n − 1) (one token: variance 0).
  const variance = n > 1 ? sq / (n - 1) : 0;
  const scale = 1 / Math.sqrt(variance + WHITEN_EPSILON);
  for (let k = 0; k < values.length; k++) if (mask[k]) out[k] = (values[k] - mean) * scale;
  return out;
}

/**
 * GAE advantages and returns of a batch (see the file comment). `values[i, t]` = V(s_t), the critic's value of the
 * state before response token t (the position that scores that token). γ and λ in [0, 1].
 */
export function computeGaeAdvantageReturn(
  tokenLevelRewards: ArrayLike<number>,
  values: ArrayLike<number>,
  responseMask: ArrayLike<number>,
  rows: number,
  cols: number,
  gamma: number,
  lam: number,
): GaeResult {
  checkShape('tokenLevelRewards', tokenLevelRewards, rows, cols);
  checkShape('values', values, rows, cols);
  checkShape('responseMask', responseMask, rows, cols);
  if (!(gamma >= 0 && gamma <= 1)) throw new RangeError(`gae: gamma must be in [0, 1], got ${gamma}`);
  if (!(lam >= 0 && lam <= 1)) throw new RangeError(`gae: lambda must be in [0, 1], got ${lam}`);
  const raw = new Float32Array(rows * cols);
  const returns = new Float32Array(rows * cols);
  for (let i = 0; i < rows; i++) {
    let nextValue = 0, nextAdv = 0;
    for (let t = cols - 1; t >= 0; t--) {
      const k = i * cols + t;
      if (!responseMask[k]) continue;
      const delta = tokenLevelRewards[k] + gamma * nextValue - values[k];
      const a = delta + gamma * lam * nextAdv;
      raw[k] = a;
      returns[k] = a + values[k];
      nextValue = values[k];
      nextAdv = a;
    }
  }
  return { advantages: maskedWhiten(raw, responseMask), returns, raw };
}
