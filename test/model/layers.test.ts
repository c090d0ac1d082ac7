import assert from 'node:assert/strict';
import { test } from 'node:test';
import { getBackend, Tensor } from '../../src/engine/index.ts';
import { createBlockMask } from '../../src/attention/block-mask.ts';
import { slidingWindowMask } from '../../src/attention/masks.ts';
import type { LayerContext } from '../../src/model/layers/context.ts';
import { attentionBackward, attentionForward, disposeAttentionSaved, type AttentionParams } from '../../src/model/layers/attention.ts';
import { expertBackward, expertForward } from '../../src/model/layers/expert.ts';
import { headBackward, headForward } from '../../src/model/layers/head.ts';
import { linearBackward, linearForward, type LinearParams } from '../../src/model/layers/linear.ts';
import { moeBackward, moeForward, route, type MoeParams } from '../../src/model/layers/moe.ts';
import { rmsnormBackward, rmsnormForward } from '../../src/model/layers/rmsnorm.ts';
import { RopeTable, yarnParams } from '../../src/model/layers/rope.ts';
import { directionalCheck, dot } from './helpers.ts';

const ctx: LayerContext = { backend: getBackend('reference'), impl: 'reference', attention: 'flex', attnBlock: 4 };
const rnd = (shape: number[], seed: number, std = 0.5) => Tensor.randn(shape, seed, { std });
const zeros = (shape: readonly number[]) => Tensor.zeros([...shape]);

/** Objective Σ R ⊙ y with a fixed random R; its gradient wrt y is R. */
function probe(shape: readonly number[], seed: number): { R: Tensor; J: (y: Tensor) => number } {
  const R = rnd([...shape], seed, 1);
  return { R, J: (y) => { const v = dot(y.data(), R.data()); y.dispose(); return v; } };
}

test('linear with bias and LoRA: dx, dW, db, dA, dB match finite differences', () => {
  const x = rnd([5, 6], 1);
  const p: LinearParams = { weight: rnd([4, 6], 2), bias: rnd([4], 3), gradWeight: zeros([4, 6]), gradBias: zeros([4]) };
  p.lora = { a: rnd([2, 6], 4), b: rnd([4, 2], 5), scale: 1.5, gradA: zeros([2, 6]), gradB: zeros([4, 2]) };
  const { R, J } = probe([5, 4], 6);
  const f = () => J(linearForward(ctx, p, x).y);
  const { y, saved } = linearForward(ctx, p, x);
  const dx = linearBackward(ctx, p, x, saved, R);
  y.dispose();
  directionalCheck('x', f, x, dx.toArray());
  directionalCheck('W', f, p.weight, p.gradWeight!.toArray());
  directionalCheck('b', f, p.bias!, p.gradBias!.toArray());
  directionalCheck('A', f, p.lora.a, p.lora.gradA!.toArray());
  directionalCheck('B', f, p.lora.b, p.lora.gradB!.toArray());
  // without adapters the output is the base linear exactly
  const base = linearForward(ctx, p, x, false).y.toArray();
  const plain = ctx.backend.addBias(ctx.backend.matmul(x, p.weight, { transB: true }), p.bias!).toArray();
  assert.deepEqual(base, plain);
});

test('RMSNorm: dx and dw match finite differences', () => {
  const x = rnd([4, 8], 7), p = { weight: rnd([8], 8), gradWeight: zeros([8]) };
  const { R, J } = probe([4, 8], 9);
  const f = () => { const r = rmsnormForward(ctx, p, x, 1e-5); r.rstd.dispose(); return J(r.y); };
  const r = rmsnormForward(ctx, p, x, 1e-5);
  const dx = rmsnormBackward(ctx, p, x, r.rstd, R);
  directionalCheck('x', f, x, dx.toArray());
  directionalCheck('w', f, p.weight, p.gradWeight.toArray());
});

function attnParams(C: number, hq: number, hkv: number, d: number, seed: number): AttentionParams {
  const lin = (o: number, i: number, s: number): LinearParams => ({ weight: rnd([o, i], s), bias: rnd([o], s + 100, 0.1), gradWeight: zeros([o, i]), gradBias: zeros([o]) });
  return { q: lin(hq * d, C, seed), k: lin(hkv * d, C, seed + 1), v: lin(hkv * d, C, seed + 2), o: lin(C, hq * d, seed + 3), sinks: Tensor.from([0.3, -0.5, 1.2, 0.1], [hq]), gradSinks: zeros([hq]) };
}

test('attention block (GQA, YaRN RoPE, sinks, sliding window): every gradient matches finite differences', () => {
  const C = 12, hq = 4, hkv = 2, d = 8, N = 11;
  const dims = { hq, hkv, d };
  const p = attnParams(C, hq, hkv, d, 20);
  const rope = new RopeTable(yarnParams({ head_dim: d, rope_theta: 100, rope_scaling: { rope_type: 'yarn', factor: 4, beta_fast: 8, beta_slow: 1, original_max_position_embeddings: 16, truncate: false } }));
  const positions = Int32Array.from({ length: N }, (_, i) => i + 3);
  const bm = createBlockMask(slidingWindowMask(4), N, N, 4);
  const x = rnd([N, C], 30);
  const { R, J } = probe([N, C], 31);
  const f = () => { const r = attentionForward(ctx, p, dims, x, positions, rope, bm, true); disposeAttentionSaved(r.saved); return J(r.y); };
  const r = attentionForward(ctx, p, dims, x, positions, rope, bm, true);
  const dx = attentionBackward(ctx, p, dims, r.saved, rope, R);
  directionalCheck('x', f, x, dx.toArray());
  for (const k of ['q', 'k', 'v', 'o'] as const) {
    directionalCheck(`${k}.weight`, f, p[k].weight, p[k].gradWeight!.toArray());
    directionalCheck(`${k}.bias`, f, p[k].bias!, p[k].gradBias!.toArray());
  }
  directionalCheck('sinks', f, p.sinks!, p.gradSinks!.toArray());
});

test('MoE routing: top-k by logit with ties to the lower index, softmax over the chosen k only', () => {
  const logits = Float32Array.from([0.1, 2, -1, 2, 0.5, /* row 2 */ 3, 1, 0, -2, 1]);
  const r = route(logits, 2, 5, 2);
  assert.deepEqual([...r.experts], [1, 3, 0, 1]);
  assert.ok(Math.abs(r.weights[0] - 0.5) < 1e-7 && Math.abs(r.weights[1] - 0.5) < 1e-7);
  const e = Math.exp(3) / (Math.exp(3) + Math.exp(1));
  assert.ok(Math.abs(r.weights[2] - e) < 1e-6 && Math.abs(r.weights[3] - (1 - e)) < 1e-6);
});

test('MoE layer: router, expert weights/biases and input gradients match finite differences', () => {
  const C = 8, E = 4, I = 6, N = 9, k = 2;
  const p: MoeParams = {
    router: { weight: rnd([E, C], 40, 1), bias: rnd([E], 41, 0.5), gradWeight: zeros([E, C]), gradBias: zeros([E]) },
    experts: { w1: rnd([E, C, 2 * I], 42), b1: rnd([E, 2 * I], 43, 0.2), w2: rnd([E, I, C], 44), b2: rnd([E, C], 45, 0.2) },
    grad: { w1: zeros([E, C, 2 * I]), b1: zeros([E, 2 * I]), w2: zeros([E, I, C]), b2: zeros([E, C]) },
  };
  const x = rnd([N, C], 46, 1);
  const { R, J } = probe([N, C], 47);
  const f = () => J(moeForward(ctx, p, x, k, 7, true).y);
  const r = moeForward(ctx, p, x, k, 7, true);
  const used = new Set(r.saved.routing.experts);
  assert.ok(used.size >= 3, 'the test input should reach most experts');
  const off = r.saved.offsets;
  assert.equal(off[E], N * k);
  for (let e = 0; e < E; e++) for (let pos = off[e]; pos < off[e + 1]; pos++) assert.equal(r.saved.routing.experts[r.saved.slots[pos]], e);
  const dx = moeBackward(ctx, p, r.saved, R, 7);
  // small steps: top-k selection must not flip between the two evaluations
  const eps = 1e-3, tol = 5e-3;
  directionalCheck('x', f, x, dx.toArray(), { eps, tol });
  directionalCheck('router.weight', f, p.router.weight, p.router.gradWeight!.toArray(), { eps, tol });
  directionalCheck('router.bias', f, p.router.bias!, p.router.gradBias!.toArray(), { eps, tol });
  for (const key of ['w1', 'b1', 'w2', 'b2'] as const) directionalCheck(key, f, p.experts[key], p.grad![key]!.toArray(), { eps, tol });
});

test('expert: interleaved gate/up, clamped SwiGLU (gate ≤ 7, |up| ≤ 7, (up + 1)), gradients incl. the clamped region', () => {
  const C = 3, I = 2, one = Int32Array.of(0, 2);
  // one expert, stacked layout [1, …]
  const w = {
    w1: Tensor.from([1, 0, 0, 0, /**/ 0, 1, 0, 0, /**/ 0, 0, 1, 1], [1, C, 2 * I]), b1: Tensor.from([0, 0, 0, 0], [1, 2 * I]),
    w2: Tensor.from([1, 0, 0, 0, 1, 0], [1, I, C]), b2: Tensor.from([0, 0, 0.5], [1, C]),
  };
  // row 0: gate0 = 2, up0 = 3, gate1 = up1 = 1; row 1: gate0 = 9 (clamped to 7), up0 = −10 (clamped to −7)
  const x = Tensor.from([2, 3, 1, 9, -10, 0.5], [2, C]);
  const { y, saved } = expertForward(ctx, w, x, one, 7);
  const glu = (g: number) => g / (1 + Math.exp(-1.702 * g));
  const out = y.toArray();
  assert.ok(Math.abs(out[0] - glu(2) * 4) < 1e-5);
  assert.ok(Math.abs(out[1] - glu(1) * 2) < 1e-5);
  assert.ok(Math.abs(out[2] - 0.5) < 1e-7);
  assert.ok(Math.abs(out[3] - glu(7) * -6) < 1e-4);
  // gradient wrt x through a clamp is zero for the clamped coordinates
  const dx = expertBackward(ctx, w, {}, x, one, saved, Tensor.from([1, 0, 0, 1, 0, 0], [2, C]), 7).toArray();
  assert.equal(dx[3], 0);
  assert.equal(dx[4], 0);
  assert.ok(Math.abs(dx[1] - glu(2)) < 1e-5);
  const { R, J } = probe([2, C], 50);
  const g = { w1: zeros([1, C, 2 * I]), b1: zeros([1, 2 * I]), w2: zeros([1, I, C]), b2: zeros([1, C]) };
  const s2 = expertForward(ctx, w, x, one, 7);
  const dx2 = expertBackward(ctx, w, g, x, one, s2.saved, R, 7);
  const f = () => J(expertForward(ctx, w, x, one, 7).y);
  for (const [name, t, gr] of [['x', x, dx2], ['w1', w.w1, g.w1], ['b1', w.b1, g.b1], ['w2', w.w2, g.w2], ['b2', w.b2, g.b2]] as const) {
    directionalCheck(name, f, t, gr.toArray(), { eps: 1e-3 });
  }
});

test('grouped experts (Wasm grouped matmul on offset pointers) equal each expert run alone, including an empty group', () => {
  const E = 3, C = 8, I = 4, offsets = Int32Array.of(0, 2, 2, 7);
  const w = { w1: rnd([E, C, 2 * I], 70), b1: rnd([E, 2 * I], 71), w2: rnd([E, I, C], 72), b2: rnd([E, C], 73) };
  const x = rnd([7, C], 74, 1), dy = rnd([7, C], 75, 1);
  const grads = () => ({ w1: zeros([E, C, 2 * I]), b1: zeros([E, 2 * I]), w2: zeros([E, I, C]), b2: zeros([E, C]) });
  const wasm: LayerContext = { backend: getBackend('wasm'), impl: 'wasm', attention: 'flex', attnBlock: 4 };
  const gw = grads();
  const fw = expertForward(wasm, w, x, offsets, 7);
  const dxw = expertBackward(wasm, w, gw, x, offsets, fw.saved, dy, 7).toArray();
  const yw = fw.y.toArray();
  // oracle: each expert alone (E = 1) on its rows with the reference backend
  const part = (t: Tensor, e: number) => Tensor.from(t.data().subarray(e * (t.size / E), (e + 1) * (t.size / E)), [1, ...t.shape.slice(1)]);
  const rowsOf = (t: Tensor, a: number, b: number) => Tensor.from(t.data().subarray(a * C, b * C), [b - a, C]);
  for (let e = 0; e < E; e++) {
    const a = offsets[e], b = offsets[e + 1];
    const we = { w1: part(w.w1, e), b1: part(w.b1, e), w2: part(w.w2, e), b2: part(w.b2, e) };
    const ge = grads();
    const ge1 = { w1: part(ge.w1, 0), b1: part(ge.b1, 0), w2: part(ge.w2, 0), b2: part(ge.b2, 0) };
    if (b > a) {
      const one = Int32Array.of(0, b - a);
      const fe = expertForward(ctx, we, rowsOf(x, a, b), one, 7);
      const dxe = expertBackward(ctx, we, ge1, rowsOf(x, a, b), one, fe.saved, rowsOf(dy, a, b), 7).toArray();
      fe.y.toArray().forEach((v, i) => assert.ok(Math.abs(v - yw[a * C + i]) < 1e-4));
      dxe.forEach((v, i) => assert.ok(Math.abs(v - dxw[a * C + i]) < 1e-4));
    }
    for (const key of ['w1', 'b1', 'w2', 'b2'] as const) {
      const got = part(gw[key], e).toArray(), want = ge1[key].toArray();
      for (let i = 0; i < got.length; i++) assert.ok(Math.abs(got[i] - want[i]) < 1e-4, `${key}[${e}]`);
      if (b === a) assert.ok(got.every((v) => v === 0), 'an empty group gets no gradient');
    }
  }
});

test('unembedding + log-probs: gradients match finite differences, ignored targets give 0 and no gradient', () => {
  const N = 5, C = 6, V = 10;
  const W = rnd([V, C], 60), gW = zeros([V, C]), h = rnd([N, C], 61, 1);
  const targets = Int32Array.from([3, -1, 9, 0, 3]);
  const c = Float32Array.from([0.5, 0.7, -1, 2, 0.3]);
  const f = () => { const r = headForward(ctx, W, h, targets); r.saved.logits.dispose(); r.saved.lse.dispose(); return dot(r.logprobs, c); };
  const r = headForward(ctx, W, h, targets);
  assert.equal(r.logprobs[1], 0);
  assert.ok(r.logprobs.every((v) => v <= 0));
  const dh = headBackward(ctx, W, gW, r.saved, c);
  directionalCheck('h', f, h, dh.toArray());
  directionalCheck('W', f, W, gW.toArray());
});
