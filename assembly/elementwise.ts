// Elementwise kernels over n contiguous floats. Threads claim chunks of CHUNK elements from `counter` (zeroed by
// the runtime before each job), so a descheduled thread never holds the others up.
import { CHUNK, claim, expv, fma, rowChunk } from './simd';

/** out = a + b */
export function add(tid: i32, nthreads: i32, a: usize, b: usize, out: usize, n: i32, counter: usize): void {
  for (let s = claim(counter, CHUNK, n); s < n; s = claim(counter, CHUNK, n)) {
    const e = min(n, s + CHUNK);
    let i = s;
    for (; i + 4 <= e; i += 4) { const o = <usize>i * 4; v128.store(out + o, f32x4.add(v128.load(a + o), v128.load(b + o))); }
    for (; i < e; i++) { const o = <usize>i * 4; store<f32>(out + o, load<f32>(a + o) + load<f32>(b + o)); }
  }
}

/** out = a − b */
export function sub(tid: i32, nthreads: i32, a: usize, b: usize, out: usize, n: i32, counter: usize): void {
  for (let s = claim(counter, CHUNK, n); s < n; s = claim(counter, CHUNK, n)) {
    const e = min(n, s + CHUNK);
    let i = s;
    for (; i + 4 <= e; i += 4) { const o = <usize>i * 4; v128.store(out + o, f32x4.sub(v128.load(a + o), v128.load(b + o))); }
    for (; i < e; i++) { const o = <usize>i * 4; store<f32>(out + o, load<f32>(a + o) - load<f32>(b + o)); }
  }
}

/** out = a ⊙ b */
export function mul(tid: i32, nthreads: i32, a: usize, b: usize, out: usize, n: i32, counter: usize): void {
  for (let s = claim(counter, CHUNK, n); s < n; s = claim(counter, CHUNK, n)) {
    const e = min(n, s + CHUNK);
    let i = s;
    for (; i + 4 <= e; i += 4) { const o = <usize>i * 4; v128.store(out + o, f32x4.mul(v128.load(a + o), v128.load(b + o))); }
    for (; i < e; i++) { const o = <usize>i * 4; store<f32>(out + o, load<f32>(a + o) * load<f32>(b + o)); }
  }
}

/** out = k · x */
export function scale(tid: i32, nthreads: i32, x: usize, out: usize, n: i32, k: f32, counter: usize): void {
  for (let s = claim(counter, CHUNK, n); s < n; s = claim(counter, CHUNK, n)) {
    const e = min(n, s + CHUNK);
    const vs = f32x4.splat(k);
    let i = s;
    for (; i + 4 <= e; i += 4) { const o = <usize>i * 4; v128.store(out + o, f32x4.mul(v128.load(x + o), vs)); }
    for (; i < e; i++) { const o = <usize>i * 4; store<f32>(out + o, load<f32>(x + o) * k); }
  }
}

/** y += alpha · x */
export function axpy(tid: i32, nthreads: i32, y: usize, x: usize, n: i32, alpha: f32, counter: usize): void {
  for (let s = claim(counter, CHUNK, n); s < n; s = claim(counter, CHUNK, n)) {
    const e = min(n, s + CHUNK);
    const va = f32x4.splat(alpha);
    let i = s;
    for (; i + 4 <= e; i += 4) { const o = <usize>i * 4; v128.store(y + o, fma(v128.load(x + o), va, v128.load(y + o))); }
    for (; i < e; i++) { const o = <usize>i * 4; store<f32>(y + o, load<f32>(y + o) + alpha * load<f32>(x + o)); }
  }
}

/** out = v everywhere */
export function fill(tid: i32, nthreads: i32, out: usize, n: i32, v: f32, counter: usize): void {
  for (let s = claim(counter, CHUNK, n); s < n; s = claim(counter, CHUNK, n)) {
    const e = min(n, s + CHUNK);
    const vv = f32x4.splat(v);
    let i = s;
    for (; i + 4 <= e; i += 4) v128.store(out + <usize>i * 4, vv);
    for (; i < e; i++) store<f32>(out + <usize>i * 4, v);
  }
}

/** out = exp(x) */
export function exp(tid: i32, nthreads: i32, x: usize, out: usize, n: i32, counter: usize): void {
  for (let s = claim(counter, CHUNK, n); s < n; s = claim(counter, CHUNK, n)) {
    const e = min(n, s + CHUNK);
    let i = s;
    for (; i + 4 <= e; i += 4) { const o = <usize>i * 4; v128.store(out + o, expv(v128.load(x + o))); }
    for (; i < e; i++) { const o = <usize>i * 4; store<f32>(out + o, f32x4.extract_lane(expv(f32x4.splat(load<f32>(x + o))), 0)); }
  }
}

/** out[r][c] = x[r][c] + bias[c]; threads claim chunks of rows. */
export function addBias(tid: i32, nthreads: i32, x: usize, bias: usize, out: usize, rows: i32, cols: i32, counter: usize): void {
  const chunk = rowChunk(rows, cols, nthreads);
  for (let r0 = claim(counter, chunk, rows); r0 < rows; r0 = claim(counter, chunk, rows)) {
    const r1 = min(rows, r0 + chunk);
    for (let r = r0; r < r1; r++) {
      const xr = x + <usize>r * <usize>cols * 4, orow = out + <usize>r * <usize>cols * 4;
      let c = 0;
      for (; c + 4 <= cols; c += 4) { const o = <usize>c * 4; v128.store(orow + o, f32x4.add(v128.load(xr + o), v128.load(bias + o))); }
      for (; c < cols; c++) { const o = <usize>c * 4; store<f32>(orow + o, load<f32>(xr + o) + load<f32>(bias + o)); }
    }
  }
}
