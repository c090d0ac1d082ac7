import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Mulberry32Rng } from '../../src/engine/index.ts';
import { GptOssModel } from '../../src/model/model.ts';
import type { ModelInput } from '../../src/model/batch.ts';
import { directionalCheck, randomTokens, testConfig, weighted } from './helpers.ts';

function objectiveWeights(n: number, seed: number): Float32Array {
  const rng = new Mulberry32Rng(seed);
  return Float32Array.from({ length: n }, () => rng.uniform(-1, 1));
}

function checkAllParams(model: GptOssModel, input: ModelInput, c: Float32Array): number {
  model.zeroGrad();
  model.forward(input);
  model.backward(c);
  const f = () => weighted(model.logprobs(input).logprobs, c);
  let worst = 0, checked = 0;
  for (const [name, g] of model.gradients()) {
    worst = Math.max(worst, directionalCheck(name, f, model.param(name), g.toArray(), { seed: checked + 1 }));
    checked++;
  }
  assert.ok(checked >= 10);
  return worst;
}

test('whole tiny MoE model: every parameter gradient matches finite differences (sinks, router, experts, window + full layers)', () => {
  const cfg = testConfig();
  const model = new GptOssModel(cfg, { impl: 'reference', seed: 3 });
  const B = 2, T = 10, n = B * T;
  const tokens = randomTokens(n, cfg.vocab_size, 11);
  const targets = randomTokens(n, cfg.vocab_size, 12);
  targets[T - 1] = -1;
  // non-zero sinks so their gradient is not at a symmetric point
  const s = model.param('model.layers.0.self_attn.sinks').data();
  for (let h = 0; h < s.length; h++) s[h] = 0.5 * (h - 1);
  const c = objectiveWeights(n, 5);
  c[T - 1] = 0;
  checkAllParams(model, { tokens, batch: B, targets }, c);
  model.dispose();
});

test('packed documents: gradients match finite differences with a document mask and restarting positions', () => {
  const cfg = testConfig({ num_hidden_layers: 1 });
  const model = new GptOssModel(cfg, { impl: 'reference', seed: 4 });
  const n = 14;
  const tokens = randomTokens(n, cfg.vocab_size, 21);
  const targets = randomTokens(n, cfg.vocab_size, 22);
  const docIds = [0, 0, 0, 0, 0, 1, 1, 1, 1, 1, 1, 1, 2, 2];
  checkAllParams(model, { tokens, targets, docIds }, objectiveWeights(n, 6));
  model.dispose();
});

test('dense MLP option: gradients match finite differences', () => {
  const cfg = testConfig({ mlp: 'dense', num_local_experts: 1, num_experts_per_tok: 1 });
  const model = new GptOssModel(cfg, { impl: 'reference', seed: 5 });
  const n = 9;
  checkAllParams(model, { tokens: randomTokens(n, cfg.vocab_size, 31), targets: randomTokens(n, cfg.vocab_size, 32) }, objectiveWeights(n, 7));
  model.dispose();
});

test('default backward is the gradient of the masked mean loss', () => {
  const cfg = testConfig({ num_hidden_layers: 1 });
  const model = new GptOssModel(cfg, { impl: 'reference', seed: 6 });
  const n = 8;
  const input: ModelInput = { tokens: randomTokens(n, cfg.vocab_size, 41), targets: randomTokens(n, cfg.vocab_size, 42), lossMask: [0, 1, 1, 0, 1, 1, 1, 0] };
  const r = model.forward(input);
  let expect = 0;
  for (let i = 0; i < n; i++) expect -= (input.lossMask![i] * r.logprobs[i]) / 5;
  assert.ok(Math.abs(r.loss - expect) < 1e-6);
  model.backward();
  const name = 'lm_head.weight';
  directionalCheck(name, () => model.logprobs(input).loss, model.param(name), model.grad(name)!.toArray());
  model.dispose();
});
