// RMSNorm: y = x · rstd · w with rstd = 1/sqrt(mean(x²) + eps), per row.
import { claim, fma, hsum, rowChunk, shareStart } from './simd';

/** y[r] = x[r] · rstd[r] · w; also stores rstd[r] for the backward pass. */
export function rmsnorm(tid: i32, nthreads: i32, x: usize, w: usize, y: usize, rstd: usize, rows: i32, cols: i32, eps: f32, counter: usize): void {
  const chunk = rowChunk(rows, cols, nthreads);
  for (let r0 = claim(counter, chunk, rows); r0 < rows; r0 = claim(counter, chunk, rows)) {
    const r1 = min(rows, r0 + chunk);
    for (let r = r0; r < r1; r++) {
      const off = <usize>r * <usize>cols * 4;
      const xr = x + off, yr = y + off;
      let acc = f32x4.splat(0);
      let c = 0;
      for (; c + 4 <= cols; c += 4) { const v = v128.load(xr + <usize>c * 4); acc = fma(v, v, acc); }
      let ss = hsum(acc);
      for (; c < cols; c++) { const v = load<f32>(xr + <usize>c * 4); ss += v * v; }
      const s: f32 = 1.0 / Mathf.sqrt(ss / <f32>cols + eps);
      store<f32>(rstd + <usize>r * 4, s);
      const vs = f32x4.splat(s);
      c = 0;
      for (; c + 4 <= cols; c += 4) {
        const o = <usize>c * 4;
        v128.store(yr + o, f32x4.mul(f32x4.mul(v128.load(xr + o), vs), v128.load(w + o)));
      }
      for (; c < cols; c++) { const o = <usize>c * 4; store<f32>(yr + o, load<f32>(xr + o) * s * load<f32>(w + o)); }
    }
  }
}

/** dx[r] = rstd·(dy⊙w) − x · rstd³ · mean(dy⊙w⊙x), per row. */
export function rmsnormBackward(tid: i32, nthreads: i32, dy: usize, x: usize, w: usize, rstd: usize, dx: usize, rows: i32, cols: i32, counter: usize): void {
  const chunk = rowChunk(rows, cols, nthreads);
  for (let r0 = claim(counter, chunk, rows); r0 < rows; r0 = claim(counter, chunk, rows)) {
    const r1 = min(rows, r0 + chunk);
    for (let r = r0; r < r1; r++) {
      const off = <usize>r * <usize>cols * 4;
      const xr = x + off, gr = dy + off, dr = dx + off;
      let acc = f32x4.splat(0);
      let c = 0;
      for (; c + 4 <= cols; c += 4) {
        const o = <usize>c * 4;
        acc = fma(f32x4.mul(v128.load(gr + o), v128.load(w + o)), v128.load(xr + o), acc);
      }
      let dot = hsum(acc);
      for (; c < cols; c++) { const o = <usize>c * 4; dot += load<f32>(gr + o) * load<f32>(w + o) * load<f32>(xr + o); }
      const s = load<f32>(rstd + <usize>r * 4);
      const k: f32 = s * s * s * dot / <f32>cols;
      const vs = f32x4.splat(s), vk = f32x4.splat(k);
      c = 0;
      for (; c + 4 <= cols; c += 4) {
        const o = <usize>c * 4;
        v128.store(dr + o, f32x4.sub(f32x4.mul(f32x4.mul(v128.load(gr + o), v128.load(w + o)), vs), f32x4.mul(v128.load(xr + o), vk)));
      }
      for (; c < cols; c++) { const o = <usize>c * 4; store<f32>(dr + o, load<f32>(gr + o) * load<f32>(w + o) * s - load<f32>(xr + o) * k); }
    }
  }
}

/** dw[c] (+)= Σ_r dy[r][c] · x[r][c] · rstd[r]. Threads split columns. */
export function rmsnormWeightGrad(tid: i32, nthreads: i32, dy: usize, x: usize, rstd: usize, dw: usize, rows: i32, cols: i32, accumulate: i32): void {
  const c0 = shareStart(tid, nthreads, cols, 4), c1 = shareStart(tid + 1, nthreads, cols, 4);
  if (accumulate == 0) memory.fill(dw + <usize>c0 * 4, 0, <usize>(c1 - c0) * 4);
  const stride = <usize>cols * 4;
  let c = c0;
  for (; c + 8 <= c1; c += 8) {
    let a0 = f32x4.splat(0), a1 = f32x4.splat(0);
    let pg = dy + <usize>c * 4, px = x + <usize>c * 4;
    for (let r = 0; r < rows; r++) {
      const s = v128.load32_splat(rstd + <usize>r * 4);
      a0 = fma(f32x4.mul(v128.load(pg), v128.load(px)), s, a0);
      a1 = fma(f32x4.mul(v128.load(pg, 16), v128.load(px, 16)), s, a1);
      pg += stride; px += stride;
    }
    const o = dw + <usize>c * 4;
    v128.store(o, f32x4.add(v128.load(o), a0)); v128.store(o, f32x4.add(v128.load(o, 16), a1), 16);
  }
  for (; c < c1; c++) {
    let sum: f32 = 0;
    let pg = dy + <usize>c * 4, px = x + <usize>c * 4;
    for (let r = 0; r < rows; r++) { sum += load<f32>(pg) * load<f32>(px) * load<f32>(rstd + <usize>r * 4); pg += stride; px += stride; }
    store<f32>(dw + <usize>c * 4, load<f32>(dw + <usize>c * 4) + sum);
  }
}
