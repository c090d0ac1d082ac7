// Shared helpers for the kernels (not re-exported from index.ts, so nothing here becomes a Wasm export).
// `RELAXED` is defined only in the relaxed-SIMD build (scripts/build-wasm.mjs passes --use RELAXED=1).

/** a * b + c, fused in the relaxed build. */
// @ts-ignore: decorator
@inline export function fma(a: v128, b: v128, c: v128): v128 {
  if (isDefined(RELAXED)) return f32x4.relaxed_madd(a, b, c);
  return f32x4.add(f32x4.mul(a, b), c);
}

/** Start of thread `tid`'s share when `n` items are split into `nthreads` chunks that are multiples of `align`. */
// @ts-ignore: decorator
@inline export function shareStart(tid: i32, nthreads: i32, n: i32, align: i32): i32 {
  const per = ((n + nthreads - 1) / nthreads + align - 1) / align * align;
  const s = tid * per;
  return s < n ? s : n;
}

/**
 * Dynamic split: claims the next chunk of `chunk` items from the shared i32 `counter` (zeroed by the runtime
 * before each job) and returns its first item, or `n` when the work is used up.
 */
// @ts-ignore: decorator
@inline export function claim(counter: usize, chunk: i32, n: i32): i32 {
  const c = atomic.add<i32>(counter, 1);
  return c < (n + chunk - 1) / chunk ? c * chunk : n;
}

/** Elements per claimed chunk for elementwise kernels (64 KiB of floats; a multiple of 4). */
export const CHUNK: i32 = 16384;

/** Rows per claimed chunk for a row kernel: about 8K elements, and at least 4 chunks per thread when possible. */
// @ts-ignore: decorator
@inline export function rowChunk(rows: i32, cols: i32, nthreads: i32): i32 {
  const bySize = max(1, 8192 / max(cols, 1));
  const byBalance = max(1, rows / (4 * nthreads));
  return min(bySize, byBalance);
}

/** Horizontal sum of the four lanes. */
// @ts-ignore: decorator
@inline export function hsum(v: v128): f32 {
  return f32x4.extract_lane(v, 0) + f32x4.extract_lane(v, 1) + f32x4.extract_lane(v, 2) + f32x4.extract_lane(v, 3);
}

/** Horizontal max of the four lanes (NaN propagates). */
// @ts-ignore: decorator
@inline export function hmax(v: v128): f32 {
  const a = f32x4.extract_lane(v, 0), b = f32x4.extract_lane(v, 1), c = f32x4.extract_lane(v, 2), d = f32x4.extract_lane(v, 3);
  return max(max(a, b), max(c, d));
}

/**
 * exp(x) for four lanes: range reduction x = n·ln2 + r with |r| ≤ ln2/2, a degree-6 polynomial for e^r, then
 * scaling by 2^n through the exponent bits. Relative error ≈ 2 ulp. Inputs below −87.3 give 0 (so −∞ → 0),
 * above 88.7 give +∞, NaN stays NaN.
 */
// @ts-ignore: decorator
@inline export function expv(x: v128): v128 {
  const lo = f32x4.splat(-87.33654), hi = f32x4.splat(88.72283);
  const xc = f32x4.min(f32x4.max(x, lo), hi);
  const n = f32x4.nearest(f32x4.mul(xc, f32x4.splat(1.44269504)));
  let r = f32x4.sub(xc, f32x4.mul(n, f32x4.splat(0.693359375)));
  r = f32x4.sub(r, f32x4.mul(n, f32x4.splat(-2.12194440e-4)));
  let p = f32x4.splat(1.9875691500e-4);
  p = fma(p, r, f32x4.splat(1.3981999507e-3));
  p = fma(p, r, f32x4.splat(8.3334519073e-3));
  p = fma(p, r, f32x4.splat(4.1665795894e-2));
  p = fma(p, r, f32x4.splat(1.6666665459e-1));
  p = fma(p, r, f32x4.splat(5.0000001201e-1));
  p = fma(p, f32x4.mul(r, r), f32x4.add(r, f32x4.splat(1.0)));
  // 2^n split in two factors so that n = −127 (for x near the lower clamp) still has a normal exponent.
  const ni = i32x4.trunc_sat_f32x4_s(n);
  const h = i32x4.shr_s(ni, 1);
  const s1 = i32x4.shl(i32x4.add(h, i32x4.splat(127)), 23);
  const s2 = i32x4.shl(i32x4.add(i32x4.sub(ni, h), i32x4.splat(127)), 23);
  let y = f32x4.mul(f32x4.mul(p, s1), s2);
  y = v128.bitselect(f32x4.splat(0.0), y, f32x4.lt(x, lo));
  y = v128.bitselect(f32x4.splat(Infinity), y, f32x4.gt(x, hi));
  return y;
}

/** Scalar exp with the same algorithm (for row tails), so a row's result does not depend on its length mod 4. */
// @ts-ignore: decorator
@inline export function exps(x: f32): f32 {
  return f32x4.extract_lane(expv(f32x4.splat(x)), 0);
}
