import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Mulberry32Rng } from '../../src/engine/index.ts';
import { presetConfig } from '../../src/model/config.ts';
import { headsToRows, RopeTable, rowsToHeads, yarnParams } from '../../src/model/layers/rope.ts';
import { dot } from './helpers.ts';

test('YaRN for gpt-oss: low ≈ 8.0928, high ≈ 17.3980, concentration ≈ 1.34657, inv_freq blends per the ramp', () => {
  const c = presetConfig('gpt-oss-20b');
  const y = yarnParams(c);
  assert.ok(Math.abs(y.low - 32 * Math.log(4096 / (32 * 2 * Math.PI)) / Math.log(150000)) < 1e-12);
  assert.equal(y.low.toFixed(4), '8.0928');
  assert.equal(y.high.toFixed(4), '17.3980');
  assert.equal(y.concentration.toFixed(5), '1.34657');
  assert.equal(y.invFreq.length, 32);
  // k ≤ low: pure extrapolation (1/freq); k ≥ high: pure interpolation (1/(32·freq)); in between a linear blend
  const freq = (k: number) => 150000 ** ((2 * k) / 64);
  assert.ok(Math.abs(y.invFreq[0] - 1) < 1e-15);
  assert.ok(Math.abs(y.invFreq[8] - 1 / freq(8)) / y.invFreq[8] < 1e-12);
  assert.ok(Math.abs(y.invFreq[18] - 1 / (32 * freq(18))) / y.invFreq[18] < 1e-12);
  const ramp = (12 - y.low) / (y.high - y.low);
  assert.ok(Math.abs(y.invFreq[12] - ((1 / (32 * freq(12))) * ramp + (1 / freq(12)) * (1 - ramp))) < 1e-15);
});

test('RoPE: half-split rotation scaled by the concentration; backward is the exact transpose', () => {
  const y = yarnParams({ head_dim: 8, rope_theta: 100, rope_scaling: { rope_type: 'yarn', factor: 4, beta_fast: 8, beta_slow: 1, original_max_position_embeddings: 16, truncate: false } });
  const table = new RopeTable(y);
  const N = 5, H = 3, d = 8;
  const positions = Int32Array.from([0, 3, 7, 20, 2]);
  table.ensure(20);
  const rng = new Mulberry32Rng(1);
  const x = Float32Array.from({ length: N * H * d }, () => rng.normal());
  const z = Float32Array.from({ length: N * H * d }, () => rng.normal());
  const rx = new Float32Array(N * H * d);
  rowsToHeads(x, rx, N, H, d, { table, positions, mode: 1 });
  // token 1 (position 3), head 2, pair k = 1: explicit formula
  const c = y.concentration, ang = 3 * y.invFreq[1];
  const x1 = x[1 * H * d + 2 * d + 1], x2 = x[1 * H * d + 2 * d + 5];
  assert.ok(Math.abs(rx[(2 * N + 1) * d + 1] - c * (x1 * Math.cos(ang) - x2 * Math.sin(ang))) < 1e-5);
  assert.ok(Math.abs(rx[(2 * N + 1) * d + 5] - c * (x2 * Math.cos(ang) + x1 * Math.sin(ang))) < 1e-5);
  // position 0 only scales
  assert.ok(Math.abs(rx[0] - c * x[0]) < 1e-6);
  // adjoint identity <R x, z'> = <x, Rᵀ z'> with z' in head layout
  const zh = new Float32Array(N * H * d);
  rowsToHeads(z, zh, N, H, d);
  const rtz = new Float32Array(N * H * d);
  headsToRows(zh, rtz, N, H, d, { table, positions, mode: -1 });
  assert.ok(Math.abs(dot(rx, zh) - dot(x, rtz)) < 1e-4);
  // norm scales by the concentration exactly (a rotation)
  assert.ok(Math.abs(Math.sqrt(dot(rx, rx)) - c * Math.sqrt(dot(x, x))) < 1e-3);
});
