import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Mulberry32Rng } from '../../src/engine/index.ts';
import { applyLora } from '../../src/model/lora.ts';
import { GptOssModel } from '../../src/model/model.ts';
import { directionalCheck, randomTokens, testConfig, weighted } from './helpers.ts';

test('LoRA: fresh adapters change nothing, base is frozen, adapter gradients match finite differences, adapters: false is the base', () => {
  const cfg = testConfig();
  const model = new GptOssModel(cfg, { impl: 'reference', seed: 14 });
  const n = 12;
  const input = { tokens: randomTokens(n, cfg.vocab_size, 1), targets: randomTokens(n, cfg.vocab_size, 2), batch: 2 };
  const before = model.logprobs(input).logprobs;
  const adapters = applyLora(model, { rank: 2, alpha: 4, seed: 3 });
  assert.equal(adapters.size, cfg.num_hidden_layers * 4 * 2);
  assert.deepEqual(model.logprobs(input).logprobs, before, 'B = 0 at init');
  const rng = new Mulberry32Rng(5);
  for (const [name, t] of adapters) if (name.includes('lora_B')) t.data().forEach((_, i, d) => { d[i] = rng.normal() * 0.3; });
  const tuned = model.logprobs(input).logprobs;
  assert.notDeepEqual(tuned, before);
  assert.deepEqual(model.logprobs(input, { adapters: false }).logprobs, before, 'the base without adapters is the reference policy');
  const names = [...model.gradients().keys()];
  assert.ok(names.length === adapters.size && names.every((k) => k.includes('.lora_')), 'only adapters are trainable');
  assert.equal(model.trainable().length, adapters.size);
  const c = Float32Array.from({ length: n }, () => rng.uniform(-1, 1));
  model.forward(input);
  model.backward(c);
  const f = () => weighted(model.logprobs(input).logprobs, c);
  let i = 0;
  for (const [name, g] of model.gradients()) directionalCheck(name, f, model.param(name), g.toArray(), { seed: ++i });
  assert.ok(model.grad('model.layers.0.self_attn.q_proj.weight')!.toArray().every((v) => v === 0), 'frozen base gets no gradient');
  // a few optimizer steps move the adapters and lower the loss while the base stays put
  const base = model.param('model.layers.0.self_attn.q_proj.weight').toArray();
  const opt = model.optimizer({ lr: 3e-2, weightDecay: 0 });
  const l0 = model.forward(input).loss;
  model.backward();
  for (let s = 0; s < 10; s++) { opt.update(); model.zeroGrad(); model.forward(input); model.backward(); }
  assert.ok(model.forward(input).loss < l0);
  model.releaseState();
  assert.deepEqual(model.param('model.layers.0.self_attn.q_proj.weight').toArray(), base);
  assert.throws(() => applyLora(model, { rank: 2, alpha: 4 }), /already has adapters/);
  opt.dispose();
  model.dispose();
});

test('LoRA with gradient checkpointing and packed documents: identical adapter gradients to the plain run', () => {
  const cfg = testConfig();
  const input = { tokens: randomTokens(16, cfg.vocab_size, 7), targets: randomTokens(16, cfg.vocab_size, 8), docIds: [0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1] };
  const run = (checkpointing: boolean) => {
    const m = new GptOssModel(cfg, { seed: 16, checkpointing });
    const ad = applyLora(m, { rank: 3, alpha: 3, targets: ['q_proj', 'v_proj'], seed: 1 });
    const rng = new Mulberry32Rng(2);
    for (const [name, t] of ad) if (name.includes('lora_B')) t.data().forEach((_, i, d) => { d[i] = rng.normal() * 0.2; });
    m.forward(input);
    m.backward();
    const g = new Map([...m.gradients()].map(([k, v]) => [k, v.toArray()]));
    m.dispose();
    return g;
  };
  const a = run(false), b = run(true);
  assert.equal(a.size, cfg.num_hidden_layers * 2 * 2);
  for (const [k, g] of a) {
    assert.deepEqual(b.get(k), g, k);
    assert.ok(g.some((v) => v !== 0), `${k} has a gradient`);
  }
});

for (const mlp of ['moe', 'dense'] as const) {
  test(`expert LoRA (${mlp}): per-expert adapter gradients match finite differences; adapters: false is the base`, () => {
    const cfg = testConfig(mlp === 'dense' ? { mlp, num_local_experts: 1, num_experts_per_tok: 1, num_hidden_layers: 1 } : { num_hidden_layers: 1 });
    const model = new GptOssModel(cfg, { impl: 'reference', seed: 17 });
    const n = 10;
    const input = { tokens: randomTokens(n, cfg.vocab_size, 9), targets: randomTokens(n, cfg.vocab_size, 10) };
    const before = model.logprobs(input).logprobs;
    const ad = applyLora(model, { rank: 2, alpha: 2, targets: ['experts', 'o_proj'], seed: 4 });
    const pre = mlp === 'moe' ? 'model.layers.0.mlp.experts' : 'model.layers.0.mlp';
    assert.ok(ad.has(`${pre}.gate_up_proj.lora_A`) && ad.has(`${pre}.down_proj.lora_B`));
    assert.deepEqual(ad.get(`${pre}.gate_up_proj.lora_A`)!.shape, [cfg.num_local_experts, cfg.hidden_size, 2]);
    assert.deepEqual(model.logprobs(input).logprobs, before);
    const rng = new Mulberry32Rng(6);
    for (const [name, t] of ad) if (name.includes('lora_B')) t.data().forEach((_, i, d) => { d[i] = rng.normal() * 0.3; });
    assert.deepEqual(model.logprobs(input, { adapters: false }).logprobs, before);
    const c = Float32Array.from({ length: n }, () => rng.uniform(-1, 1));
    model.forward(input);
    model.backward(c);
    const f = () => weighted(model.logprobs(input).logprobs, c);
    let i = 0;
    for (const [name, g] of model.gradients()) directionalCheck(name, f, model.param(name), g.toArray(), { seed: ++i, eps: 1e-3 });
    model.dispose();
  });
}
