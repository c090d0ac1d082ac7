// Reductions: along the last axis (threads claim chunks of rows), over columns (threads split columns), and sum of squares.
import { claim, hmax, hsum, rowChunk, shareStart } from './simd';

// @ts-ignore: decorator
@inline function rowSumOf(p: usize, cols: i32): f32 {
  let acc = f32x4.splat(0);
  let c = 0;
  for (; c + 4 <= cols; c += 4) acc = f32x4.add(acc, v128.load(p + <usize>c * 4));
  let s = hsum(acc);
  for (; c < cols; c++) s += load<f32>(p + <usize>c * 4);
  return s;
}

/** out[r] = scale · Σ_c x[r][c]  (scale = 1 for a sum, 1/cols for a mean) */
export function rowSum(tid: i32, nthreads: i32, x: usize, out: usize, rows: i32, cols: i32, scale: f32, counter: usize): void {
  const chunk = rowChunk(rows, cols, nthreads);
  for (let r0 = claim(counter, chunk, rows); r0 < rows; r0 = claim(counter, chunk, rows)) {
    const r1 = min(rows, r0 + chunk);
    for (let r = r0; r < r1; r++) store<f32>(out + <usize>r * 4, rowSumOf(x + <usize>r * <usize>cols * 4, cols) * scale);
  }
}

/** out[r] = max_c x[r][c] (−∞ for an empty row; NaN propagates) */
export function rowMax(tid: i32, nthreads: i32, x: usize, out: usize, rows: i32, cols: i32, counter: usize): void {
  const chunk = rowChunk(rows, cols, nthreads);
  for (let r0 = claim(counter, chunk, rows); r0 < rows; r0 = claim(counter, chunk, rows)) {
    const r1 = min(rows, r0 + chunk);
    for (let r = r0; r < r1; r++) {
      const p = x + <usize>r * <usize>cols * 4;
      let acc = f32x4.splat(-Infinity);
      let c = 0;
      for (; c + 4 <= cols; c += 4) acc = f32x4.max(acc, v128.load(p + <usize>c * 4));
      let m = hmax(acc);
      for (; c < cols; c++) m = max(m, load<f32>(p + <usize>c * 4));
      store<f32>(out + <usize>r * 4, m);
    }
  }
}

/** out[c] (+)= Σ_r x[r][c]: the bias gradient. Threads split columns. */
export function colSum(tid: i32, nthreads: i32, x: usize, out: usize, rows: i32, cols: i32, accumulate: i32): void {
  const c0 = shareStart(tid, nthreads, cols, 4), c1 = shareStart(tid + 1, nthreads, cols, 4);
  if (accumulate == 0) memory.fill(out + <usize>c0 * 4, 0, <usize>(c1 - c0) * 4);
  const stride = <usize>cols * 4;
  let c = c0;
  // Four column-quads per pass keep four accumulators in registers while streaming down the rows.
  for (; c + 16 <= c1; c += 16) {
    let a0 = f32x4.splat(0), a1 = f32x4.splat(0), a2 = f32x4.splat(0), a3 = f32x4.splat(0);
    let p = x + <usize>c * 4;
    for (let r = 0; r < rows; r++) {
      a0 = f32x4.add(a0, v128.load(p)); a1 = f32x4.add(a1, v128.load(p, 16));
      a2 = f32x4.add(a2, v128.load(p, 32)); a3 = f32x4.add(a3, v128.load(p, 48));
      p += stride;
    }
    const o = out + <usize>c * 4;
    v128.store(o, f32x4.add(v128.load(o), a0)); v128.store(o, f32x4.add(v128.load(o, 16), a1), 16);
    v128.store(o, f32x4.add(v128.load(o, 32), a2), 32); v128.store(o, f32x4.add(v128.load(o, 48), a3), 48);
  }
  for (; c < c1; c++) {
    let s: f32 = 0;
    let p = x + <usize>c * 4;
    for (let r = 0; r < rows; r++) { s += load<f32>(p); p += stride; }
    store<f32>(out + <usize>c * 4, load<f32>(out + <usize>c * 4) + s);
  }
}

/** partials[tid] = Σ x² over this thread's share, as f64 (blocks of 1024 are summed in f32 lanes first). */
export function sumSquares(tid: i32, nthreads: i32, x: usize, n: i32, partials: usize): void {
  const s = shareStart(tid, nthreads, n, 4), e = shareStart(tid + 1, nthreads, n, 4);
  let total: f64 = 0;
  let i = s;
  while (i + 4 <= e) {
    const stop = min(e, i + 1024);
    let acc = f32x4.splat(0);
    for (; i + 4 <= stop; i += 4) { const v = v128.load(x + <usize>i * 4); acc = f32x4.add(acc, f32x4.mul(v, v)); }
    total += <f64>hsum(acc);
  }
  for (; i < e; i++) { const v = <f64>load<f32>(x + <usize>i * 4); total += v * v; }
  store<f64>(partials + <usize>tid * 8, total);
}
