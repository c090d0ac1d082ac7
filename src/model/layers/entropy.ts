/**
 * The entropy of a softmax row and its gradient, the one implementation the head's entropy bonus
 * (head.ts), the policies' per-token entropies (src/rl/model-policy.ts, the toy's tabular policy) and the tests use.
 *
 * A row is given by its values x_j with log-probabilities l_j = scale·x_j − shift, where shift is the log-sum-exp of
 * scale·x (`logSumExp`); scale is 1/temperature for a tempered distribution. With p_j = exp(l_j):
 *   H = −Σ_j p_j l_j,   ∂H/∂z_j = −p_j (l_j + H)   (z_j = scale·x_j, the logits the softmax sees).
 */

/** log Σ_j exp(scale·x_j) over `x[offset, offset + size)`, stabilised by the row maximum. */
export function logSumExp(x: ArrayLike<number>, offset = 0, size = x.length - offset, scale = 1): number {
  let max = -Infinity;
  for (let j = 0; j < size; j++) max = Math.max(max, x[offset + j] * scale);
  let sum = 0;
  for (let j = 0; j < size; j++) sum += Math.exp(x[offset + j] * scale - max);
  return max + Math.log(sum);
}

/** H of the row `x[offset, offset + size)` with log-probabilities scale·x_j − shift. */
export function softmaxEntropy(x: ArrayLike<number>, offset: number, size: number, shift: number, scale = 1): number {
  let h = 0;
  for (let j = 0; j < size; j++) {
    const l = x[offset + j] * scale - shift;
    h -= Math.exp(l) * l;
  }
  return h;
}

/**
 * g·∂H/∂z_j for the row `x[offset, offset + size)` (log-probabilities x_j − shift), written to
 * `out[outOffset + j]`; returns H.
 */
export function softmaxEntropyGrad(x: ArrayLike<number>, offset: number, size: number, shift: number, g: number, out: Float32Array | Float64Array, outOffset = 0): number {
  const h = softmaxEntropy(x, offset, size, shift);
  for (let j = 0; j < size; j++) {
    const l = x[offset + j] - shift;
    out[outOffset + j] = -g * Math.exp(l) * (l + h);
  }
  return h;
}
