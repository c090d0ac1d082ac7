import { test } from 'node:test';
import assert from 'node:assert/strict';
import { blockwiseForward } from '../../src/attention/blockwise.ts';
import { decodeAttention, lookback } from '../../src/attention/decode.ts';
import { createBlockMask } from '../../src/attention/block-mask.ts';
import { causalMask, slidingWindowMask } from '../../src/attention/masks.ts';
import type { HeadTensor } from '../../src/attention/types.ts';
import { maxAbsDiff, randTensor, rng } from './helpers.ts';

type T64 = HeadTensor<Float64Array>;

/** Rows [from, to) of every head of a [H, T, d] tensor. */
function rows(x: T64, from: number, to: number): T64 {
  const [h, t, d] = x.shape;
  const out = new Float64Array(h * (to - from) * d);
  for (let g = 0; g < h; g++) out.set(x.data.subarray((g * t + from) * d, (g * t + to) * d), g * (to - from) * d);
  return { data: out, shape: [h, to - from, d] };
}

test('prefill(T − k) then k single-token decodes equals one prefill (causal and window 16)', () => {
  const r = rng(21);
  const hkv = 2, group = 2, T = 70, d = 8, k = 5;
  const q = randTensor(r, [hkv * group, T, d]), K = randTensor(r, [hkv, T, d]), V = randTensor(r, [hkv, T, d]);
  const sinks = randTensor(r, [hkv * group, 1, 1]).data;
  for (const mask of [causalMask(), slidingWindowMask(16)]) {
    const full = blockwiseForward(q, K, V, { blockMask: createBlockMask(mask, T, T, 16), sinks, gqa: true });
    const head = decodeAttention(rows(q, 0, T - k), rows(K, 0, T - k), rows(V, 0, T - k), { mask, sinks, gqa: true, blockSize: 16 });
    assert.ok(maxAbsDiff(head.o.data, rows(full.o, 0, T - k).data) < 1e-14);
    for (let step = T - k; step < T; step++) {
      const one = decodeAttention(rows(q, step, step + 1), rows(K, 0, step + 1), rows(V, 0, step + 1), { mask, sinks, gqa: true });
      assert.ok(maxAbsDiff(one.o.data, rows(full.o, step, step + 1).data) < 1e-14, `${mask.name} step ${step}`);
      for (let h = 0; h < hkv * group; h++) assert.ok(Math.abs(one.lse[h] - full.lse[h * T + step]) < 1e-13);
    }
    // a chunk of 3 rows at once (chunked prefill)
    const chunk = decodeAttention(rows(q, 60, 63), rows(K, 0, 63), rows(V, 0, 63), { mask, sinks, gqa: true, blockSize: 2 });
    assert.ok(maxAbsDiff(chunk.o.data, rows(full.o, 60, 63).data) < 1e-14);
  }
});

test('window layers read only the last W keys: a rolling cache of exactly W entries gives the same row', () => {
  const r = rng(22);
  const T = 300, W = 128, d = 8;
  const q = randTensor(r, [2, T, d]), K = randTensor(r, [1, T, d]), V = randTensor(r, [1, T, d]);
  const sinks = new Float64Array([0.3, -0.7]);
  const mask = slidingWindowMask(W);
  assert.equal(lookback(mask), W - 1);
  assert.equal(lookback(causalMask()), Infinity);
  const full = blockwiseForward(q, K, V, { blockMask: createBlockMask(mask, T, T, 64), sinks, gqa: true });
  const last = T - 1;
  // rolling cache: keys at absolute positions T − W … T − 1, including the current token
  const rolling = blockwiseForward(rows(q, last, T), rows(K, T - W, T), rows(V, T - W, T),
    { blockMask: createBlockMask(mask, 1, W, 64, { qOffset: last, kvOffset: T - W }), sinks, gqa: true });
  assert.ok(maxAbsDiff(rolling.o.data, rows(full.o, last, T).data) < 1e-14);
  // one key short (127 entries) must differ: the window counts the query itself
  const short = blockwiseForward(rows(q, last, T), rows(K, T - W + 1, T), rows(V, T - W + 1, T),
    { blockMask: createBlockMask(slidingWindowMask(W - 1), 1, W - 1, 64, { qOffset: last, kvOffset: T - W + 1 }), sinks, gqa: true });
  assert.ok(maxAbsDiff(short.o.data, rows(full.o, last, T).data) > 1e-6);
});

test('decode rejects more query rows than cached positions', () => {
  const r = rng(23);
  assert.throws(() => decodeAttention(randTensor(r, [1, 4, 8]), randTensor(r, [1, 3, 8]), randTensor(r, [1, 3, 8]), { mask: causalMask() }), /append the new keys/);
});
