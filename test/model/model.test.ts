import assert from 'node:assert/strict';
import { test } from 'node:test';
import { memoryReport } from '../../src/engine/index.ts';
import { GptOssModel } from '../../src/model/model.ts';
import { randomTokens, testConfig } from './helpers.ts';

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  assert.equal(a.length, b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

test('packed documents give the same per-token log-probs and loss as separate sequences', () => {
  const cfg = testConfig();
  const model = new GptOssModel(cfg, { impl: 'wasm', seed: 8 });
  const lens = [7, 12, 5];
  const docs = lens.map((n, i) => ({ tokens: randomTokens(n, cfg.vocab_size, 100 + i), targets: randomTokens(n, cfg.vocab_size, 200 + i) }));
  const separate = docs.map((d) => model.logprobs(d));
  const packed = model.logprobs({
    tokens: Int32Array.from(docs.flatMap((d) => [...d.tokens])),
    targets: Int32Array.from(docs.flatMap((d) => [...d.targets])),
    docIds: lens.flatMap((n, i) => Array<number>(n).fill(i)),
  });
  const flatSep = separate.flatMap((r) => [...r.logprobs]);
  assert.ok(maxAbsDiff(packed.logprobs, flatSep) < 1e-5);
  const meanSep = flatSep.reduce((a, b) => a + b, 0) / flatSep.length;
  assert.ok(Math.abs(packed.loss + meanSep) < 1e-5);
  // a [B, T] batch equals its rows run alone
  const rows = model.logprobs({ tokens: Int32Array.from([...docs[0].tokens, ...docs[2].tokens.subarray(0, 5), 1, 2]), batch: 2, targets: Int32Array.from([...docs[0].targets, ...docs[2].targets.subarray(0, 5), 3, 4]) });
  assert.ok(maxAbsDiff(rows.logprobs.subarray(0, 7), separate[0].logprobs) < 1e-5);
  model.dispose();
});

test('gradient checkpointing gives identical gradients and a lower activation peak', () => {
  const cfg = testConfig({ num_hidden_layers: 4, layer_types: undefined });
  const input = { tokens: randomTokens(48, cfg.vocab_size, 1), targets: randomTokens(48, cfg.vocab_size, 2), batch: 2 };
  const run = (checkpointing: boolean) => {
    const m = new GptOssModel(cfg, { seed: 9, checkpointing });
    const loss = m.forward(input).loss;
    m.backward();
    const grads = new Map([...m.gradients()].map(([k, g]) => [k, g.toArray()]));
    const peak = m.lastMemory!.tags['model.act'].peakBytes;
    m.dispose();
    return { loss, grads, peak };
  };
  const a = run(false), b = run(true);
  assert.equal(a.loss, b.loss);
  for (const [k, g] of a.grads) assert.deepEqual(b.grads.get(k), g, k);
  assert.ok(b.peak < a.peak, `checkpointed peak ${b.peak} should be below ${a.peak}`);
});

test('wasm and reference implementations agree on loss, log-probs and gradients', () => {
  const cfg = testConfig();
  const input = { tokens: randomTokens(20, cfg.vocab_size, 3), targets: randomTokens(20, cfg.vocab_size, 4), batch: 2 };
  const out = (['wasm', 'reference'] as const).map((impl) => {
    const m = new GptOssModel(cfg, { impl, seed: 10 });
    const r = m.forward(input);
    m.backward();
    const g = m.grad('model.layers.0.self_attn.q_proj.weight')!.toArray();
    const s = m.grad('model.layers.1.self_attn.sinks')!.toArray();
    m.dispose();
    return { r, g, s };
  });
  assert.ok(Math.abs(out[0].r.loss - out[1].r.loss) < 1e-5);
  assert.ok(maxAbsDiff(out[0].r.logprobs, out[1].r.logprobs) < 1e-4);
  assert.ok(maxAbsDiff(out[0].g, out[1].g) < 1e-4);
  assert.ok(maxAbsDiff(out[0].s, out[1].s) < 1e-5);
});

test('full-vocabulary log-softmax rows normalise and contain the target log-probs; memory is reported by tag and released', () => {
  const cfg = testConfig();
  const model = new GptOssModel(cfg, { seed: 11 });
  const n = 6, V = cfg.vocab_size;
  const targets = randomTokens(n, V, 6);
  const r = model.logprobs({ tokens: randomTokens(n, V, 5), targets }, { fullLogprobs: true, logits: true });
  const lp = r.fullLogprobs!.toArray(), logits = r.logits!.toArray();
  r.fullLogprobs!.dispose(); r.logits!.dispose();
  // log-softmax of the raw logits row gives the same values
  let m = -Infinity, z = 0;
  for (let v = 0; v < V; v++) m = Math.max(m, logits[v]);
  for (let v = 0; v < V; v++) z += Math.exp(logits[v] - m);
  for (let v = 0; v < V; v++) assert.ok(Math.abs(logits[v] - m - Math.log(z) - lp[v]) < 1e-5);
  for (let i = 0; i < n; i++) {
    let z = 0;
    for (let v = 0; v < V; v++) z += Math.exp(lp[i * V + v]);
    assert.ok(Math.abs(z - 1) < 1e-5);
    assert.ok(Math.abs(lp[i * V + targets[i]] - r.logprobs[i]) < 1e-5);
  }
  assert.ok(model.lastMemory!.tags['model.logits'].peakBytes >= n * V * 4);
  const before = memoryReport().liveBytes;
  model.forward({ tokens: randomTokens(n, V, 5), targets });
  model.backward();
  assert.equal(model.lastMemory!.liveBytes, before, 'a forward/backward step must free all its activations');
  assert.throws(() => model.backward(), /call forward\(\)/);
  assert.throws(() => model.forward({ tokens: [0, 99] }), /outside the vocabulary/);
  assert.throws(() => model.forward({ tokens: [0, 1, 2], batch: 2 }), /equal rows/);
  model.dispose();
});

test('tiedInit starts lm_head as a copy of the embedding, as separate parameters; other weights are unchanged', () => {
  const cfg = testConfig();
  const plain = new GptOssModel(cfg, { seed: 3 });
  const tied = new GptOssModel(cfg, { seed: 3, tiedInit: true });
  const p = plain.parameters(), t = tied.parameters();
  assert.deepEqual(t.get('lm_head.weight')!.toArray(), t.get('model.embed_tokens.weight')!.toArray());
  assert.notDeepEqual(p.get('lm_head.weight')!.toArray(), p.get('model.embed_tokens.weight')!.toArray());
  for (const [name, w] of p) if (name !== 'lm_head.weight') assert.deepEqual(t.get(name)!.toArray(), w.toArray(), name);
  // Separate parameters: a step on the embedding leaves lm_head where it was.
  t.get('model.embed_tokens.weight')!.data()[0] += 1;
  assert.notEqual(t.get('lm_head.weight')!.data()[0], t.get('model.embed_tokens.weight')!.data()[0]);
  plain.dispose();
  tied.dispose();
});
