import { test } from 'node:test';
import assert from 'node:assert/strict';
import { blockwiseAttention, blockwiseForward } from '../../src/attention/blockwise.ts';
import { eagerAttention } from '../../src/attention/eager.ts';
import { createBlockMask } from '../../src/attention/block-mask.ts';
import { causalMask, documentMask, andMasks, slidingWindowMask } from '../../src/attention/masks.ts';
import type { AttentionMask } from '../../src/attention/masks.ts';
import type { HeadTensor } from '../../src/attention/types.ts';
import { allFinite, maxAbs, maxAbsDiff, randTensor, relErr, rng } from './helpers.ts';

type T64 = HeadTensor<Float64Array>;

function problem(seed: number, hkv: number, group: number, t: number, d: number, prefix = 0) {
  const r = rng(seed);
  const hq = hkv * group, S = t + prefix;
  return { q: randTensor(r, [hq, t, d]), k: randTensor(r, [hkv, S, d]), v: randTensor(r, [hkv, S, d]), R: randTensor(r, [hq, t, d]), sinks: randTensor(r, [hq, 1, 1]).data, hq, S };
}

test('gradients match central finite differences (float64, loss = Σ O ⊙ R)', () => {
  for (const [mask, prefix] of [[slidingWindowMask(3), 2], [causalMask(), 0]] as [AttentionMask, number][]) {
    const p = problem(3, 1, 2, 5, 3, prefix);
    const blockMask = createBlockMask(mask, 5, p.S, 2, { qOffset: prefix });
    const loss = (q: T64, k: T64, v: T64, sinks: Float64Array): number => {
      const o = blockwiseForward(q, k, v, { blockMask, sinks, gqa: true }).o.data;
      let s = 0;
      for (let i = 0; i < o.length; i++) s += o[i] * p.R.data[i];
      return s;
    };
    const g = blockwiseAttention(p.q, p.k, p.v, { blockMask, sinks: p.sinks, gqa: true }).backward(p.R);
    const eps = 1e-6;
    const fd = (arr: Float64Array): Float64Array => {
      const out = new Float64Array(arr.length);
      for (let i = 0; i < arr.length; i++) {
        const x = arr[i];
        arr[i] = x + eps; const up = loss(p.q, p.k, p.v, p.sinks);
        arr[i] = x - eps; const dn = loss(p.q, p.k, p.v, p.sinks);
        arr[i] = x;
        out[i] = (up - dn) / (2 * eps);
      }
      return out;
    };
    assert.ok(relErr(g.dq.data, fd(p.q.data)) < 1e-6, 'dQ');
    assert.ok(relErr(g.dk.data, fd(p.k.data)) < 1e-6, 'dK');
    assert.ok(relErr(g.dv.data, fd(p.v.data)) < 1e-6, 'dV');
    assert.ok(relErr(g.dsinks!, fd(p.sinks)) < 1e-6, 'dSinks');
  }
});

test('dσ ≤ 0 for loss ½‖O‖² (dO = O): gradient descent raises the sink', () => {
  const p = problem(4, 2, 2, 40, 8);
  const blockMask = createBlockMask(causalMask(), 40, 40, 16);
  const out = blockwiseAttention(p.q, p.k, p.v, { blockMask, sinks: p.sinks, gqa: true });
  const g = out.backward(out.o);
  for (const x of Array.from(g.dsinks!)) assert.ok(x < 0);
});

test('σ = −1e30 and "no sink" both reproduce plain softmax attention; σ = +80 silences the output', () => {
  const p = problem(5, 1, 2, 30, 8);
  const blockMask = createBlockMask(slidingWindowMask(7), 30, 30, 8);
  const plain = blockwiseAttention(p.q, p.k, p.v, { blockMask, sinks: null, gqa: true });
  const tiny = blockwiseAttention(p.q, p.k, p.v, { blockMask, sinks: new Float64Array([-1e30, -1e30]), gqa: true });
  assert.ok(maxAbsDiff(plain.o.data, tiny.o.data) < 1e-15);
  assert.ok(maxAbsDiff(plain.lse, tiny.lse) < 1e-12);
  const gPlain = plain.backward(p.R), gTiny = tiny.backward(p.R);
  assert.ok(maxAbsDiff(gPlain.dq.data, gTiny.dq.data) < 1e-14);
  assert.equal(gPlain.dsinks, null);
  assert.ok(maxAbs(gTiny.dsinks!) === 0);
  const loud = blockwiseAttention(p.q, p.k, p.v, { blockMask, sinks: new Float64Array([80, 80]), gqa: true });
  assert.ok(maxAbs(loud.o.data) < 1e-30 * maxAbs(p.v.data));
});

test('form B: O_with_sink = O_plain · sigmoid(ℓ − σ) with ℓ the plain LSE', () => {
  const p = problem(6, 2, 4, 50, 16, 10);
  const blockMask = createBlockMask(causalMask(), 50, p.S, 16, { qOffset: 10 });
  const withSink = blockwiseForward(p.q, p.k, p.v, { blockMask, sinks: p.sinks, gqa: true });
  const plain = blockwiseForward(p.q, p.k, p.v, { blockMask, sinks: null, gqa: true });
  const d = 16, t = 50;
  let err = 0;
  for (let h = 0; h < p.hq; h++) for (let i = 0; i < t; i++) {
    const ell = plain.lse[h * t + i];
    const alpha = 1 / (1 + Math.exp(p.sinks[h] - ell));
    for (let e = 0; e < d; e++) err = Math.max(err, Math.abs(plain.o.data[(h * t + i) * d + e] * alpha - withSink.o.data[(h * t + i) * d + e]));
    const L = Math.max(ell, p.sinks[h]) + Math.log1p(Math.exp(-Math.abs(ell - p.sinks[h])));
    err = Math.max(err, Math.abs(L - withSink.lse[h * t + i]));
  }
  assert.ok(err < 1e-12, `forms A/C vs B: ${err}`);
});

test('closed form: Q = 0, V ≡ 1 gives n_i / (n_i + e^σ) with n_i = min(p_i + 1, W)', () => {
  const hq = 2, t = 600, d = 4;
  const q = { data: new Float64Array(hq * t * d), shape: [hq, t, d] };
  const k = randTensor(rng(8), [1, t, d]);
  const v = { data: new Float64Array(t * d).fill(1), shape: [1, t, d] };
  const sinks = new Float64Array([0, 1.5]);
  const out = blockwiseForward(q, k, v, { blockMask: createBlockMask(slidingWindowMask(128), t, t, 64), sinks, gqa: true });
  for (let h = 0; h < hq; h++) for (const i of [0, 1, 127, 128, 500, 599]) {
    const n = Math.min(i + 1, 128);
    assert.ok(Math.abs(out.o.data[(h * t + i) * d] - n / (n + Math.exp(sinks[h]))) < 1e-14);
  }
  assert.ok(Math.abs(out.o.data[0] - 0.5) < 1e-15);
  assert.ok(Math.abs(out.o.data[500 * d] - 128 / 129) < 1e-14);
});

test('W = 1: each query sees only itself', () => {
  const p = problem(9, 1, 1, 20, 4);
  const out = blockwiseForward(p.q, p.k, p.v, { blockMask: createBlockMask(slidingWindowMask(1), 20, 20, 8), sinks: p.sinks });
  const c = 0.5;
  for (let i = 0; i < 20; i++) {
    let s = 0;
    for (let e = 0; e < 4; e++) s += p.q.data[i * 4 + e] * p.k.data[i * 4 + e];
    const w = Math.exp(c * s) / (Math.exp(c * s) + Math.exp(p.sinks[0]));
    for (let e = 0; e < 4; e++) assert.ok(Math.abs(out.o.data[i * 4 + e] - w * p.v.data[i * 4 + e]) < 1e-14);
  }
});

test('fully masked rows: O = 0, L = σ, dQ = 0, no NaN (keys too old for the window, and pad rows)', () => {
  const p = problem(10, 1, 2, 6, 4);
  // keys at positions 0..5, queries at 100..105, window 4: nothing visible
  const blockMask = createBlockMask(slidingWindowMask(4), 6, 6, 4, { qOffset: 100 });
  assert.equal(blockMask.numFull + blockMask.numPartial, 0);
  for (const impl of [blockwiseAttention, eagerAttention]) {
    const out = impl(p.q, p.k, p.v, { blockMask, sinks: p.sinks, gqa: true });
    assert.equal(maxAbs(out.o.data), 0);
    for (let h = 0; h < 2; h++) for (let i = 0; i < 6; i++) assert.equal(out.lse[h * 6 + i], p.sinks[h]);
    const g = out.backward(p.R);
    for (const a of [g.dq.data, g.dk.data, g.dv.data, g.dsinks!]) { assert.ok(allFinite(a)); assert.equal(maxAbs(a), 0); }
    const none = impl(p.q, p.k, p.v, { blockMask, sinks: null, gqa: true });
    assert.ok(allFinite(none.o.data));
    assert.ok(allFinite(none.backward(p.R).dq.data));
  }
  // pad rows in a packed batch: id −1 positions see only other pads, which here means nothing outside their own pad doc
  const ids = [0, 0, 0, 1, 1, 2];
  const docMask = createBlockMask(andMasks(causalMask(), documentMask(ids)), 6, 6, 4);
  const o = blockwiseAttention(p.q, p.k, p.v, { blockMask: docMask, sinks: p.sinks, gqa: true });
  const oe = eagerAttention(p.q, p.k, p.v, { blockMask: docMask, sinks: p.sinks, gqa: true });
  assert.ok(maxAbsDiff(o.o.data, oe.o.data) < 1e-14);
});

test('GQA equals explicit repeat-interleave of K and V; dK/dV are the group sums', () => {
  const hkv = 2, group = 3, t = 33, d = 8;
  const p = problem(11, hkv, group, t, d);
  const blockMask = createBlockMask(causalMask(), t, t, 16);
  const gqa = blockwiseAttention(p.q, p.k, p.v, { blockMask, sinks: p.sinks, gqa: true });
  const rep = (x: T64): T64 => {
    const out = new Float64Array(hkv * group * t * d);
    for (let h = 0; h < hkv * group; h++) out.set(x.data.subarray(Math.floor(h / group) * t * d, (Math.floor(h / group) + 1) * t * d), h * t * d);
    return { data: out, shape: [hkv * group, t, d] };
  };
  const full = blockwiseAttention(p.q, rep(p.k), rep(p.v), { blockMask, sinks: p.sinks });
  assert.ok(maxAbsDiff(gqa.o.data, full.o.data) < 1e-15);
  const g1 = gqa.backward(p.R), g2 = full.backward(p.R);
  assert.ok(maxAbsDiff(g1.dq.data, g2.dq.data) < 1e-14);
  assert.ok(maxAbsDiff(g1.dsinks!, g2.dsinks!) < 1e-14);
  const sum = (x: Float64Array): Float64Array => {
    const out = new Float64Array(hkv * t * d);
    for (let h = 0; h < hkv * group; h++) for (let n = 0; n < t * d; n++) out[Math.floor(h / group) * t * d + n] += x[h * t * d + n];
    return out;
  };
  assert.ok(maxAbsDiff(g1.dk.data, sum(g2.dk.data)) < 1e-13);
  assert.ok(maxAbsDiff(g1.dv.data, sum(g2.dv.data)) < 1e-13);
  // K, V distinct per kv head: mapping h → floor(h / G), not h mod Hkv
  const swapped = { data: Float64Array.from([...p.k.data.subarray(t * d), ...p.k.data.subarray(0, t * d)]), shape: p.k.shape };
  assert.ok(maxAbsDiff(blockwiseForward(p.q, swapped, p.v, { blockMask, sinks: p.sinks, gqa: true }).o.data, gqa.o.data) > 1e-3);
});

test('extreme scores (|q·k| ~ 1e4) and σ = ±80 stay finite and match the oracle', () => {
  for (const s of [80, -80]) {
    const r = rng(12);
    const q = randTensor(r, [2, 40, 8], 40), k = randTensor(r, [2, 40, 8], 40), v = randTensor(r, [2, 40, 8]);
    const R = randTensor(r, [2, 40, 8]);
    const sinks = new Float64Array([s, -s]);
    const blockMask = createBlockMask(slidingWindowMask(20), 40, 40, 8);
    const a = blockwiseAttention(q, k, v, { blockMask, sinks });
    const b = eagerAttention(q, k, v, { blockMask, sinks });
    assert.ok(allFinite(a.o.data) && allFinite(a.lse));
    assert.ok(maxAbsDiff(a.o.data, b.o.data) < 1e-12);
    assert.ok(relErr(a.lse, b.lse) < 1e-14);
    const ga = a.backward(R), gb = b.backward(R);
    for (const key of ['dq', 'dk', 'dv'] as const) {
      assert.ok(allFinite(ga[key].data));
      assert.ok(relErr(ga[key].data, gb[key].data, 1) < 1e-9, key);
    }
    assert.ok(relErr(ga.dsinks!, gb.dsinks!, 1) < 1e-12);
  }
});
