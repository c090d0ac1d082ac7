// SiLU and the (optionally clamped) SwiGLU used by gpt-oss, with their backward passes.
import { CHUNK, claim, expv } from './simd';

// @ts-ignore: decorator
@inline function sigmoidv(z: v128): v128 {
  return f32x4.div(f32x4.splat(1.0), f32x4.add(f32x4.splat(1.0), expv(f32x4.neg(z))));
}

// The loops below run the SIMD body on a 4-lane buffer for the tail, so tails and bodies round identically.
// @ts-ignore: decorator
@inline function loadTail(p: usize, count: i32): v128 {
  let v = f32x4.splat(0);
  if (count > 0) v = f32x4.replace_lane(v, 0, load<f32>(p));
  if (count > 1) v = f32x4.replace_lane(v, 1, load<f32>(p, 4));
  if (count > 2) v = f32x4.replace_lane(v, 2, load<f32>(p, 8));
  return v;
}
// @ts-ignore: decorator
@inline function storeTail(p: usize, v: v128, count: i32): void {
  if (count > 0) store<f32>(p, f32x4.extract_lane(v, 0));
  if (count > 1) store<f32>(p, f32x4.extract_lane(v, 1), 4);
  if (count > 2) store<f32>(p, f32x4.extract_lane(v, 2), 8);
}

// @ts-ignore: decorator
@inline function siluv(x: v128): v128 { return f32x4.mul(x, sigmoidv(x)); }

// @ts-ignore: decorator
@inline function siluGradv(x: v128, dy: v128): v128 {
  const s = sigmoidv(x);
  // d/dx x·σ(x) = σ(x)·(1 + x·(1 − σ(x)))
  return f32x4.mul(dy, f32x4.mul(s, f32x4.add(f32x4.splat(1.0), f32x4.mul(x, f32x4.sub(f32x4.splat(1.0), s)))));
}

/** out = x · σ(x) */
export function silu(tid: i32, nthreads: i32, x: usize, out: usize, n: i32, counter: usize): void {
  for (let s = claim(counter, CHUNK, n); s < n; s = claim(counter, CHUNK, n)) {
    const e = min(n, s + CHUNK);
    let i = s;
    for (; i + 4 <= e; i += 4) { const o = <usize>i * 4; v128.store(out + o, siluv(v128.load(x + o))); }
    if (i < e) { const o = <usize>i * 4; storeTail(out + o, siluv(loadTail(x + o, e - i)), e - i); }
  }
}

/** dx = dy · silu'(x) */
export function siluBackward(tid: i32, nthreads: i32, x: usize, dy: usize, dx: usize, n: i32, counter: usize): void {
  for (let s = claim(counter, CHUNK, n); s < n; s = claim(counter, CHUNK, n)) {
    const e = min(n, s + CHUNK);
    let i = s;
    for (; i + 4 <= e; i += 4) { const o = <usize>i * 4; v128.store(dx + o, siluGradv(v128.load(x + o), v128.load(dy + o))); }
    if (i < e) { const o = <usize>i * 4; storeTail(dx + o, siluGradv(loadTail(x + o, e - i), loadTail(dy + o, e - i)), e - i); }
  }
}

// g' = min(gate, limit), u' = clamp(up, −limit, limit); out = g'·σ(alpha·g')·(u' + upBias)
// @ts-ignore: decorator
@inline function swigluv(g: v128, u: v128, alpha: v128, limit: v128, upBias: v128): v128 {
  const gc = f32x4.min(g, limit);
  const uc = f32x4.max(f32x4.min(u, limit), f32x4.neg(limit));
  return f32x4.mul(f32x4.mul(gc, sigmoidv(f32x4.mul(alpha, gc))), f32x4.add(uc, upBias));
}

/** out = swiglu(gate, up) with gpt-oss's clamp (limit = +∞ disables it) and up-bias (+1 in gpt-oss). */
export function swiglu(tid: i32, nthreads: i32, gate: usize, up: usize, out: usize, n: i32, alpha: f32, limit: f32, upBias: f32, counter: usize): void {
  for (let s = claim(counter, CHUNK, n); s < n; s = claim(counter, CHUNK, n)) {
    const e = min(n, s + CHUNK);
    const va = f32x4.splat(alpha), vl = f32x4.splat(limit), vb = f32x4.splat(upBias);
    let i = s;
    for (; i + 4 <= e; i += 4) {
      const o = <usize>i * 4;
      v128.store(out + o, swigluv(v128.load(gate + o), v128.load(up + o), va, vl, vb));
    }
    if (i < e) {
      const o = <usize>i * 4;
      storeTail(out + o, swigluv(loadTail(gate + o, e - i), loadTail(up + o, e - i), va, vl, vb), e - i);
    }
  }
}

// Clamps pass the gradient only inside their range (inclusive), as torch.clamp does.
// @ts-ignore: decorator
@inline function swigluGrad(g: v128, u: v128, d: v128, alpha: v128, limit: v128, upBias: v128, dgate: usize, dup: usize, count: i32): void {
  const gc = f32x4.min(g, limit);
  const uc = f32x4.max(f32x4.min(u, limit), f32x4.neg(limit));
  const sg = sigmoidv(f32x4.mul(alpha, gc));
  const glu = f32x4.mul(gc, sg);
  const dglu = f32x4.add(sg, f32x4.mul(f32x4.mul(alpha, glu), f32x4.sub(f32x4.splat(1.0), sg)));
  let dg = f32x4.mul(f32x4.mul(d, f32x4.add(uc, upBias)), dglu);
  dg = v128.and(dg, f32x4.le(g, limit));
  let du = f32x4.mul(d, glu);
  du = v128.and(du, v128.and(f32x4.le(u, limit), f32x4.ge(u, f32x4.neg(limit))));
  if (count == 4) { v128.store(dgate, dg); v128.store(dup, du); } else { storeTail(dgate, dg, count); storeTail(dup, du, count); }
}

/** dgate, dup from dout for swiglu(gate, up). */
export function swigluBackward(tid: i32, nthreads: i32, gate: usize, up: usize, dout: usize, dgate: usize, dup: usize, n: i32,
  alpha: f32, limit: f32, upBias: f32, counter: usize): void {
  for (let s = claim(counter, CHUNK, n); s < n; s = claim(counter, CHUNK, n)) {
    const e = min(n, s + CHUNK);
    const va = f32x4.splat(alpha), vl = f32x4.splat(limit), vb = f32x4.splat(upBias);
    let i = s;
    for (; i + 4 <= e; i += 4) {
      const o = <usize>i * 4;
      swigluGrad(v128.load(gate + o), v128.load(up + o), v128.load(dout + o), va, vl, vb, dgate + o, dup + o, 4);
    }
    if (i < e) {
      const o = <usize>i * 4, k = e - i;
      swigluGrad(loadTail(gate + o, k), loadTail(up + o, k), loadTail(dout + o, k), va, vl, vb, dgate + o, dup + o, k);
    }
  }
}
