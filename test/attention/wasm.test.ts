import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { wasmAttention, wasmForward } from '../../src/attention/wasm-arrays.ts';
import { decodeAttention } from '../../src/attention/decode.ts';
import { flexAttention } from '../../src/attention/wasm.ts';
import { backwardChunks } from '../../src/attention/wasm-layout.ts';
import { blockwiseAttention } from '../../src/attention/blockwise.ts';
import { eagerAttention } from '../../src/attention/eager.ts';
import { createBlockMask } from '../../src/attention/block-mask.ts';
import { andMasks, causalMask, customMask, documentMask, slidingWindowMask } from '../../src/attention/masks.ts';
import { Tensor } from '../../src/engine/tensor.ts';
import { measureMemory } from '../../src/engine/memory.ts';
import { shutdownRuntime } from '../../src/engine/runtime.ts';
import type { AttentionMask } from '../../src/attention/masks.ts';
import { compareWithOracle, worst } from './oracle.ts';
import { grid } from './grid.ts';
import { allFinite, f32, maxAbs, randTensor, relErr, rng } from './helpers.ts';

after(() => shutdownRuntime());

test('Wasm path equals the float64 oracle over the grid (forward ≤ 1e-5, gradients ≤ 1e-4)', () => {
  for (const c of grid(36).filter((x) => x.d % 8 === 0)) {
    const e = compareWithOracle(wasmAttention, c, true);
    assert.ok(Math.max(e.o, e.lse) < 1e-5, `${JSON.stringify(c)} → ${JSON.stringify(e)}`);
    assert.ok(worst(e) < 1e-4, `${JSON.stringify(c)} → ${JSON.stringify(e)}`);
  }
});

test('Wasm path: gpt-oss head dim 64, GQA 8, T = 260 (ragged), window 128 and causal, several tile sizes', () => {
  for (const window of [0, 128]) for (const block of [32, 64, 128, { q: 64, kv: 32 }]) {
    const e = compareWithOracle(wasmAttention, { hkv: 1, group: 8, t: 260, d: 64, window, block, seed: 40 }, true);
    assert.ok(worst(e) < 1e-4, JSON.stringify({ window, block, e }));
  }
});

test('Wasm backward vs oracle at T = 512, d = 64, GQA 4 (sinks.md §7.10), causal and window 128', () => {
  for (const window of [0, 128]) {
    const e = compareWithOracle(wasmAttention, { hkv: 1, group: 4, t: 512, d: 64, window, block: 128, prefix: 0, seed: 44 }, true);
    assert.ok(Math.max(e.o, e.lse) < 1e-5 && worst(e) < 1e-4, JSON.stringify({ window, e }));
  }
});

test('Wasm band tiles run in row / key strips: non-square and ragged tiles, query offsets, windows and causal', () => {
  // Strips of 4 rows / keys (6 in the relaxed build) skip the 8-key groups and query rows the band cannot reach;
  // tile sizes that are not multiples of the strip height or of 8, and diagonals that cross tiles at any phase.
  const blocks = [{ q: 13, kv: 24 }, { q: 37, kv: 16 }, { q: 64, kv: 128 }, { q: 128, kv: 64 }, { q: 6, kv: 8 }, { q: 24, kv: 40 }, { q: 5, kv: 11 }];
  blocks.forEach((block, i) => {
    for (const window of [0, 1, 5, 40]) {
      const c = { hkv: 1, group: 2, t: 150, d: 16, window, block, prefix: [0, 9, 130][(i + window) % 3], sinks: window !== 5, seed: 60 + i };
      const e = compareWithOracle(wasmAttention, c, true);
      assert.ok(Math.max(e.o, e.lse) < 1e-5 && worst(e) < 1e-4, JSON.stringify({ c, e }));
    }
  });
});

test('Wasm path with bands that exclude the diagonal (lo > 0: empty first rows) or admit future keys (lo < 0)', () => {
  const r = rng(45);
  const T = 130, d = 16;
  const q = randTensor(r, [4, T, d]), k = randTensor(r, [2, T, d]), v = randTensor(r, [2, T, d]), dO = randTensor(r, [4, T, d]);
  const sinks = Float64Array.from(Float32Array.from(randTensor(r, [4, 1, 1]).data));
  for (const band of [{ lo: 3, hi: 20 }, { lo: -7, hi: 12 }, { lo: 1, hi: Infinity }]) {
    const mask: AttentionMask = { name: `band ${band.lo}..${band.hi}`, band, mod: (_b, _h, qq, kv) => qq - kv >= band.lo && qq - kv <= band.hi };
    for (const block of [{ q: 16, kv: 24 }, 32, { q: 64, kv: 16 }]) {
      const blockMask = createBlockMask(mask, T, T, block);
      const rq = { data: Float64Array.from(f32(q).data), shape: q.shape }, rk = { data: Float64Array.from(f32(k).data), shape: k.shape };
      const rv = { data: Float64Array.from(f32(v).data), shape: v.shape }, rdo = { data: Float64Array.from(f32(dO).data), shape: dO.shape };
      const ref = eagerAttention(rq, rk, rv, { blockMask, sinks, gqa: true });
      const refG = ref.backward(rdo);
      const got = wasmAttention(f32(q), f32(k), f32(v), { blockMask, sinks: Float32Array.from(sinks), gqa: true });
      const g = got.backward(f32(dO));
      const what = `${mask.name} ${JSON.stringify(block)}`;
      assert.ok(relErr(got.o.data, ref.o.data, 1) < 1e-5 && relErr(got.lse, ref.lse, 1) < 1e-5, what);
      for (const [name, a, b] of [['dq', g.dq.data, refG.dq.data], ['dk', g.dk.data, refG.dk.data], ['dv', g.dv.data, refG.dv.data], ['dsinks', g.dsinks!, refG.dsinks!]] as const) {
        assert.ok(allFinite(a) && relErr(a, b, 1) < 1e-4, `${what} ${name}`);
      }
    }
  }
});

test('Wasm path with non-band masks (per-tile byte masks): document packing and a strided custom mask', () => {
  const r = rng(41);
  const T = 150, d = 16;
  const q = randTensor(r, [4, T, d]), k = randTensor(r, [2, T, d]), v = randTensor(r, [2, T, d]), dO = randTensor(r, [4, T, d]);
  const sinks = Float64Array.from(Float32Array.from(randTensor(r, [4, 1, 1]).data));
  const ids = Array.from({ length: T }, (_, p) => (p < 40 ? 0 : p < 41 ? 1 : p < 120 ? 2 : 3));
  const masks: AttentionMask[] = [andMasks(causalMask(), documentMask(ids)), customMask((_b, _h, qq, kv) => kv <= qq && (qq - kv) % 3 !== 1, 'strided')];
  for (const mask of masks) {
    const blockMask = createBlockMask(mask, T, T, 32);
    const rq = { data: Float64Array.from(f32(q).data), shape: q.shape }, rk = { data: Float64Array.from(f32(k).data), shape: k.shape };
    const rv = { data: Float64Array.from(f32(v).data), shape: v.shape }, rdo = { data: Float64Array.from(f32(dO).data), shape: dO.shape };
    const ref = eagerAttention(rq, rk, rv, { blockMask, sinks, gqa: true });
    const refG = ref.backward(rdo);
    const got = wasmAttention(f32(q), f32(k), f32(v), { blockMask, sinks: Float32Array.from(sinks), gqa: true });
    const g = got.backward(f32(dO));
    assert.ok(relErr(got.o.data, ref.o.data, 1) < 1e-5, mask.name);
    assert.ok(relErr(g.dq.data, refG.dq.data, 1) < 1e-4, mask.name);
    assert.ok(relErr(g.dk.data, refG.dk.data, 1) < 1e-4, mask.name);
    assert.ok(relErr(g.dv.data, refG.dv.data, 1) < 1e-4, mask.name);
    assert.ok(relErr(g.dsinks!, refG.dsinks!, 1) < 1e-4, mask.name);
  }
});

test('Wasm path: fully masked rows give O = 0, L = σ and zero, finite gradients; extreme scores stay finite', () => {
  const r = rng(42);
  const q = f32(randTensor(r, [2, 6, 8])), k = f32(randTensor(r, [1, 6, 8])), v = f32(randTensor(r, [1, 6, 8])), dO = f32(randTensor(r, [2, 6, 8]));
  const sinks = new Float32Array([0.25, -1.5]);
  const blockMask = createBlockMask(slidingWindowMask(4), 6, 6, 8, { qOffset: 100 });
  const out = wasmAttention(q, k, v, { blockMask, sinks, gqa: true });
  assert.equal(maxAbs(out.o.data), 0);
  for (let i = 0; i < 12; i++) assert.equal(out.lse[i], sinks[i < 6 ? 0 : 1]);
  const g = out.backward(dO);
  for (const a of [g.dq.data, g.dk.data, g.dv.data, g.dsinks!]) { assert.ok(allFinite(a)); assert.equal(maxAbs(a), 0); }
  const none = wasmAttention(q, k, v, { blockMask, sinks: null, gqa: true });
  assert.ok(allFinite(none.o.data));
  assert.ok(allFinite(none.backward(dO).dq.data));
  // |q·k| ~ 1e4 with σ = ±80
  const big = (x: ReturnType<typeof randTensor>): Float32Array => Float32Array.from(x.data, (y) => 40 * y);
  const qb = { data: big(randTensor(r, [2, 48, 8])), shape: [2, 48, 8] }, kb = { data: big(randTensor(r, [2, 48, 8])), shape: [2, 48, 8] };
  const vb = f32(randTensor(r, [2, 48, 8])), dOb = f32(randTensor(r, [2, 48, 8]));
  const bm = createBlockMask(slidingWindowMask(20), 48, 48, 16);
  const ref = blockwiseAttention({ data: Float64Array.from(qb.data), shape: qb.shape }, { data: Float64Array.from(kb.data), shape: kb.shape },
    { data: Float64Array.from(vb.data), shape: vb.shape }, { blockMask: bm, sinks: new Float64Array([80, -80]) });
  const got = wasmAttention(qb, kb, vb, { blockMask: bm, sinks: new Float32Array([80, -80]) });
  assert.ok(allFinite(got.o.data) && allFinite(got.lse));
  assert.ok(relErr(got.o.data, ref.o.data, 1) < 1e-5);
  assert.ok(allFinite(got.backward(dOb).dq.data));
});

test('flexAttention on engine tensors: the forward adds only O, LSE and small scratch (no T² buffers)', () => {
  const T = 1024, hq = 8, hkv = 2, d = 64;
  const q = Tensor.randn([hq, T, d], 1, { tag: 'test.in' }), k = Tensor.randn([hkv, T, d], 2, { tag: 'test.in' }), v = Tensor.randn([hkv, T, d], 3, { tag: 'test.in' });
  const dO = Tensor.randn([hq, T, d], 4, { tag: 'test.in' });
  const blockMask = createBlockMask(causalMask(), T, T, 128);
  const { result: out, memory } = measureMemory(() => flexAttention(q, k, v, { blockMask, sinks: new Float32Array(hq), gqa: true }));
  const ioBytes = (hq * T * d + hq * T + hq) * 4;
  assert.ok(memory.peakDeltaBytes < ioBytes + 2 * 1024 * 1024, `forward peak ${memory.peakDeltaBytes}`);
  assert.ok(memory.peakDeltaBytes < hq * T * T * 4 / 8);
  const { result: g, memory: mb } = measureMemory(() => out.backward(dO));
  const gradBytes = (hq * T * d + 2 * hkv * T * d) * 4;
  assert.ok(mb.peakDeltaBytes < gradBytes + hq * T * 4 + 2 * 1024 * 1024, `backward peak ${mb.peakDeltaBytes}`);
  assert.equal(mb.liveDeltaBytes, gradBytes);
  for (const t of [g.dq, g.dk, g.dv, q, k, v, dO]) t.dispose();
  out.dispose();
});

test('flexAttention rejects JS-storage tensors and head dims that are not multiples of 8', () => {
  const bm = createBlockMask(causalMask(), 4, 4, 4);
  const js = Tensor.zeros([1, 4, 8], { storage: 'js' });
  assert.throws(() => flexAttention(js, js, js, { blockMask: bm }), /Wasm memory/);
  js.dispose();
  const odd = Tensor.zeros([1, 4, 6]);
  assert.throws(() => flexAttention(odd, odd, odd, { blockMask: bm }), /multiple of 8/);
  odd.dispose();
});

test('Wasm decode: single-token steps against a growing cache equal the matching prefill rows', () => {
  const r = rng(43);
  const T = 90, d = 16;
  const q = f32(randTensor(r, [4, T, d])), K = f32(randTensor(r, [2, T, d])), V = f32(randTensor(r, [2, T, d]));
  const sinks = new Float32Array([0.1, -0.2, 0.3, 0.5]);
  const rows = (x: { data: Float32Array; shape: readonly number[] }, from: number, to: number) => {
    const [h, t, dd] = x.shape;
    const out = new Float32Array(h * (to - from) * dd);
    for (let g = 0; g < h; g++) out.set(x.data.subarray((g * t + from) * dd, (g * t + to) * dd), g * (to - from) * dd);
    return { data: out, shape: [h, to - from, dd] };
  };
  for (const mask of [causalMask(), slidingWindowMask(16)]) {
    const full = wasmForward(q, K, V, { blockMask: createBlockMask(mask, T, T, 32), sinks, gqa: true });
    for (const step of [0, 15, 16, 17, 89]) {
      const one = decodeAttention(rows(q, step, step + 1), rows(K, 0, step + 1), rows(V, 0, step + 1), { mask, sinks, gqa: true, forward: wasmForward });
      assert.ok(relErr(one.o.data, rows(full.o, step, step + 1).data, 1) < 1e-6, `${mask.name} step ${step}`);
    }
  }
});

test('Wasm backward work split: band masks run chunks of kv tiles in two phases, causal one phase per kv head', () => {
  for (const [window, block, t] of [[128, { q: 64, kv: 128 }, 1024], [5, { q: 16, kv: 8 }, 301], [40, 32, 301], [1, { q: 13, kv: 24 }, 150]] as const) {
    const bm = createBlockMask(slidingWindowMask(window), t, t, block);
    const { chunk, phases } = backwardChunks(bm);
    assert.equal(phases, 2, `window ${window}`);
    // chunks of the same parity never share a query tile
    for (let parity = 0; parity < 2; parity++) {
      const owner = new Map<number, number>();
      for (let c = 0; c < bm.numKvTiles; c++) {
        const k = Math.floor(c / chunk);
        if (k % 2 !== parity) continue;
        const rows = [...bm.tPartialIdx.subarray(bm.tPartialStart[c], bm.tPartialStart[c + 1]), ...bm.tFullIdx.subarray(bm.tFullStart[c], bm.tFullStart[c + 1])];
        for (const r of rows) { assert.ok(!owner.has(r) || owner.get(r) === k, `window ${window} r ${r}`); owner.set(r, k); }
      }
    }
  }
  assert.equal(backwardChunks(createBlockMask(causalMask(), 512, 512, 64)).phases, 1);
  assert.equal(backwardChunks(createBlockMask(slidingWindowMask(128), 100, 100, 128)).phases, 1); // a single kv tile
});

test('Wasm two-phase backward (band chunks claimed by several threads): several kv heads, uneven T, windows, offsets', () => {
  // Many kv tiles per head (small tiles) so that concurrently claimed chunks of different heads and kv tiles meet.
  const blocks = [{ q: 16, kv: 8 }, { q: 32, kv: 24 }, { q: 64, kv: 128 }, { q: 8, kv: 40 }];
  blocks.forEach((block, i) => {
    for (const window of [1, 5, 40, 128]) {
      const c = { hkv: 3, group: 2, t: 301, d: 16, window, block, prefix: [0, 7, 150][(i + window) % 3], sinks: (i + window) % 2 === 0, seed: 80 + i };
      const e = compareWithOracle(wasmAttention, c, true);
      assert.ok(Math.max(e.o, e.lse) < 1e-5 && worst(e) < 1e-4, JSON.stringify({ c, e }));
    }
  });
});
