import assert from 'node:assert/strict';
import { test } from 'node:test';
import { beginMemoryScope } from '../../src/engine/memory.ts';
import { GptOssModel } from '../../src/model/model.ts';
import { randomTokens, testConfig } from './helpers.ts';

function lossAndGrads(attention: 'flex' | 'eager', tokens: Int32Array, targets: Int32Array, batch: number) {
  const cfg = testConfig({ hidden_size: 32, intermediate_size: 32, initializer_range: 0.05, sliding_window: 8, head_dim: 8, max_position_embeddings: 256 });
  const model = new GptOssModel(cfg, { seed: 3, attention });
  model.zeroGrad();
  const scope = beginMemoryScope();
  const loss = model.forward({ tokens, targets, batch }).loss;
  model.backward();
  const peak = scope.end().peakDeltaBytes;
  const grads = new Map([...model.gradients()].map(([k, t]) => [k, Float32Array.from(t.toArray())]));
  model.dispose();
  return { loss, grads, peak };
}

test("attention 'eager' gives the same loss and gradients as 'flex' (sinks, window and full layers, GQA) and uses more memory", () => {
  const B = 1, T = 128;
  const corpus = randomTokens(B * (T + 1), 32, 5);
  const tokens = new Int32Array(B * T), targets = new Int32Array(B * T);
  for (let b = 0; b < B; b++) for (let t = 0; t < T; t++) {
    tokens[b * T + t] = corpus[b * (T + 1) + t];
    targets[b * T + t] = corpus[b * (T + 1) + t + 1];
  }
  const flex = lossAndGrads('flex', tokens, targets, B);
  const eager = lossAndGrads('eager', tokens, targets, B);
  assert.ok(Math.abs(flex.loss - eager.loss) < 1e-5, `loss flex ${flex.loss} eager ${eager.loss}`);
  let worst = 0;
  for (const [name, g] of flex.grads) {
    const e = eager.grads.get(name)!;
    let scale = 1e-6;
    for (const x of g) scale = Math.max(scale, Math.abs(x));
    for (let i = 0; i < g.length; i++) worst = Math.max(worst, Math.abs(g[i] - e[i]) / scale);
  }
  assert.ok(worst < 1e-3, `largest relative gradient difference ${worst}`);
  assert.ok(eager.peak > flex.peak, `eager peak ${eager.peak} should exceed flex peak ${flex.peak}`);
});

test("attention 'eager' refuses packed documents with a clear error", () => {
  const cfg = testConfig({ head_dim: 8 });
  const model = new GptOssModel(cfg, { seed: 1, attention: 'eager' });
  const tokens = randomTokens(16, cfg.vocab_size, 2);
  const seqIds = new Int32Array(16).map((_, i) => (i < 8 ? 0 : 1));
  assert.throws(() => model.forward({ tokens, targets: tokens, batch: 1, docIds: seqIds }), /packed documents need 'flex'/);
  model.dispose();
});
