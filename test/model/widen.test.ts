import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { presetConfig, type GptOssConfig } from '../../src/model/config.ts';
import { GptOssModel } from '../../src/model/model.ts';
import { paramShapes } from '../../src/model/params.ts';
import type { LoadedCheckpoint } from '../../src/model/checkpoint/index.ts';
import { loadWeightsInto } from '../../src/model/checkpoint/model-io.ts';
import { widenAttention, widenedHeadMap } from '../../src/model/checkpoint/widen.ts';
import { randomF32 } from './checkpoint-helpers.ts';

function checkpoint(config: GptOssConfig, seed: number): Pick<LoadedCheckpoint, 'config' | 'params'> {
  const params: LoadedCheckpoint['params'] = new Map();
  [...paramShapes(config)].forEach(([name, shape], i) => {
    const n = shape.reduce((x, y) => x * y, 1);
    params.set(name, { dtype: 'F32', shape, data: name.endsWith('norm.weight') ? new Float32Array(n).fill(1) : randomF32(n, seed * 1000 + i, 0.2) });
  });
  return { config, params };
}

function logprobs(ckpt: Pick<LoadedCheckpoint, 'config' | 'params'>, tokens: number[]): Float32Array {
  const model = new GptOssModel(ckpt.config, { grads: false });
  try {
    loadWeightsInto(model, ckpt.params);
    const r = model.logprobs({ tokens }, { fullLogprobs: true });
    const out = Float32Array.from(r.fullLogprobs!.data());
    r.fullLogprobs!.dispose();
    return out;
  } finally {
    model.dispose();
  }
}

// Long enough to cross the sliding window of the tiny preset's local layers.
const config = presetConfig('tiny-1m', { sliding_window: 8 });
const tokens = Array.from({ length: 40 }, (_, i) => (i * 37 + 11) % config.vocab_size);

describe('widenAttention (more attention heads, the same function)', () => {
  const old = checkpoint(config, 5);
  const before = logprobs(old, tokens);
  const hq = config.num_attention_heads, hkv = config.num_key_value_heads;

  const cases: Array<[string, { kvHeads?: number; queryHeads?: number }]> = [
    ['key/value heads up to multi-head attention', { kvHeads: hq }],
    ['twice the query heads', { queryHeads: 2 * hq }],
    ['twice the query heads and twice the key/value heads', { queryHeads: 2 * hq, kvHeads: 2 * hkv }],
  ];
  for (const [what, opts] of cases) {
    it(`${what}: the same log-probs at every position`, () => {
      const w = widenAttention(old, { ...opts, seed: 1 });
      assert.equal(w.config.num_attention_heads, opts.queryHeads ?? hq);
      assert.equal(w.config.num_key_value_heads, opts.kvHeads ?? hkv);
      for (const [name, shape] of paramShapes(w.config)) assert.deepEqual(w.params.get(name)!.shape, shape, name);
      const after = logprobs(w, tokens);
      assert.equal(after.length, before.length);
      let worst = 0;
      for (let i = 0; i < before.length; i++) worst = Math.max(worst, Math.abs(after[i] - before[i]));
      assert.ok(worst < 1e-4, `max |Δ log p| ${worst}`);
    });
  }

  it('added query heads have fresh q rows and zero o_proj columns; the old heads keep theirs', () => {
    const w = widenAttention(old, { queryHeads: 2 * hq, seed: 1 });
    const d = config.head_dim, C = config.hidden_size;
    const q = w.params.get('model.layers.0.self_attn.q_proj.weight')!.data;
    const o = w.params.get('model.layers.0.self_attn.o_proj.weight')!.data;
    const oldQ = old.params.get('model.layers.0.self_attn.q_proj.weight')!.data;
    const added = w.queryFrom.flatMap((from, h) => (from < 0 ? [h] : []));
    assert.equal(added.length, hq);
    for (const h of added) {
      assert.ok(q.subarray(h * d * C, (h + 1) * d * C).some((v) => v !== 0), `head ${h} has q rows`);
      for (let row = 0; row < C; row++) for (let k = 0; k < d; k++) assert.equal(o[row * 2 * hq * d + h * d + k], 0);
    }
    w.queryFrom.forEach((from, h) => {
      if (from >= 0) assert.deepEqual(Array.from(q.subarray(h * d * C, (h + 1) * d * C)), Array.from(oldQ.subarray(from * d * C, (from + 1) * d * C)));
    });
    // The same seed gives the same added rows.
    assert.deepEqual(Array.from(widenAttention(old, { queryHeads: 2 * hq, seed: 1 }).params.get('model.layers.0.self_attn.q_proj.weight')!.data), Array.from(q));
  });

  it('each old query head reads a copy of the key/value head it read before', () => {
    const m = widenedHeadMap(8, 2, 16, 8);
    m.queryFrom.forEach((from, h) => {
      if (from >= 0) assert.equal(m.kvFrom[Math.floor(h / 2)], Math.floor(from / 4));
    });
    assert.equal(m.queryFrom.filter((f) => f >= 0).length, 8);
  });

  it('refuses shapes it cannot widen to', () => {
    assert.throws(() => widenAttention(old, { kvHeads: hkv + 1 }), /multiple of the checkpoint's/);
    assert.throws(() => widenAttention(old, { queryHeads: hq - 1 }), /at least the checkpoint's/);
    assert.throws(() => widenAttention(old, { queryHeads: hq + 1, kvHeads: 2 * hkv }), /divisible/);
    assert.throws(() => widenAttention(old, { kvHeads: 0 }), /positive integer/);
  });
});
