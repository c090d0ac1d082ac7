import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Tensor } from '../../src/engine/index.ts';
import { LayerKvCache } from '../../src/model/kvcache.ts';
import { decodeAttentionOne } from '../../src/model/ops/decode-attention.ts';
import { randomF32 } from './checkpoint-helpers.ts';
import { decodeAttentionWasm } from '../../src/model/ops/decode-attention-wasm.ts';

// The kernel (assembly/decode.ts) scores four keys at a time with a scalar tail, and sums values into up to eight
// vector accumulators per 32 dimensions of the head: head dims 4 … 72 cover one to three passes and every partial
// pass; spans of 1 … 9 keys every tail; a ring that wraps, the second run of slots.
describe('decodeAttentionWasm (the single-query kernel) equals the reference loop', () => {
  for (const d of [4, 8, 24, 36, 40, 64, 72]) {
    it(`head dim ${d}: full caches with spans of 1 to 9 and 131 keys, and a ring that wraps`, () => {
      const hq = 4, hkv = 2;
      const full = new LayerKvCache(hkv, d, 140, false, 0, 'wasm');
      const ring = new LayerKvCache(hkv, d, 6, true, 3, 'wasm'); // 9 slots, window 6
      const n = 140;
      const k = randomF32(hkv * n * d, d), v = randomF32(hkv * n * d, d + 1);
      for (let j = 0; j < 131; j++) full.append(k, v, n, j);
      for (let j = 0; j < 23; j++) ring.append(k, v, n, j); // positions 0 … 22: slots wrapped twice
      const queries = [
        ...[0, 1, 2, 3, 4, 5, 6, 7, 8].map((hi) => ({ cache: full, lo: 0, hi })),
        { cache: full, lo: 0, hi: 130 },
        { cache: ring, lo: 17, hi: 22 }, // slots 8, 0, 1, 2, 3, 4: two runs
        { cache: ring, lo: 18, hi: 22 },
      ];
      const N = queries.length;
      const q = Tensor.from(randomF32(hq * N * d, 5), [hq, N, d]);
      const sinksArr = Float32Array.from({ length: hq }, (_, h) => 0.5 * h - 0.8);
      const sinks = Tensor.from(sinksArr, [hq]);
      const out = Tensor.zeros([N, hq * d]);
      decodeAttentionWasm(q, queries, sinks, hq, hkv, d, 1 / Math.sqrt(d), out);
      const od = out.data(), qd = q.data();
      const qrow = new Float32Array(hq * d), want = new Float32Array(hq * d), scores = new Float64Array(200);
      let worst = 0;
      queries.forEach((s, t) => {
        for (let h = 0; h < hq; h++) qrow.set(qd.subarray((h * N + t) * d, (h * N + t + 1) * d), h * d);
        decodeAttentionOne(qrow, 0, s.cache.k.data(), s.cache.v.data(), s.lo, s.hi, { hq, hkv, d, slots: s.cache.slots }, sinksArr, 1 / Math.sqrt(d), want, 0, scores);
        for (let e = 0; e < hq * d; e++) worst = Math.max(worst, Math.abs(od[t * hq * d + e] - want[e]));
      });
      assert.ok(worst < 3e-6, `max |Δ| ${worst}`);
      for (const x of [q, sinks, out]) x.dispose();
      full.dispose(); ring.dispose();
    });
  }
});
