import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { assignUids, Batch, leftPad, padToMultiple, positionIdsFromMask, rightPad, row } from '../../src/rollout/batch.ts';
import { groupIndices } from '../../src/rl/advantages.ts';

function sample(): Batch {
  return new Batch({
    tensors: { x: { data: Int32Array.from([1, 2, 3, 4, 5, 6]), shape: [3, 2] }, y: { data: Float32Array.from([0.5, 1.5, 2.5]), shape: [3] } },
    objects: { uid: ['a', 'b', 'c'] },
    meta: { temperature: 1 },
  });
}

describe('Batch', () => {
  it('checks that every column has the same batch size', () => {
    assert.throws(() => new Batch({ tensors: { x: { data: new Int32Array(4), shape: [2, 2] } }, objects: { uid: ['a'] } }), /disagree on the batch size \(tensor "x": 2, object "uid": 1\)/);
    assert.throws(() => new Batch({ tensors: { x: { data: new Int32Array(3), shape: [2, 2] } } }), /has 3 values but shape \[2, 2\] needs 4/);
    assert.throws(() => sample().setObject('z', [1]), /has 1 rows, the batch has 3/);
    assert.throws(() => sample().tensor('nope'), /has no tensor "nope" \(it has: x, y\)/);
  });
  it('union merges and checks equal keys', () => {
    const a = sample();
    const b = new Batch({ tensors: { z: { data: Float32Array.from([7, 8, 9]), shape: [3] }, y: { data: Float32Array.from([0.5, 1.5, 2.5]), shape: [3] } }, objects: { uid: ['a', 'b', 'c'] }, meta: { step: 2 } });
    a.union(b);
    assert.deepEqual(a.tensorKeys.sort(), ['x', 'y', 'z']);
    assert.equal(a.meta.step, 2);
    const conflict = new Batch({ tensors: { y: { data: Float32Array.from([0, 0, 0]), shape: [3] } } });
    assert.throws(() => sample().union(conflict), /tensor "y" differs/);
    assert.throws(() => sample().union(new Batch({ objects: { uid: ['a', 'b', 'X'] } })), /object column "uid" differs/);
    assert.throws(() => sample().union(new Batch({ objects: { uid: ['a'] } })), /batch sizes differ \(3 vs 1\)/);
    assert.throws(() => sample().union(new Batch({ meta: { temperature: 0.5 } })), /meta "temperature" differs/);
    // NaN-aware object comparison.
    const n1 = new Batch({ objects: { v: [NaN] } });
    n1.union(new Batch({ objects: { v: [NaN] } }));
  });
  it('select, slice, chunk, split, pop, reorder', () => {
    const b = sample();
    const s = b.select({ tensors: ['x'], objects: ['uid'], indices: [2, 0, 2] });
    assert.deepEqual([...s.tensor('x').data], [5, 6, 1, 2, 5, 6]);
    assert.deepEqual(s.object('uid'), ['c', 'a', 'c']);
    assert.deepEqual(s.tensorKeys, ['x']);
    assert.throws(() => b.select({ indices: [3] }), /row index 3 is out of range for a batch of 3/);
    assert.deepEqual([...b.slice(1, 2).tensor('y').data], [1.5]);
    assert.throws(() => b.chunk(2), /batch size 3 is not divisible by 2; pad it with padToDivisor\(2\) first/);
    assert.deepEqual(b.chunk(3).map((c) => c.object('uid')[0]), ['a', 'b', 'c']);
    assert.deepEqual(b.split(2).map((c) => c.size), [2, 1]);
    const p = b.pop({ tensors: ['y'] });
    assert.deepEqual(b.tensorKeys, ['x']);
    assert.equal(p.size, 3);
    b.reorder([2, 1, 0]);
    assert.deepEqual(b.object('uid'), ['c', 'b', 'a']);
    assert.deepEqual([...row(b.tensor('x'), 0)], [5, 6]);
    assert.throws(() => b.reorder([0, 0, 1]), /permutation/);
  });
  it('uids are assigned per prompt before the repeat, so groups can be found', () => {
    const prompts = assignUids(new Batch({ objects: { task: ['t0', 't1', 't2'] } }), 'step7');
    const rolled = prompts.repeat(4);
    const groups = groupIndices(rolled.object<string>('uid'));
    assert.deepEqual([...groups.keys()], ['step7-0', 'step7-1', 'step7-2']);
    assert.deepEqual(groups.get('step7-1'), [4, 5, 6, 7]);
    assert.ok([...groups.values()].every((g) => new Set(g.map((i) => rolled.object('task')[i])).size === 1));
  });
  it('repeat interleaved (GRPO) and tiled', () => {
    const b = sample().select({ objects: ['uid'], tensors: ['y'], indices: [0, 1] });
    assert.deepEqual(b.repeat(3).object('uid'), ['a', 'a', 'a', 'b', 'b', 'b']);
    assert.deepEqual([...b.repeat(2, { interleave: false }).tensor('y').data], [0.5, 1.5, 0.5, 1.5]);
  });
  it('pads to a divisor by re-appending leading rows and unpads', () => {
    const { batch, padSize } = sample().padToDivisor(4);
    assert.equal(padSize, 1);
    assert.deepEqual(batch.object('uid'), ['a', 'b', 'c', 'a']);
    assert.equal(batch.chunk(2).length, 2);
    assert.deepEqual(batch.unpad(padSize).object('uid'), ['a', 'b', 'c']);
    assert.equal(padToMultiple(5, 4), 8);
  });
  it('concat merges rows, meta and metrics', () => {
    const a = sample();
    a.meta.metrics = { t: 1 };
    const b = sample();
    b.meta.metrics = { t: 2 };
    const c = Batch.concat([a, b]);
    assert.equal(c.size, 6);
    assert.deepEqual([...c.tensor('x').data], [1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6]);
    assert.deepEqual(c.meta.metrics, { t: [1, 2] });
    const d = sample();
    d.meta.temperature = 2;
    assert.throws(() => Batch.concat([a, d]), /meta "temperature" conflicts/);
    assert.throws(() => Batch.concat([a, a.select({ tensors: ['x'] })]), /batch 1 has columns/);
    assert.throws(() => Batch.concat([]), /no batches/);
  });
});

describe('padding helpers (verl layout)', () => {
  it('left-pads prompts, right-pads responses, positions from the mask', () => {
    const { ids, mask } = leftPad([[5, 6], [7]], 3, 0);
    assert.deepEqual([...ids], [0, 5, 6, 0, 0, 7]);
    assert.deepEqual([...mask], [0, 1, 1, 0, 0, 1]);
    assert.deepEqual([...rightPad(Int32Array, [[1], [2, 3]], 3, -1)], [1, -1, -1, 2, 3, -1]);
    assert.throws(() => leftPad([[1, 2, 3, 4]], 3, 0), /has 4 tokens, more than the width 3/);
    // [0 0 1 1 | 1 0]: positions 0 0 0 1 2 2
    assert.deepEqual([...positionIdsFromMask([0, 0, 1, 1, 1, 0], 1, 6)], [0, 0, 0, 1, 2, 2]);
  });
});
