import { test } from 'node:test';
import assert from 'node:assert/strict';
import { blockwiseAttention } from '../../src/attention/blockwise.ts';
import { compareWithOracle, worst } from './oracle.ts';
import { grid } from './grid.ts';

test('TS blockwise (float64) equals the float64 oracle: forward and dQ, dK, dV, dSinks over the grid', () => {
  for (const c of grid(36)) {
    const e = compareWithOracle(blockwiseAttention, c, false);
    assert.ok(worst(e) < 1e-11, `${JSON.stringify(c)} → ${JSON.stringify(e)}`);
  }
});

test('TS blockwise on float32 inputs stays within 1e-5 (forward) / 1e-4 (gradients) of the oracle', () => {
  for (const c of grid(16, 300)) {
    const e = compareWithOracle(blockwiseAttention, c, true);
    assert.ok(Math.max(e.o, e.lse) < 1e-5, `${JSON.stringify(c)} → ${JSON.stringify(e)}`);
    assert.ok(worst(e) < 1e-4, `${JSON.stringify(c)} → ${JSON.stringify(e)}`);
  }
});

test('result does not depend on tile size (gpt-oss-like shape, window and causal)', () => {
  for (const window of [0, 128]) {
    for (const block of [16, 64, 128, { q: 32, kv: 128 }]) {
      const e = compareWithOracle(blockwiseAttention, { hkv: 1, group: 4, t: 200, d: 16, window, block, seed: 9 }, false);
      assert.ok(worst(e) < 1e-11, JSON.stringify({ window, block, e }));
    }
  }
});
