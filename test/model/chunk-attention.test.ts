import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Tensor } from '../../src/engine/index.ts';
import { LayerKvCache } from '../../src/model/kvcache.ts';
import { chunkAttentionTiles } from '../../src/model/ops/chunk-attention-wasm.ts';
import { decodeAttentionOne } from '../../src/model/ops/decode-attention.ts';
import { randomF32 } from './checkpoint-helpers.ts';

describe('chunkAttentionTiles (a session chunk as query tiles over its full-layer cache)', () => {
  const cases = [
    { hq: 8, hkv: 2, d: 24, p0: 150, c: 40, t0: 3, N: 50, block: 16 },
    { hq: 4, hkv: 4, d: 16, p0: 0, c: 33, t0: 0, N: 33, block: 8 },
    { hq: 8, hkv: 1, d: 64, p0: 77, c: 5, t0: 9, N: 20, block: 64 },
  ];
  for (const { hq, hkv, d, p0, c, t0, N, block } of cases) {
    it(`Hq ${hq}, Hkv ${hkv}, d ${d}: chunk of ${c} at position ${p0} equals single-query attention row by row, other rows untouched`, () => {
      const S = p0 + c;
      const cache = new LayerKvCache(hkv, d, S + 10, false, 0, 'wasm');
      const k = randomF32(hkv * S * d, 1), v = randomF32(hkv * S * d, 2);
      for (let j = 0; j < S; j++) cache.append(k, v, S, j);
      const q = Tensor.from(randomF32(hq * N * d, 3), [hq, N, d]);
      const sinks = Float32Array.from({ length: hq }, (_, h) => 0.3 * h - 1);
      const out = Tensor.from(new Float32Array(N * hq * d).fill(7), [N, hq * d]);
      chunkAttentionTiles(q, t0, c, cache, sinks, hq, hkv, d, 1 / Math.sqrt(d), block, out);
      const od = out.data(), qd = q.data();
      const want = new Float32Array(hq * d), qrow = new Float32Array(hq * d), scores = new Float64Array(S);
      let worst = 0;
      for (let i = 0; i < c; i++) {
        for (let h = 0; h < hq; h++) qrow.set(qd.subarray((h * N + t0 + i) * d, (h * N + t0 + i + 1) * d), h * d);
        decodeAttentionOne(qrow, 0, cache.k.data(), cache.v.data(), 0, p0 + i, { hq, hkv, d, slots: cache.slots }, sinks, 1 / Math.sqrt(d), want, 0, scores);
        for (let e = 0; e < hq * d; e++) worst = Math.max(worst, Math.abs(od[(t0 + i) * hq * d + e] - want[e]));
      }
      assert.ok(worst < 2e-5, `max |Δ| ${worst}`);
      for (let t = 0; t < N; t++) if (t < t0 || t >= t0 + c) assert.ok(od.subarray(t * hq * d, (t + 1) * hq * d).every((x) => x === 7), `row ${t} untouched`);
      q.dispose(); out.dispose(); cache.dispose();
    });
  }

  it('refuses a ring (sliding-window) cache and a chunk the cache does not hold', () => {
    const ring = new LayerKvCache(1, 8, 4, true, 3, 'wasm');
    const q = Tensor.zeros([1, 2, 8]), out = Tensor.zeros([2, 8]);
    assert.throws(() => chunkAttentionTiles(q, 0, 2, ring, null, 1, 1, 8, 1, 8, out), /full-attention caches only/);
    const full = new LayerKvCache(1, 8, 10, false, 0, 'wasm');
    assert.throws(() => chunkAttentionTiles(q, 0, 2, full, null, 1, 1, 8, 1, 8, out), /chunk 0\+2 of 2 tokens against 0 cached positions/);
    q.dispose(); out.dispose(); ring.dispose(); full.dispose();
  });
});
