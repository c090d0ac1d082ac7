// Softmax, log-softmax and cross-entropy along the last axis; threads claim chunks of rows (`counter`, zeroed by
// the runtime before each job), so the result of a row never depends on which thread computed it.
import { claim, expv, exps, fma, hmax, hsum, rowChunk } from './simd';

// @ts-ignore: decorator
@inline function rowMaxOf(p: usize, cols: i32): f32 {
  let acc = f32x4.splat(-Infinity);
  let c = 0;
  for (; c + 4 <= cols; c += 4) acc = f32x4.max(acc, v128.load(p + <usize>c * 4));
  let m = hmax(acc);
  for (; c < cols; c++) m = max(m, load<f32>(p + <usize>c * 4));
  return m;
}

// Writes exp(x − m) to y (may alias x) and returns its sum.
// @ts-ignore: decorator
@inline function expShiftSum(x: usize, y: usize, cols: i32, m: f32): f32 {
  const vm = f32x4.splat(m);
  let acc = f32x4.splat(0);
  let c = 0;
  for (; c + 4 <= cols; c += 4) {
    const e = expv(f32x4.sub(v128.load(x + <usize>c * 4), vm));
    v128.store(y + <usize>c * 4, e);
    acc = f32x4.add(acc, e);
  }
  let s = hsum(acc);
  for (; c < cols; c++) { const e = exps(load<f32>(x + <usize>c * 4) - m); store<f32>(y + <usize>c * 4, e); s += e; }
  return s;
}

// Σ exp(x − m) without storing.
// @ts-ignore: decorator
@inline function expShiftSumOnly(x: usize, cols: i32, m: f32): f32 {
  const vm = f32x4.splat(m);
  let acc = f32x4.splat(0);
  let c = 0;
  for (; c + 4 <= cols; c += 4) acc = f32x4.add(acc, expv(f32x4.sub(v128.load(x + <usize>c * 4), vm)));
  let s = hsum(acc);
  for (; c < cols; c++) s += exps(load<f32>(x + <usize>c * 4) - m);
  return s;
}

/** y = softmax(x) per row (y may alias x). */
export function softmax(tid: i32, nthreads: i32, x: usize, y: usize, rows: i32, cols: i32, counter: usize): void {
  const chunk = rowChunk(rows, cols, nthreads);
  for (let r0 = claim(counter, chunk, rows); r0 < rows; r0 = claim(counter, chunk, rows)) {
    const r1 = min(rows, r0 + chunk);
    for (let r = r0; r < r1; r++) {
      const xr = x + <usize>r * <usize>cols * 4, yr = y + <usize>r * <usize>cols * 4;
      const s = expShiftSum(xr, yr, cols, rowMaxOf(xr, cols));
      const inv: f32 = 1.0 / s, vi = f32x4.splat(inv);
      let c = 0;
      for (; c + 4 <= cols; c += 4) v128.store(yr + <usize>c * 4, f32x4.mul(v128.load(yr + <usize>c * 4), vi));
      for (; c < cols; c++) store<f32>(yr + <usize>c * 4, load<f32>(yr + <usize>c * 4) * inv);
    }
  }
}

/** dx = y ⊙ (dy − Σ dy⊙y) per row, for y = softmax(x). */
export function softmaxBackward(tid: i32, nthreads: i32, y: usize, dy: usize, dx: usize, rows: i32, cols: i32, counter: usize): void {
  const chunk = rowChunk(rows, cols, nthreads);
  for (let r0 = claim(counter, chunk, rows); r0 < rows; r0 = claim(counter, chunk, rows)) {
    const r1 = min(rows, r0 + chunk);
    for (let r = r0; r < r1; r++) {
      const off = <usize>r * <usize>cols * 4;
      const yr = y + off, gr = dy + off, dr = dx + off;
      let acc = f32x4.splat(0);
      let c = 0;
      for (; c + 4 <= cols; c += 4) acc = fma(v128.load(yr + <usize>c * 4), v128.load(gr + <usize>c * 4), acc);
      let dot = hsum(acc);
      for (; c < cols; c++) dot += load<f32>(yr + <usize>c * 4) * load<f32>(gr + <usize>c * 4);
      const vd = f32x4.splat(dot);
      c = 0;
      for (; c + 4 <= cols; c += 4) {
        const o = <usize>c * 4;
        v128.store(dr + o, f32x4.mul(v128.load(yr + o), f32x4.sub(v128.load(gr + o), vd)));
      }
      for (; c < cols; c++) { const o = <usize>c * 4; store<f32>(dr + o, load<f32>(yr + o) * (load<f32>(gr + o) - dot)); }
    }
  }
}

/** y = x − logsumexp(x) per row (y may alias x). */
export function logSoftmax(tid: i32, nthreads: i32, x: usize, y: usize, rows: i32, cols: i32, counter: usize): void {
  const chunk = rowChunk(rows, cols, nthreads);
  for (let r0 = claim(counter, chunk, rows); r0 < rows; r0 = claim(counter, chunk, rows)) {
    const r1 = min(rows, r0 + chunk);
    for (let r = r0; r < r1; r++) {
      const xr = x + <usize>r * <usize>cols * 4, yr = y + <usize>r * <usize>cols * 4;
      const m = rowMaxOf(xr, cols);
      const lse = m + Mathf.log(expShiftSumOnly(xr, cols, m));
      const vl = f32x4.splat(lse);
      let c = 0;
      for (; c + 4 <= cols; c += 4) v128.store(yr + <usize>c * 4, f32x4.sub(v128.load(xr + <usize>c * 4), vl));
      for (; c < cols; c++) store<f32>(yr + <usize>c * 4, load<f32>(xr + <usize>c * 4) - lse);
    }
  }
}

/** dx = dy − exp(y) · Σ dy per row, for y = logSoftmax(x). */
export function logSoftmaxBackward(tid: i32, nthreads: i32, y: usize, dy: usize, dx: usize, rows: i32, cols: i32, counter: usize): void {
  const chunk = rowChunk(rows, cols, nthreads);
  for (let r0 = claim(counter, chunk, rows); r0 < rows; r0 = claim(counter, chunk, rows)) {
    const r1 = min(rows, r0 + chunk);
    for (let r = r0; r < r1; r++) {
      const off = <usize>r * <usize>cols * 4;
      const yr = y + off, gr = dy + off, dr = dx + off;
      let acc = f32x4.splat(0);
      let c = 0;
      for (; c + 4 <= cols; c += 4) acc = f32x4.add(acc, v128.load(gr + <usize>c * 4));
      let s = hsum(acc);
      for (; c < cols; c++) s += load<f32>(gr + <usize>c * 4);
      const vs = f32x4.splat(s);
      c = 0;
      for (; c + 4 <= cols; c += 4) {
        const o = <usize>c * 4;
        v128.store(dr + o, f32x4.sub(v128.load(gr + o), f32x4.mul(expv(v128.load(yr + o)), vs)));
      }
      for (; c < cols; c++) { const o = <usize>c * 4; store<f32>(dr + o, load<f32>(gr + o) - exps(load<f32>(yr + o)) * s); }
    }
  }
}

/**
 * Cross-entropy with logits: lse[r] = logsumexp(x[r]), loss[r] = lse[r] − x[r][target[r]].
 * A negative target marks an ignored row (loss 0). targets are i32.
 */
export function crossEntropy(tid: i32, nthreads: i32, x: usize, targets: usize, loss: usize, lse: usize, rows: i32, cols: i32, counter: usize): void {
  const chunk = rowChunk(rows, cols, nthreads);
  for (let r0 = claim(counter, chunk, rows); r0 < rows; r0 = claim(counter, chunk, rows)) {
    const r1 = min(rows, r0 + chunk);
    for (let r = r0; r < r1; r++) {
      const xr = x + <usize>r * <usize>cols * 4;
      const m = rowMaxOf(xr, cols);
      const l = m + Mathf.log(expShiftSumOnly(xr, cols, m));
      store<f32>(lse + <usize>r * 4, l);
      const t = load<i32>(targets + <usize>r * 4);
      store<f32>(loss + <usize>r * 4, t < 0 ? 0 : l - load<f32>(xr + <usize>t * 4));
    }
  }
}

/** dx[r] = (softmax(x[r]) − onehot(target[r])) · dloss[r]; ignored rows get 0. */
export function crossEntropyBackward(tid: i32, nthreads: i32, x: usize, targets: usize, lse: usize, dloss: usize, dx: usize,
  rows: i32, cols: i32, counter: usize): void {
  const chunk = rowChunk(rows, cols, nthreads);
  for (let r0 = claim(counter, chunk, rows); r0 < rows; r0 = claim(counter, chunk, rows)) {
    const r1 = min(rows, r0 + chunk);
    for (let r = r0; r < r1; r++) {
      const off = <usize>r * <usize>cols * 4;
      const xr = x + off, dr = dx + off;
      const t = load<i32>(targets + <usize>r * 4);
      if (t < 0) { memory.fill(dr, 0, <usize>cols * 4); continue; }
      const g = load<f32>(dloss + <usize>r * 4), l = load<f32>(lse + <usize>r * 4);
      const vg = f32x4.splat(g), vl = f32x4.splat(l);
      let c = 0;
      for (; c + 4 <= cols; c += 4) {
        const o = <usize>c * 4;
        v128.store(dr + o, f32x4.mul(expv(f32x4.sub(v128.load(xr + o), vl)), vg));
      }
      for (; c < cols; c++) { const o = <usize>c * 4; store<f32>(dr + o, exps(load<f32>(xr + o) - l) * g); }
      store<f32>(dr + <usize>t * 4, load<f32>(dr + <usize>t * 4) - g);
    }
  }
}
