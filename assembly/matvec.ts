// Matrix products with very few rows (M ≤ SMALL_M: decoding one token, a handful of sequences). Packing B and
// padding A to full micro-kernel tiles would cost more than the product itself here, so these loops stream B
// once, straight from its stored layout. Called by `matmul` (matmul.ts); not exported from the module.
import { claim, fma, hsum } from './simd';

export const SMALL_M: i32 = 4;
/** Columns per work item. Fixed, so results never depend on the thread count. */
const COLS: i32 = 256;

// out[j] for j in [n0, n1) = Σ_k a[k]·B[k][j], B row-major with row length N. Accumulators stay in registers.
function rowTimesMatrix(arow: usize, b: usize, N: i32, K: i32, n0: i32, n1: i32, crow: usize, alpha: f32, accumulate: bool): void {
  const ldb = <usize>N * 4;
  const va = f32x4.splat(alpha);
  let j = n0;
  for (; j + 32 <= n1; j += 32) {
    let s0 = f32x4.splat(0), s1 = f32x4.splat(0), s2 = f32x4.splat(0), s3 = f32x4.splat(0);
    let s4 = f32x4.splat(0), s5 = f32x4.splat(0), s6 = f32x4.splat(0), s7 = f32x4.splat(0);
    let bp = b + <usize>j * 4;
    for (let k = 0; k < K; k++) {
      const av = v128.load32_splat(arow + <usize>k * 4);
      s0 = fma(av, v128.load(bp), s0); s1 = fma(av, v128.load(bp, 16), s1);
      s2 = fma(av, v128.load(bp, 32), s2); s3 = fma(av, v128.load(bp, 48), s3);
      s4 = fma(av, v128.load(bp, 64), s4); s5 = fma(av, v128.load(bp, 80), s5);
      s6 = fma(av, v128.load(bp, 96), s6); s7 = fma(av, v128.load(bp, 112), s7);
      bp += ldb;
    }
    const o = crow + <usize>j * 4;
    if (accumulate) {
      v128.store(o, fma(s0, va, v128.load(o))); v128.store(o, fma(s1, va, v128.load(o, 16)), 16);
      v128.store(o, fma(s2, va, v128.load(o, 32)), 32); v128.store(o, fma(s3, va, v128.load(o, 48)), 48);
      v128.store(o, fma(s4, va, v128.load(o, 64)), 64); v128.store(o, fma(s5, va, v128.load(o, 80)), 80);
      v128.store(o, fma(s6, va, v128.load(o, 96)), 96); v128.store(o, fma(s7, va, v128.load(o, 112)), 112);
    } else {
      v128.store(o, f32x4.mul(s0, va)); v128.store(o, f32x4.mul(s1, va), 16);
      v128.store(o, f32x4.mul(s2, va), 32); v128.store(o, f32x4.mul(s3, va), 48);
      v128.store(o, f32x4.mul(s4, va), 64); v128.store(o, f32x4.mul(s5, va), 80);
      v128.store(o, f32x4.mul(s6, va), 96); v128.store(o, f32x4.mul(s7, va), 112);
    }
  }
  for (; j + 4 <= n1; j += 4) {
    let s = f32x4.splat(0);
    let bp = b + <usize>j * 4;
    for (let k = 0; k < K; k++) { s = fma(v128.load32_splat(arow + <usize>k * 4), v128.load(bp), s); bp += ldb; }
    const o = crow + <usize>j * 4;
    v128.store(o, accumulate ? fma(s, va, v128.load(o)) : f32x4.mul(s, va));
  }
  for (; j < n1; j++) {
    let s: f32 = 0;
    let bp = b + <usize>j * 4;
    for (let k = 0; k < K; k++) { s += load<f32>(arow + <usize>k * 4) * load<f32>(bp); bp += ldb; }
    const o = crow + <usize>j * 4;
    store<f32>(o, accumulate ? load<f32>(o) + alpha * s : alpha * s);
  }
}

// Σ_k x[k]·y[k] over contiguous vectors, two SIMD accumulators, fixed summation order.
// @ts-ignore: decorator
@inline function dot(x: usize, y: usize, K: i32): f32 {
  let s0 = f32x4.splat(0), s1 = f32x4.splat(0);
  let k = 0;
  for (; k + 8 <= K; k += 8) {
    const o = <usize>k * 4;
    s0 = fma(v128.load(x + o), v128.load(y + o), s0);
    s1 = fma(v128.load(x + o, 16), v128.load(y + o, 16), s1);
  }
  for (; k + 4 <= K; k += 4) { const o = <usize>k * 4; s0 = fma(v128.load(x + o), v128.load(y + o), s0); }
  let s = hsum(f32x4.add(s0, s1));
  for (; k < K; k++) s += load<f32>(x + <usize>k * 4) * load<f32>(y + <usize>k * 4);
  return s;
}

/**
 * C[b] (+)= alpha · op(A[b]) · op(B[b]) for M ≤ SMALL_M. Work items are (batch, 256-column block), claimed from
 * `counter`. op(A) rows are copied to `ws` (M·K floats) when A is stored transposed.
 */
export function matmulSmallM(nthreads: i32, a: usize, b: usize, c: usize, batch: i32, M: i32, N: i32, K: i32,
  strideA: i32, strideB: i32, strideC: i32, transA: bool, transB: bool, alpha: f32, accumulate: bool, ws: usize, counter: usize): void {
  const blocks = (N + COLS - 1) / COLS;
  const items = batch * blocks;
  for (let item = claim(counter, 1, items); item < items; item = claim(counter, 1, items)) {
    const bi = item / blocks;
    const n0 = (item % blocks) * COLS, n1 = min(N, n0 + COLS);
    const ab = a + <usize>bi * <usize>strideA * 4, bb = b + <usize>bi * <usize>strideB * 4, cb = c + <usize>bi * <usize>strideC * 4;
    let arows = ab;
    if (transA) {
      // op(A)[i][k] = A[k][i] with A stored K×M.
      for (let i = 0; i < M; i++) {
        for (let k = 0; k < K; k++) store<f32>(ws + (<usize>i * <usize>K + <usize>k) * 4, load<f32>(ab + (<usize>k * <usize>M + <usize>i) * 4));
      }
      arows = ws;
    }
    if (K == 0) {
      if (!accumulate) for (let i = 0; i < M; i++) memory.fill(cb + (<usize>i * <usize>N + <usize>n0) * 4, 0, <usize>(n1 - n0) * 4);
      continue;
    }
    if (!transB) {
      for (let i = 0; i < M; i++) {
        rowTimesMatrix(arows + <usize>i * <usize>K * 4, bb, N, K, n0, n1, cb + <usize>i * <usize>N * 4, alpha, accumulate);
      }
    } else {
      // B stored N×K: C[i][n] = dot(op(A)[i], B[n]); the B row stays in L1 across the M rows.
      for (let n = n0; n < n1; n++) {
        const brow = bb + <usize>n * <usize>K * 4;
        for (let i = 0; i < M; i++) {
          const v = alpha * dot(arows + <usize>i * <usize>K * 4, brow, K);
          const o = cb + (<usize>i * <usize>N + <usize>n) * 4;
          store<f32>(o, accumulate ? load<f32>(o) + v : v);
        }
      }
    }
  }
}
