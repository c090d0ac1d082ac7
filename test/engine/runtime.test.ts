import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { getBackend, getRuntime, hasRuntime, initRuntime, memoryReport, shutdownRuntime, Tensor } from '../../src/engine/index.ts';
import { randn } from './helpers.ts';

describe('runtime and thread pool', () => {
  it('exposes the kernels and a two-thread pool by default', () => {
    const rt = initRuntime({ threads: 2 });
    assert.equal(getRuntime(), rt);
    assert.equal(rt.maxThreads, 2);
    for (const k of ['matmul', 'softmax', 'adamw', 'heapBase']) assert.equal(typeof rt.exports[k], 'function', k);
    assert.throws(() => initRuntime({ threads: 3 }), /already exists with threads=2/);
  });

  it('parallel runs every share: each thread fills its part of a buffer', () => {
    const rt = getRuntime();
    const n = 1001;
    const p = rt.alloc(n * 4);
    rt.f32(p, n).fill(-1);
    rt.parallel('fill', [p, n, 3.5, rt.workCounter]);
    assert.ok(rt.f32(p, n).every((v) => v === 3.5));
    rt.serial('fill', [p, n, 1.25, rt.workCounter]);
    assert.ok(rt.f32(p, n).every((v) => v === 1.25));
    rt.free(p);
  });

  it('gives bit-identical results with 1 and 2 threads', () => {
    const rt = getRuntime();
    const be = getBackend('wasm');
    const a = randn([300, 257], 1), b = randn([257, 190], 2), x = randn([64, 1030], 3);
    const run = () => {
      const c = be.matmul(a, b);
      const ct = be.matmul(b, a, { transA: true, transB: true });
      const s = be.softmax(x);
      const bg = be.biasGrad(x);
      const few = be.matmul(x.reshape([16, 4, 1030]), x, { transB: true });
      const out = [c, ct, s, bg, few].map((t) => t.toArray());
      for (const t of [c, ct, s, bg, few]) t.dispose();
      return out;
    };
    rt.setThreads(1);
    const one = run();
    rt.setThreads(2);
    const two = run();
    for (let i = 0; i < one.length; i++) assert.deepEqual(two[i], one[i], `result ${i} differs`);
    for (const t of [a, b, x]) t.dispose();
  });

  it('reports unknown kernels and bad thread counts', () => {
    const rt = getRuntime();
    assert.throws(() => rt.parallel('noSuchKernel', []), /no Wasm kernel named 'noSuchKernel'/);
    assert.throws(() => rt.setThreads(3), /integer in 1\.\.2/);
    assert.throws(() => rt.parallel('fill', new Array(30).fill(0)), /at most 24 parameters/);
  });

  it('surfaces a trap inside a worker as an error and keeps working', () => {
    const rt = getRuntime();
    // fill writes past the end of the 4 GiB memory on both threads: each share traps.
    assert.throws(() => rt.parallel('fill', [2 ** 32 - 64, 1 << 20, 0, rt.workCounter]), /out of bounds|kernel 'fill' failed/);
    const t = Tensor.zeros([70000]);
    rt.parallel('fill', [t.ptr, t.size, 2, rt.workCounter]);
    assert.ok(t.data().every((v) => v === 2));
    t.dispose();
  });

  it('the wasm backend rejects JS-memory tensors with a clear message', () => {
    const be = getBackend('wasm');
    const a = Tensor.zeros([2, 2], { storage: 'js' });
    assert.throws(() => be.softmax(a), /lives in JS memory/);
    a.dispose();
  });

  it('a runtime without workers (threads: 1) matches the 2-thread pool; shutdown stops the pool cleanly', async () => {
    const be = getBackend('wasm');
    const run = () => {
      const a = randn([257, 300], 11), b = randn([300, 129], 12);
      const c = be.matmul(a, b);
      const out = c.toArray();
      for (const t of [a, b, c]) t.dispose();
      return out;
    };
    const two = run();
    const stale = Tensor.zeros([3]);
    await shutdownRuntime();
    assert.equal(hasRuntime(), false);
    assert.throws(() => stale.data(), /shut down/);
    stale.dispose();
    assert.equal(memoryReport().tags['engine.workspace'].liveBytes, 0, 'the old runtime released its accounting');
    const rt = initRuntime({ threads: 1 });
    assert.equal(rt.maxThreads, 1);
    assert.deepEqual(run(), two);
    await shutdownRuntime();
  });
});
