import assert from 'node:assert/strict';
import { test } from 'node:test';
import { clipGradNorm } from '../../src/engine/index.ts';
import { GptOssModel } from '../../src/model/model.ts';
import { randomTokens, testConfig } from './helpers.ts';

test('a tiny MoE model overfits a small corpus to near-zero loss (AdamW, grad clipping, four rows per batch)', () => {
  const cfg = testConfig({ hidden_size: 32, intermediate_size: 32, initializer_range: 0.05, sliding_window: 8 });
  const model = new GptOssModel(cfg, { seed: 15 });
  const B = 4, T = 24;
  const corpus = randomTokens(B * (T + 1), cfg.vocab_size, 99);
  const tokens = new Int32Array(B * T), targets = new Int32Array(B * T);
  for (let b = 0; b < B; b++) for (let t = 0; t < T; t++) {
    tokens[b * T + t] = corpus[b * (T + 1) + t];
    targets[b * T + t] = corpus[b * (T + 1) + t + 1];
  }
  const opt = model.optimizer({ lr: 1e-2, weightDecay: 0 });
  const grads = [...model.gradients().values()];
  let first = NaN, loss = NaN;
  for (let step = 0; step < 200; step++) {
    model.zeroGrad();
    loss = model.forward({ tokens, targets, batch: B }).loss;
    if (step === 0) first = loss;
    model.backward();
    clipGradNorm(grads, 1);
    opt.update();
    if (loss < 0.02) break;
  }
  assert.ok(first > 3, `initial loss ${first} should be near ln(32) ≈ 3.47`);
  assert.ok(loss < 0.05, `final loss ${loss}`);
  opt.dispose();
  model.dispose();
});
