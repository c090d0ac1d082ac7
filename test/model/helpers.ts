/** Shared helpers for the model tests: tiny configs and directional finite-difference gradient checks. */
import assert from 'node:assert/strict';
import { Mulberry32Rng, Tensor } from '../../src/engine/index.ts';
import { validateConfig, type GptOssConfig, type GptOssConfigInput } from '../../src/model/config.ts';

/** 2 layers (sliding window 4, then full), GQA 4:2, 4 experts top-2, YaRN with its ramp inside the 4 frequencies. */
export function testConfig(overrides: Partial<GptOssConfigInput> = {}): GptOssConfig {
  return validateConfig({
    num_hidden_layers: 2, hidden_size: 16, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8, sliding_window: 4,
    num_local_experts: 4, num_experts_per_tok: 2, intermediate_size: 8, vocab_size: 32, rope_theta: 100,
    rope_scaling: { rope_type: 'yarn', factor: 4, beta_fast: 8, beta_slow: 1, original_max_position_embeddings: 16, truncate: false },
    max_position_embeddings: 64, rms_norm_eps: 1e-5, initializer_range: 0.3, ...overrides,
  });
}

export function randomTokens(n: number, vocab: number, seed: number): Int32Array {
  const rng = new Mulberry32Rng(seed);
  return Int32Array.from({ length: n }, () => rng.int(vocab));
}

export function dot(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

/**
 * Checks an analytic gradient g of objective f with respect to tensor t along a direction that mixes g with a
 * random vector (so a wrong-but-parallel gradient or a wrong sign is caught): central differences in float32
 * storage, float64 accumulation. Returns the relative error.
 */
export function directionalCheck(label: string, f: () => number, t: Tensor, g: Float32Array, options: { seed?: number; eps?: number; tol?: number } = {}): number {
  const rng = new Mulberry32Rng(options.seed ?? 7);
  const n = t.size;
  const gn = Math.sqrt(dot(g, g));
  const r = Float64Array.from({ length: n }, () => rng.normal());
  const rn = Math.sqrt(dot(r, r));
  const u = new Float64Array(n);
  for (let i = 0; i < n; i++) u[i] = (gn > 0 ? g[i] / gn : 0) + 0.5 * r[i] / rn;
  const un = Math.sqrt(dot(u, u));
  for (let i = 0; i < n; i++) u[i] /= un;
  const orig = t.toArray();
  const eps = options.eps ?? 2e-3;
  const set = (s: number) => { const d = t.data(); for (let i = 0; i < n; i++) d[i] = orig[i] + s * eps * u[i]; };
  set(1); const fp = f();
  set(-1); const fm = f();
  t.data().set(orig);
  const fd = (fp - fm) / (2 * eps);
  const an = dot(g, u);
  const err = Math.abs(fd - an) / Math.max(Math.abs(fd), Math.abs(an), 1e-4);
  assert.ok(Number.isFinite(fd) && Number.isFinite(an), `${label}: non-finite derivative (fd ${fd}, analytic ${an})`);
  assert.ok(err < (options.tol ?? 5e-3), `${label}: finite difference ${fd} vs analytic ${an} (rel err ${err.toExponential(2)})`);
  return err;
}

export function weighted(values: ArrayLike<number>, weights: ArrayLike<number>): number {
  return dot(values, weights);
}
