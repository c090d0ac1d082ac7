import { test } from 'node:test';
import assert from 'node:assert/strict';
import { blockwiseAttention } from '../../src/attention/blockwise.ts';
import { eagerAttention } from '../../src/attention/eager.ts';
import { createBlockMask } from '../../src/attention/block-mask.ts';
import { causalMask } from '../../src/attention/masks.ts';
import { randTensor, rng } from './helpers.ts';

const r = rng(31);
const q = randTensor(r, [4, 10, 8]), k = randTensor(r, [2, 10, 8]), v = randTensor(r, [2, 10, 8]);
const blockMask = createBlockMask(causalMask(), 10, 10, 4);

for (const [name, impl] of [['blockwise', blockwiseAttention], ['eager', eagerAttention]] as const) {
  test(`${name}: bad inputs get clear errors`, () => {
    assert.throws(() => impl(q, k, v, { blockMask }), /gqa: true/);
    assert.throws(() => impl(q, randTensor(r, [3, 10, 8]), randTensor(r, [3, 10, 8]), { blockMask, gqa: true }), /not divisible/);
    assert.throws(() => impl(q, k, randTensor(r, [2, 11, 8]), { blockMask, gqa: true }), /must equal k shape/);
    assert.throws(() => impl(q, randTensor(r, [2, 10, 4]), randTensor(r, [2, 10, 4]), { blockMask, gqa: true }), /head dim/);
    assert.throws(() => impl({ data: q.data, shape: [4, 80] }, k, v, { blockMask, gqa: true }), /\[heads, length, dim\]/);
    assert.throws(() => impl({ data: q.data.subarray(1), shape: [4, 10, 8] }, k, v, { blockMask, gqa: true }), /needs 320/);
    assert.throws(() => impl(q, k, v, { blockMask: createBlockMask(causalMask(), 9, 10, 4), gqa: true }), /block mask is for 9/);
    assert.throws(() => impl(q, k, v, { blockMask, gqa: true, sinks: new Float64Array(3) }), /one per query head/);
    assert.throws(() => impl(q, k, v, { blockMask, gqa: true, sinks: new Float64Array([0, NaN, 0, 0]) }), /sinks\[1\] is NaN/);
    const bad = Float64Array.from(q.data); bad[5] = NaN;
    assert.throws(() => impl({ data: bad, shape: q.shape }, k, v, { blockMask, gqa: true }), /q\[5\] is NaN/);
    assert.throws(() => impl(q, { data: Float32Array.from(k.data) as unknown as Float64Array, shape: k.shape }, v, { blockMask, gqa: true }), /use one dtype/);
    const out = impl(q, k, v, { blockMask, gqa: true });
    assert.throws(() => out.backward(randTensor(r, [4, 9, 8])), /dO has shape/);
  });
}

test('checkFinite: false documents NaN propagation instead of an error', () => {
  const bad = Float64Array.from(q.data); bad[0] = NaN;
  const out = blockwiseAttention({ data: bad, shape: q.shape }, k, v, { blockMask, gqa: true, checkFinite: false });
  assert.ok(Number.isNaN(out.o.data[0]));
});
