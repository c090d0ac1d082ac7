/**
 * The kernel interface the model layers use. Two implementations: `wasm` (AssemblyScript SIMD kernels on the
 * thread pool; the default) and `reference` (plain TypeScript, float64 accumulation; the oracle for tests).
 *
 * Conventions for every op:
 * - Shapes must match exactly; the only broadcasts are the documented ones (a 2-D matmul operand against a 3-D
 *   one, a bias over the last axis). Anything else throws an error naming the op and the shapes.
 * - "Along the last axis" ops treat a tensor as rows × cols with cols = the last dimension.
 * - `out` writes into an existing tensor of exactly the result shape (returned); otherwise a new tensor is
 *   allocated with `tag` (default 'tensor'). Results of the reference backend live where their first input does.
 * - In-place ops (`axpy`, `scatterAddRows`) say so in their name or doc.
 * - NaN inputs propagate (no checks on the hot path); use `checkFinite` where it matters.
 */
import type { Tensor } from './tensor.ts';

export interface OutOptions {
  out?: Tensor;
  tag?: string;
}

export interface MatmulOptions extends OutOptions {
  /** Use Aᵀ: a is stored [K, M] (or [B, K, M]). */
  transA?: boolean;
  /** Use Bᵀ: b is stored [N, K] (or [B, N, K]). */
  transB?: boolean;
  /** out += alpha·op(A)·op(B) instead of out = …; needs `out`. */
  accumulate?: boolean;
  /** Default 1. */
  alpha?: number;
}

export interface SwigluOptions extends OutOptions {
  /** Sigmoid sharpness: glu = g·σ(alpha·g). gpt-oss: 1.702. Default 1 (plain SiLU gate). */
  alpha?: number;
  /** Clamp: g ≤ limit and −limit ≤ u ≤ limit. gpt-oss: 7. Default +∞ (no clamp). */
  limit?: number;
  /** Added to the clamped up projection. gpt-oss: 1. Default 0. */
  upBias?: number;
}

export interface SwigluGrads {
  dgate: Tensor;
  dup: Tensor;
}

export interface RmsNormOptions extends OutOptions {
  /** Where to store the per-row 1/rms, shape = x.shape without the last axis. */
  rstdOut?: Tensor;
}

export interface RmsNormResult {
  y: Tensor;
  /** Per-row 1/sqrt(mean(x²) + eps); keep it for the backward pass. */
  rstd: Tensor;
}

export interface RmsNormBackwardOptions {
  dx?: Tensor;
  dweight?: Tensor;
  /** Add into `dweight` (gradient accumulation) instead of overwriting it. Needs `dweight`. */
  accumulateWeight?: boolean;
  tag?: string;
}

export interface RmsNormGrads {
  dx: Tensor;
  dweight: Tensor;
}

export interface CrossEntropyResult {
  /** Per-row loss, lse − logits[target]; 0 for ignored rows (target −1). */
  loss: Tensor;
  /** Per-row logsumexp; the backward pass reuses it. */
  lse: Tensor;
}

export interface ReduceColsOptions extends OutOptions {
  /** Add into `out` instead of overwriting it. Needs `out`. */
  accumulate?: boolean;
}

export interface Backend {
  readonly name: 'wasm' | 'reference';

  /** op(A)·op(B): [M,K]·[K,N] → [M,N]; batched [B,M,K]·[B,K,N] → [B,M,N]; a 2-D operand is shared by every batch. */
  matmul(a: Tensor, b: Tensor, options?: MatmulOptions): Tensor;

  add(a: Tensor, b: Tensor, options?: OutOptions): Tensor;
  sub(a: Tensor, b: Tensor, options?: OutOptions): Tensor;
  mul(a: Tensor, b: Tensor, options?: OutOptions): Tensor;
  scale(x: Tensor, s: number, options?: OutOptions): Tensor;
  /** In place: y += alpha·x. Returns y. */
  axpy(y: Tensor, alpha: number, x: Tensor): Tensor;
  exp(x: Tensor, options?: OutOptions): Tensor;

  /** x + bias over the last axis: x [..., N], bias [N]. */
  addBias(x: Tensor, bias: Tensor, options?: OutOptions): Tensor;
  /** Column sums of dy [..., N] → [N] (the bias gradient). */
  biasGrad(dy: Tensor, options?: ReduceColsOptions): Tensor;

  /** Reductions along the last axis: [..., N] → [...]. max of an empty row is −∞. */
  sum(x: Tensor, options?: OutOptions): Tensor;
  mean(x: Tensor, options?: OutOptions): Tensor;
  max(x: Tensor, options?: OutOptions): Tensor;

  softmax(x: Tensor, options?: OutOptions): Tensor;
  /** dx for y = softmax(x). */
  softmaxBackward(y: Tensor, dy: Tensor, options?: OutOptions): Tensor;
  logSoftmax(x: Tensor, options?: OutOptions): Tensor;
  /** dx for y = logSoftmax(x). */
  logSoftmaxBackward(y: Tensor, dy: Tensor, options?: OutOptions): Tensor;

  /** y = x · rstd · weight per row; x [..., C], weight [C]. */
  rmsnorm(x: Tensor, weight: Tensor, eps: number, options?: RmsNormOptions): RmsNormResult;
  rmsnormBackward(dy: Tensor, x: Tensor, weight: Tensor, rstd: Tensor, options?: RmsNormBackwardOptions): RmsNormGrads;

  silu(x: Tensor, options?: OutOptions): Tensor;
  siluBackward(x: Tensor, dy: Tensor, options?: OutOptions): Tensor;
  /** swiglu(gate, up) = g·σ(alpha·g)·(u + upBias) with g = min(gate, limit), u = clamp(up, ±limit). */
  swiglu(gate: Tensor, up: Tensor, options?: SwigluOptions): Tensor;
  swigluBackward(gate: Tensor, up: Tensor, dout: Tensor, options?: SwigluOptions & { dgate?: Tensor; dup?: Tensor }): SwigluGrads;

  /** Cross-entropy with logits [R, V] and targets (length R, −1 = ignore). */
  crossEntropy(logits: Tensor, targets: Int32Array, options?: { tag?: string }): CrossEntropyResult;
  /** dlogits = (softmax(logits) − onehot(target)) · dloss per row; ignored rows get 0. */
  crossEntropyBackward(logits: Tensor, targets: Int32Array, lse: Tensor, dloss: Tensor, options?: OutOptions): Tensor;

  /** out[i] = table[ids[i]]: table [V, C] → [n, C] (embedding forward). */
  gatherRows(table: Tensor, ids: Int32Array, options?: OutOptions): Tensor;
  /** In place: table[ids[i]] += rows[i] (embedding backward); rows [n, C]. */
  scatterAddRows(table: Tensor, ids: Int32Array, rows: Tensor): void;

  /** Swaps the last two axes: [..., R, C] → [..., C, R]. */
  transpose(x: Tensor, options?: OutOptions): Tensor;

  /** Σ x² over all elements, accumulated in float64. */
  sumSquares(x: Tensor): number;
}
