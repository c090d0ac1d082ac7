import assert from 'node:assert/strict';
import { Mulberry32Rng, Tensor, type Shape } from '../../src/engine/index.ts';

/** Asserts |a − e| ≤ atol + rtol·|e| elementwise (NaN must match NaN), naming the first offending index. */
export function assertClose(actual: ArrayLike<number>, expected: ArrayLike<number>, what: string, rtol = 1e-5, atol = 1e-6): void {
  assert.equal(actual.length, expected.length, `${what}: length ${actual.length} vs ${expected.length}`);
  for (let i = 0; i < actual.length; i++) {
    const a = actual[i], e = expected[i];
    if (Number.isNaN(e) && Number.isNaN(a)) continue;
    if (a === e) continue;
    const tol = atol + rtol * Math.abs(e);
    if (!(Math.abs(a - e) <= tol)) assert.fail(`${what}: index ${i}: got ${a}, expected ${e} (tol ${tol.toExponential(2)})`);
  }
}

/** Largest |a − e| relative to max |e|. */
export function relErr(actual: ArrayLike<number>, expected: ArrayLike<number>): number {
  let err = 0, scale = 0;
  for (let i = 0; i < actual.length; i++) {
    err = Math.max(err, Math.abs(actual[i] - expected[i]));
    scale = Math.max(scale, Math.abs(expected[i]));
  }
  return err / (scale || 1);
}

export function randn(shape: Shape, seed: number, std = 1): Tensor {
  return Tensor.randn(shape, seed, { std, tag: 'test' });
}

export function randomIds(n: number, limit: number, seed: number): Int32Array {
  const rng = new Mulberry32Rng(seed);
  return Int32Array.from({ length: n }, () => rng.int(limit));
}
