import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FreeListAllocator, getBackend, getRuntime, Tensor } from '../../src/engine/index.ts';

function fixed(limit: number, base = 1024): FreeListAllocator {
  return new FreeListAllocator(base, (end) => end <= limit, 'the test range');
}

describe('FreeListAllocator', () => {
  it('hands out aligned, disjoint blocks and reuses freed ones', () => {
    const a = fixed(1 << 20);
    const p1 = a.alloc(100), p2 = a.alloc(33, 64), p3 = a.alloc(1);
    assert.equal(p1 % 16, 0);
    assert.equal(p2 % 64, 0);
    const disjoint = (blocks: [number, number][]) =>
      blocks.every(([p, s], i) => blocks.every(([q, t], j) => i === j || p + s <= q || q + t <= p));
    assert.ok(disjoint([[p1, 100], [p2, 33], [p3, 1]]), 'blocks overlap');
    assert.equal(p3, p1 + 112, 'the alignment gap before p2 is reused for a small block');
    a.free(p2);
    const p4 = a.alloc(40);
    assert.equal(p4, p2, 'a freed block between live ones is reused');
    assert.equal(a.stats().liveBlocks, 3);
  });

  it('coalesces neighbours and gives the tail back to the bump region', () => {
    const a = fixed(1 << 20);
    const ps = [a.alloc(256), a.alloc(256), a.alloc(256), a.alloc(256)];
    const topBefore = a.stats().top;
    a.free(ps[1]);
    a.free(ps[2]);
    assert.equal(a.stats().freeBlocks, 1, 'two adjacent free blocks merge');
    assert.equal(a.stats().freeBytes, 512);
    assert.equal(a.alloc(512), ps[1], 'the merged block serves a larger request');
    a.free(ps[3]);
    assert.ok(a.stats().top < topBefore, 'freeing the last block lowers top');
    a.free(ps[1]);
    a.free(ps[0]);
    assert.deepEqual({ ...a.stats() }, { usedBytes: 0, freeBytes: 0, freeBlocks: 0, top: 1024, liveBlocks: 0 });
  });

  it('reports out of memory with a clear message and stays usable', () => {
    const a = fixed(4096, 0);
    const p = a.alloc(3000);
    assert.throws(() => a.alloc(2000), /out of memory: cannot allocate 2000 bytes .* within the test range/);
    a.free(p);
    assert.equal(a.alloc(4000), 0);
  });

  it('rejects bad arguments and double frees', () => {
    const a = fixed(1 << 16);
    assert.throws(() => a.alloc(-1), /non-negative integer/);
    assert.throws(() => a.alloc(8, 24), /power of two/);
    const p = a.alloc(8);
    a.free(p);
    assert.throws(() => a.free(p), /not a live allocation/);
  });

  it('keeps a random alloc/free workload consistent', () => {
    const a = fixed(1 << 24);
    const live = new Map<number, number>();
    let seed = 12345;
    const rnd = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
    for (let i = 0; i < 3000; i++) {
      if (live.size > 0 && rnd() < 0.45) {
        const keys = [...live.keys()];
        const k = keys[Math.floor(rnd() * keys.length)];
        a.free(k);
        live.delete(k);
      } else {
        const size = 1 + Math.floor(rnd() * 5000);
        const p = a.alloc(size, rnd() < 0.2 ? 256 : 16);
        for (const [q, s] of live) assert.ok(p + size <= q || q + s <= p, `block ${p}+${size} overlaps ${q}+${s}`);
        live.set(p, size);
      }
    }
    for (const k of live.keys()) a.free(k);
    assert.equal(a.stats().usedBytes, 0);
    assert.equal(a.stats().top, 1024);
  });
});

describe('runtime allocator over Wasm memory', () => {
  it('grows the memory on demand, and freed memory is reused without growing again', () => {
    const rt = getRuntime();
    const before = rt.heapStats().memoryBytes;
    const big = 3 * before;
    const p = rt.alloc(big);
    const grown = rt.heapStats().memoryBytes;
    assert.ok(grown >= p + big, 'memory covers the block');
    const v = rt.f32(p, big / 4);
    v[v.length - 1] = 42;
    assert.equal(rt.f32(p + big - 4, 1)[0], 42);
    rt.free(p);
    const q = rt.alloc(big);
    assert.equal(q, p, 'the same block comes back');
    assert.equal(rt.heapStats().memoryBytes, grown, 'no second growth');
    rt.free(q);
  });

  it('refuses allocations beyond 4 GiB with a clear error', () => {
    const rt = getRuntime();
    assert.throws(() => rt.alloc(5 * 2 ** 30), /out of memory: cannot allocate 5368709120 bytes .*4 GiB Wasm memory/);
  });
});

describe('addresses above 2 GiB', () => {
  it('kernels run on tensors placed beyond 2^31 (pointers pass through the i32 parameters unchanged)', () => {
    const rt = getRuntime();
    // Reserving 2.25 GiB only maps pages; untouched pages cost no resident memory.
    const pad = rt.alloc(2.25 * 2 ** 30);
    const x = Tensor.randn([40, 33], 3);
    assert.ok(x.ptr > 2 ** 31, `tensor at ${x.ptr}`);
    const w = getBackend('wasm').softmax(x), r = getBackend('reference').softmax(x);
    const sums = getBackend('wasm').sum(w);
    for (let i = 0; i < w.size; i++) assert.ok(Math.abs(w.data()[i] - r.data()[i]) < 1e-6);
    for (const s of sums.data()) assert.ok(Math.abs(s - 1) < 1e-5);
    for (const t of [x, w, r, sums]) t.dispose();
    rt.free(pad);
  });
});
