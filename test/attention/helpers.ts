/** Seeded random tensors and comparison helpers for the attention tests. */
import type { FloatArray, HeadTensor } from '../../src/attention/types.ts';
import { mulberry32 } from '../../src/engine/random.ts';

/** A seeded uniform stream in [0, 1) (the engine's mulberry32), so every "random" test input is reproducible. */
export const rng = mulberry32;

/** Standard normal via Box–Muller. */
export function randn(r: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());
}

export function randTensor(r: () => number, shape: number[], scale = 1, f64 = true): HeadTensor<Float64Array> & HeadTensor<FloatArray> {
  const n = shape.reduce((a, b) => a * b, 1);
  const data = new Float64Array(n);
  for (let i = 0; i < n; i++) data[i] = scale * randn(r);
  return { data: f64 ? data : (Float32Array.from(data) as unknown as Float64Array), shape };
}

export function f32(t: HeadTensor<Float64Array>): HeadTensor<Float32Array> {
  return { data: Float32Array.from(t.data), shape: t.shape };
}

export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new Error(`length ${a.length} vs ${b.length}`);
  let m = 0;
  for (let i = 0; i < a.length; i++) {
    if (a[i] === b[i]) continue;
    const x = Math.abs(a[i] - b[i]);
    if (Number.isNaN(x)) return Infinity;
    if (x > m) m = x;
  }
  return m;
}

export function maxAbs(a: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i]));
  return m;
}

/** max|a − b| / max(max|b|, floor). */
export function relErr(a: ArrayLike<number>, b: ArrayLike<number>, floor = 1e-30): number {
  return maxAbsDiff(a, b) / Math.max(maxAbs(b), floor);
}

export function allFinite(a: ArrayLike<number>): boolean {
  for (let i = 0; i < a.length; i++) if (!Number.isFinite(a[i])) return false;
  return true;
}
