// AdamW update (decoupled weight decay), as torch.optim.AdamW computes it:
//   p ← p·(1 − lr·wd);  m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²;  p ← p − (lr/bc1) · m / (sqrt(v)/sqrt(bc2) + eps)
// The caller passes decay = 1 − lr·wd, stepSize = lr/bc1 and invSqrtBc2 = 1/sqrt(bc2).
import { CHUNK, claim } from './simd';

// @ts-ignore: decorator
@inline function updatev(p: v128, g: v128, m: v128, v: v128, b1: v128, b2: v128, c1: v128, c2: v128, decay: v128,
  step: v128, isb2: v128, eps: v128, out: usize): void {
  const mn = f32x4.add(f32x4.mul(b1, m), f32x4.mul(c1, g));
  const vn = f32x4.add(f32x4.mul(b2, v), f32x4.mul(c2, f32x4.mul(g, g)));
  const denom = f32x4.add(f32x4.mul(f32x4.sqrt(vn), isb2), eps);
  const pn = f32x4.sub(f32x4.mul(p, decay), f32x4.mul(step, f32x4.div(mn, denom)));
  v128.store(out, pn); v128.store(out, mn, 16); v128.store(out, vn, 32);
}

export function adamw(tid: i32, nthreads: i32, param: usize, grad: usize, m: usize, v: usize, n: i32, beta1: f32, beta2: f32,
  eps: f32, decay: f32, stepSize: f32, invSqrtBc2: f32, tmp: usize, counter: usize): void {
  for (let s = claim(counter, CHUNK, n); s < n; s = claim(counter, CHUNK, n)) {
    const e = min(n, s + CHUNK);
    const b1 = f32x4.splat(beta1), b2 = f32x4.splat(beta2), c1 = f32x4.splat(1 - beta1), c2 = f32x4.splat(1 - beta2);
    const vd = f32x4.splat(decay), vs = f32x4.splat(stepSize), vi = f32x4.splat(invSqrtBc2), ve = f32x4.splat(eps);
    const t = tmp + <usize>tid * 48;
    let i = s;
    for (; i + 4 <= e; i += 4) {
      const o = <usize>i * 4;
      updatev(v128.load(param + o), v128.load(grad + o), v128.load(m + o), v128.load(v + o), b1, b2, c1, c2, vd, vs, vi, ve, t);
      v128.store(param + o, v128.load(t)); v128.store(m + o, v128.load(t, 16)); v128.store(v + o, v128.load(t, 32));
    }
    for (; i < e; i++) {
      const o = <usize>i * 4;
      updatev(f32x4.splat(load<f32>(param + o)), f32x4.splat(load<f32>(grad + o)), f32x4.splat(load<f32>(m + o)),
        f32x4.splat(load<f32>(v + o)), b1, b2, c1, c2, vd, vs, vi, ve, t);
      store<f32>(param + o, load<f32>(t)); store<f32>(m + o, load<f32>(t, 16)); store<f32>(v + o, load<f32>(t, 32));
    }
  }
}
