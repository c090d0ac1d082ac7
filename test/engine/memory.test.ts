import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { beginMemoryScope, getBackend, getRuntime, keepTensor, measureMemory, memoryReport, resetPeak, Tensor, tensorScope } from '../../src/engine/index.ts';

describe('memory accounting', () => {
  it('counts live, peak and per-tag bytes exactly for both storage kinds', () => {
    getRuntime();
    const base = memoryReport().liveBytes;
    resetPeak();
    const a = Tensor.empty([3, 5], { tag: 'acct.a' });
    const b = Tensor.zeros([7], { tag: 'acct.b', storage: 'js' });
    const c = Tensor.empty([2, 2, 2], { tag: 'acct.a' });
    let r = memoryReport();
    assert.equal(r.liveBytes - base, (15 + 7 + 8) * 4);
    assert.deepEqual(r.tags['acct.a'], { liveBytes: 92, peakBytes: 92, liveCount: 2, allocations: 2 });
    assert.deepEqual(r.tags['acct.b'], { liveBytes: 28, peakBytes: 28, liveCount: 1, allocations: 1 });
    a.dispose();
    r = memoryReport();
    assert.equal(r.liveBytes - base, (7 + 8) * 4);
    assert.equal(r.peakBytes - base, 120, 'peak keeps the high-water mark');
    assert.deepEqual(r.tags['acct.a'], { liveBytes: 32, peakBytes: 92, liveCount: 1, allocations: 2 });
    resetPeak();
    assert.equal(memoryReport().peakBytes - base, 60);
    assert.equal(memoryReport().tags['acct.a'].peakBytes, 32);
    b.dispose();
    c.dispose();
    assert.equal(memoryReport().liveBytes, base);
  });

  it('counts a view once and frees the storage with its last holder', () => {
    const base = memoryReport().liveBytes;
    const t = Tensor.empty([4, 6], { tag: 'acct.view' });
    const v = t.reshape([24]);
    assert.equal(memoryReport().liveBytes - base, 96);
    t.dispose();
    assert.equal(memoryReport().liveBytes - base, 96, 'the view still holds the storage');
    assert.equal(v.data().length, 24);
    assert.throws(() => t.data(), /was disposed/);
    v.dispose();
    v.dispose();
    assert.equal(memoryReport().liveBytes, base, 'double dispose is a no-op');
  });

  it('scopes measure the peak added inside them, per tag', () => {
    const outside = Tensor.empty([100], { tag: 'acct.outside' });
    const scope = beginMemoryScope();
    const x = Tensor.empty([1000], { tag: 'acct.scores' });
    const y = Tensor.empty([500], { tag: 'acct.scores' });
    x.dispose();
    const z = Tensor.empty([200], { tag: 'acct.other' });
    const r = scope.end();
    assert.equal(r.peakDeltaBytes, 6000);
    assert.equal(r.liveDeltaBytes, 2800);
    assert.equal(r.tags['acct.scores'].peakBytes, 6000);
    assert.equal(r.tags['acct.scores'].allocations, 2);
    assert.equal(r.tags['acct.other'].peakBytes, 800);
    assert.equal(r.tags['acct.outside'].allocations, 0);
    y.dispose();
    z.dispose();
    outside.dispose();
  });

  it('measureMemory sees the temporaries of backend ops and the runtime alloc', () => {
    const be = getBackend('wasm');
    const a = Tensor.randn([8, 16], 1, { tag: 'acct.in' });
    const { result, memory } = measureMemory(() => {
      const p = getRuntime().alloc(100, 16, 'acct.raw');
      getRuntime().free(p);
      const h = be.matmul(a, a, { transB: true, tag: 'acct.h' });
      const s = be.softmax(h, { tag: 'acct.s' });
      h.dispose();
      return s;
    });
    assert.equal(memory.peakDeltaBytes, 2 * 8 * 8 * 4);
    assert.equal(memory.liveDeltaBytes, 8 * 8 * 4);
    assert.equal(memory.tags['acct.raw'].peakBytes, 100);
    result.dispose();
    a.dispose();
  });

  it('crossEntropy releases its temporary index buffer', () => {
    const be = getBackend('wasm');
    const logits = Tensor.randn([5, 11], 2);
    const before = memoryReport().tags['engine.temp']?.liveBytes ?? 0;
    const { loss, lse } = be.crossEntropy(logits, Int32Array.from([1, 2, 3, 4, 5]));
    assert.equal(memoryReport().tags['engine.temp'].liveBytes, before);
    for (const t of [loss, lse, logits]) t.dispose();
  });
});

describe('tensorScope', () => {
  it('disposes temporaries, keeps the result, kept tensors and outside tensors', () => {
    const be = getBackend('wasm');
    const outside = Tensor.randn([4, 4], 1, { tag: 'scope.outside' });
    const base = memoryReport().liveBytes;
    let kept: Tensor | undefined;
    const { y, rows } = tensorScope(() => {
      const h = be.matmul(outside, outside);
      const s = be.softmax(h);
      kept = keepTensor(be.exp(s));
      const view = s.reshape([16]);
      return { y: be.scale(s, 2), rows: view.shape[0] };
    });
    assert.equal(rows, 16);
    assert.equal(memoryReport().liveBytes - base, 2 * 16 * 4, 'only the result and the kept tensor remain');
    assert.equal(y.isDisposed, false);
    assert.equal(kept!.isDisposed, false);
    assert.equal(outside.isDisposed, false);
    for (const t of [y, kept!, outside]) t.dispose();
  });

  it('moves kept tensors to the enclosing scope, and cleans up when fn throws', () => {
    const base = memoryReport().liveBytes;
    tensorScope(() => {
      const inner = tensorScope(() => [Tensor.zeros([3]), 7]);
      assert.equal((inner[0] as Tensor).isDisposed, false);
    });
    assert.equal(memoryReport().liveBytes, base, 'the outer scope disposed what the inner one returned');
    assert.throws(() => tensorScope(() => {
      Tensor.zeros([100]);
      throw new Error('boom');
    }), /boom/);
    assert.equal(memoryReport().liveBytes, base);
  });
});
