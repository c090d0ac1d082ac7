import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { eagerAttentionWasm, EagerBudgetError } from '../../src/attention/eager-wasm.ts';
import { eagerAttention } from '../../src/attention/eager.ts';
import { createBlockMask } from '../../src/attention/block-mask.ts';
import { causalMask, slidingWindowMask } from '../../src/attention/masks.ts';
import { Tensor } from '../../src/engine/tensor.ts';
import { engineMemory, measureMemory } from '../../src/engine/memory.ts';
import { shutdownRuntime } from '../../src/engine/runtime.ts';
import { randTensor, relErr, rng } from './helpers.ts';

after(() => shutdownRuntime());

test('Wasm eager baseline equals the float64 oracle and accounts its full [Hq, T, S] matrices (scores + probs forward; dP + dS on top of probs backward)', () => {
  const r = rng(51);
  const hkv = 2, group = 3, T = 96, d = 16;
  for (const [mask, prefix] of [[causalMask(), 0], [slidingWindowMask(20), 8]] as const) {
    const S = T + prefix;
    const q = randTensor(r, [hkv * group, T, d]), k = randTensor(r, [hkv, S, d]), v = randTensor(r, [hkv, S, d]), dO = randTensor(r, [hkv * group, T, d]);
    const sinks = Float64Array.from(Float32Array.from(randTensor(r, [hkv * group, 1, 1]).data));
    const round = (x: typeof q) => ({ data: Float64Array.from(Float32Array.from(x.data)), shape: x.shape });
    const blockMask = createBlockMask(mask, T, S, 32, { qOffset: prefix });
    const ref = eagerAttention(round(q), round(k), round(v), { blockMask, sinks, gqa: true });
    const refG = ref.backward(round(dO));
    const tq = Tensor.from(q.data, q.shape), tk = Tensor.from(k.data, k.shape), tv = Tensor.from(v.data, v.shape), tdo = Tensor.from(dO.data, dO.shape);
    const { result: out, memory: mf } = measureMemory(() => eagerAttentionWasm(tq, tk, tv, { blockMask, sinks: Float32Array.from(sinks), gqa: true }));
    const full = hkv * group * T * S * 4;
    assert.equal(mf.tags['attn.eager.scores'].peakBytes, full);
    assert.ok(mf.peakDeltaBytes >= 2 * full);
    const { result: g, memory: mb } = measureMemory(() => out.backward(tdo));
    assert.ok(mb.peakDeltaBytes >= 2 * full, `backward peak ${mb.peakDeltaBytes}`);
    assert.equal(mb.tags['attn.eager.probs'].liveBytes, 0);
    assert.ok(relErr(out.o.data(), ref.o.data, 1) < 1e-5);
    assert.ok(relErr(out.lse.data(), ref.lse, 1) < 1e-5);
    assert.ok(relErr(g.dq.data(), refG.dq.data, 1) < 1e-4);
    assert.ok(relErr(g.dk.data(), refG.dk.data, 1) < 1e-4);
    assert.ok(relErr(g.dv.data(), refG.dv.data, 1) < 1e-4);
    assert.ok(relErr(g.dsinks!, refG.dsinks!, 1) < 1e-4);
    for (const x of [g.dq, g.dk, g.dv, tq, tk, tv, tdo]) x.dispose();
    out.dispose();
  }
});

test('Wasm eager baseline refuses allocations beyond its memory budget', () => {
  const T = 64, d = 8;
  const q = Tensor.zeros([4, T, d]), k = Tensor.zeros([4, T, d]), v = Tensor.zeros([4, T, d]);
  const blockMask = createBlockMask(causalMask(), T, T, 32);
  const before = engineMemory.liveBytes;
  assert.throws(() => eagerAttentionWasm(q, k, v, { blockMask, budgetBytes: before + 4 * T * T * 4 }), EagerBudgetError);
  assert.equal(engineMemory.liveBytes, before);
  for (const x of [q, k, v]) x.dispose();
});
