/**
 * The critic's loss (docs/grpo.md, "PPO with a critic"): verl's `compute_value_loss`
 * (https://github.com/volcengine/verl/blob/main/verl/trainer/ppo/core_algos.py, after TRL's PPO trainer) per token,
 *   v̂_clip = clip(v̂, V_old − c, V_old + c)
 *   ℓ_t = 0.5 · max((v̂ − R)², (v̂_clip − R)²)          (loss 'mse'; c = `critic.valueClip`, null = no clip)
 * aggregated token-mean over the sampled tokens of the mini-batch (verl's critic `loss_agg_mode` default), with
 * `vf_clipfrac` = the share of sampled tokens where the clipped term is the larger. Loss 'huber' puts the Huber
 * function h_δ(e) = ½e² for |e| ≤ δ, δ(|e| − ½δ) beyond (which is the 0.5·e² above near 0) in place of 0.5·e².
 * Gradient: where the clipped term wins, v̂ lies outside the clip range and v̂_clip does not move with it, so
 * ∂ℓ/∂v̂ = 0; elsewhere ∂ℓ/∂v̂ = h'(v̂ − R) (= v̂ − R for 'mse').
 */

export type ValueLossKind = 'mse' | 'huber';

export interface ValueLossOptions {
  /** c: predictions further than this from the rollout's values are clipped (null: no clipping). */
  valueClip: number | null;
  loss: ValueLossKind;
  /** δ of the Huber loss. */
  huberDelta: number;
}

export interface ValueLossResult {
  /** Per-token ℓ_t, `[B, R]` (0 where m = 0). */
  losses: Float32Array;
  /** ∂ℓ_t/∂v̂_t, `[B, R]` (0 where m = 0). */
  dValues: Float32Array;
  /** Share of the sampled tokens where the clipped term is the larger. */
  clipFrac: number;
  /** Sampled tokens counted. */
  tokens: number;
}

/** h(e) and h'(e): 0.5·e² and e, or Huber with δ. */
function lossAndSlope(e: number, o: ValueLossOptions): [number, number] {
  if (o.loss === 'mse') return [0.5 * e * e, e];
  const d = o.huberDelta, a = Math.abs(e);
  return a <= d ? [0.5 * e * e, e] : [d * (a - 0.5 * d), d * Math.sign(e)];
}

export function computeValueLoss(
  vpreds: ArrayLike<number>,
  oldValues: ArrayLike<number>,
  returns: ArrayLike<number>,
  responseMask: ArrayLike<number>,
  options: ValueLossOptions,
): ValueLossResult {
  const n = vpreds.length;
  for (const [name, a] of [['old values', oldValues], ['returns', returns], ['response mask', responseMask]] as const) {
    if (a.length !== n) throw new Error(`value loss: ${n} predictions but ${a.length} ${name}`);
  }
  const c = options.valueClip;
  if (c !== null && !(c > 0)) throw new RangeError(`value loss: valueClip must be > 0 or null, got ${c}`);
  const losses = new Float32Array(n), dValues = new Float32Array(n);
  let clipped = 0, tokens = 0;
  for (let k = 0; k < n; k++) {
    if (!responseMask[k]) continue;
    tokens++;
    const v = vpreds[k], r = returns[k];
    const [l1, g1] = lossAndSlope(v - r, options);
    if (c === null) {
      losses[k] = l1;
      dValues[k] = g1;
      continue;
    }
    const vc = Math.min(Math.max(v, oldValues[k] - c), oldValues[k] + c);
    const [l2] = lossAndSlope(vc - r, options);
    if (l2 > l1) {
      clipped++;
      losses[k] = l2;
      dValues[k] = 0;
    } else {
      losses[k] = l1;
      dValues[k] = g1;
    }
  }
  return { losses, dValues, clipFrac: tokens > 0 ? clipped / tokens : 0, tokens };
}

/**
 * 1 − Var(R − V)/Var(R) over the sampled tokens (verl's `critic/vf_explained_var`, with its 1e-5 in the denominator):
 * 1 = the values predict the returns exactly, 0 = no better than their mean, < 0 worse.
 */
export function explainedVariance(values: ArrayLike<number>, returns: ArrayLike<number>, responseMask: ArrayLike<number>): number {
  let n = 0, sr = 0, sd = 0;
  for (let k = 0; k < values.length; k++) if (responseMask[k]) { n++; sr += returns[k]; sd += returns[k] - values[k]; }
  if (n < 2) return 0;
  const mr = sr / n, md = sd / n;
  let vr = 0, vd = 0;
  for (let k = 0; k < values.length; k++) {
    if (!responseMask[k]) continue;
    vr += (returns[k] - mr) ** 2;
    vd += (returns[k] - values[k] - md) ** 2;
  }
  return 1 - vd / (n - 1) / (vr / (n - 1) + 1e-5);
}

/** Mean of `values` over the slots with m ≠ 0. */
export function maskedMean(values: ArrayLike<number>, mask: ArrayLike<number>): number {
  let n = 0, s = 0;
  for (let k = 0; k < values.length; k++) if (mask[k]) { n++; s += values[k]; }
  return n > 0 ? s / n : 0;
}
