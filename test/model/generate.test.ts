import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Mulberry32Rng } from '../../src/engine/index.ts';
import { createCaches, decodeStep, generate, MAX_DECODE_CHUNK, prefill } from '../../src/model/generate.ts';
import { GptOssModel } from '../../src/model/model.ts';
import { sampleToken } from '../../src/model/sampling.ts';
import { randomTokens, testConfig } from './helpers.ts';

function logSoftmax(row: Float32Array): Float64Array {
  let m = -Infinity;
  for (const v of row) m = Math.max(m, v);
  let z = 0;
  for (const v of row) z += Math.exp(v - m);
  return Float64Array.from(row, (v) => v - m - Math.log(z));
}

for (const mlp of ['moe', 'dense'] as const) test(`KV-cache decode gives the full-forward logits at every position, far past the sliding window (ring buffer; ${mlp})`, () => {
  // window 4: sliding, full, sliding
  const cfg = testConfig({ num_hidden_layers: 3, layer_types: undefined, ...(mlp === 'dense' ? { mlp, num_local_experts: 1, num_experts_per_tok: 1 } : {}) });
  const model = new GptOssModel(cfg, { seed: 12, grads: false });
  const V = cfg.vocab_size;
  const seqs = [randomTokens(23, V, 1), randomTokens(17, V, 2)];
  const promptLens = [6, 2];
  const full = seqs.map((s) => {
    const r = model.logprobs({ tokens: s }, { fullLogprobs: true });
    const a = r.fullLogprobs!.toArray();
    r.fullLogprobs!.dispose();
    return a;
  });
  const caches = seqs.map((s) => createCaches(model, s.length));
  const first = prefill(model, seqs.map((s, b) => s.subarray(0, promptLens[b])), caches);
  let worst = 0;
  const compare = (b: number, pos: number, row: Float32Array) => {
    const lp = logSoftmax(row);
    for (let v = 0; v < V; v++) worst = Math.max(worst, Math.abs(lp[v] - full[b][pos * V + v]));
  };
  seqs.forEach((_, b) => compare(b, promptLens[b] - 1, first.subarray(b * V, (b + 1) * V)));
  // teacher-forced decode, both sequences in one batch while both run, then the longer one alone
  for (let step = 0; ; step++) {
    const active = seqs.map((s, b) => b).filter((b) => promptLens[b] + step < seqs[b].length);
    if (active.length === 0) break;
    const toks = Int32Array.from(active.map((b) => seqs[b][promptLens[b] + step]));
    const logits = decodeStep(model, toks, active.map((b) => caches[b]));
    active.forEach((b, i) => compare(b, promptLens[b] + step, logits.subarray(i * V, (i + 1) * V)));
  }
  assert.equal(caches[0][0].held, 4, 'sliding layers keep exactly W keys');
  assert.equal(caches[0][1].held, 23);
  assert.ok(worst < 2e-4, `decode vs full forward max |Δ log p| = ${worst}`);
  for (const c of caches) for (const l of c) l.dispose();
  model.dispose();
});

const chunkCases = [
  { impl: 'wasm', tileMin: MAX_DECODE_CHUNK + 1, what: 'wasm, one query at a time' },
  { impl: 'wasm', tileMin: 1, what: 'wasm, every full-layer chunk as query tiles' },
  { impl: 'wasm', tileMin: 4, what: 'wasm, chunks of 4+ as query tiles, the rest one query at a time' },
  { impl: 'reference', tileMin: undefined, what: 'reference' },
] as const;
for (const { impl, tileMin, what } of chunkCases) test(`chunked decode: several tokens of a sequence per step (a session's observation) give the full-forward logits, past the window (${what})`, () => {
  // window 4 with chunks up to 9 tokens: a chunk's first token needs keys the chunk's later ones would overwrite
  // in a ring of exactly W slots
  const cfg = testConfig({ num_hidden_layers: 3, layer_types: undefined });
  const model = new GptOssModel(cfg, { seed: 21, grads: false, impl });
  const V = cfg.vocab_size;
  const seqs = [randomTokens(40, V, 3), randomTokens(29, V, 4), randomTokens(33, V, 5)];
  const full = seqs.map((s) => {
    const r = model.logprobs({ tokens: s }, { fullLogprobs: true });
    const a = r.fullLogprobs!.toArray();
    r.fullLogprobs!.dispose();
    return a;
  });
  const caches = seqs.map((s) => createCaches(model, s.length));
  prefill(model, seqs.map((s) => s.subarray(0, 3)), caches);
  const chunkPlan = [[1, 9, 2], [4, 1, 7], [9, 9, 1], [2, 3, 5], [1, 1, 1], [8, 6, 9]];
  const fedTo = [3, 3, 3];
  let worst = 0, steps = 0;
  for (let step = 0; fedTo.some((f, b) => f < seqs[b].length); step++) {
    const plan = chunkPlan[step % chunkPlan.length];
    const active = seqs.map((_, b) => b).filter((b) => fedTo[b] < seqs[b].length);
    const counts = active.map((b) => Math.min(plan[b], seqs[b].length - fedTo[b]));
    const toks = Int32Array.from(active.flatMap((b, i) => [...seqs[b].subarray(fedTo[b], fedTo[b] + counts[i])]));
    const logits = decodeStep(model, toks, active.map((b) => caches[b]), true, counts, { tileMin });
    active.forEach((b, i) => {
      fedTo[b] += counts[i];
      const lp = logSoftmax(logits.subarray(i * V, (i + 1) * V));
      for (let v = 0; v < V; v++) worst = Math.max(worst, Math.abs(lp[v] - full[b][(fedTo[b] - 1) * V + v]));
    });
    steps++;
  }
  assert.ok(steps >= 5);
  assert.ok(worst < 2e-4, `chunked decode vs full forward max |Δ log p| = ${worst}`);
  assert.throws(() => decodeStep(model, Int32Array.from([1, 2]), [caches[0]], true, [3]), /counts add up to 3, not the 2 tokens/);
  assert.throws(() => decodeStep(model, Int32Array.from([1]), [caches[0]], true, [1], { tileMin: 0 }), /tileMin must be a positive integer/);
  for (const c of caches) for (const l of c) l.dispose();
  model.dispose();
});

test('generation: same seed → same tokens; different prompt lengths; stop tokens; greedy matches argmax; log-probs consistent', () => {
  const cfg = testConfig();
  const model = new GptOssModel(cfg, { seed: 13, grads: false });
  const prompts = [[1, 2, 3], [4], [5, 6, 7, 8, 9, 10, 11]];
  const opts = { maxNewTokens: 9, temperature: 0.9, topK: 20, topP: 0.95, seed: 42 };
  const a = generate(model, prompts, opts), b = generate(model, prompts, opts);
  assert.deepEqual(a.sequences.map((s) => [...s.tokens]), b.sequences.map((s) => [...s.tokens]));
  assert.ok(a.sequences.every((s) => s.tokens.length === 9 && s.finishReason === 'length'));
  const c = generate(model, prompts, { ...opts, seed: 43 });
  assert.notDeepEqual(a.sequences.map((s) => [...s.tokens]), c.sequences.map((s) => [...s.tokens]));
  // a sequence's tokens do not depend on its batch companions
  const alone = generate(model, [prompts[0]], opts);
  assert.deepEqual([...alone.sequences[0].tokens], [...a.sequences[0].tokens]);
  // log-probs of sampled tokens equal the model's temperature-scaled log-probs (teacher-forced full forward)
  const s0 = a.sequences[2];
  const seq = Int32Array.from([...prompts[2], ...s0.tokens]);
  const r = model.logprobs({ tokens: seq }, { fullLogprobs: true });
  const full = r.fullLogprobs!.toArray();
  r.fullLogprobs!.dispose();
  const V = cfg.vocab_size;
  for (let i = 0; i < s0.tokens.length; i++) {
    const row = Float32Array.from(full.subarray((prompts[2].length - 1 + i) * V, (prompts[2].length + i) * V), (x) => x / 0.9);
    assert.ok(Math.abs(logSoftmax(row)[s0.tokens[i]] - s0.logprobs[i]) < 2e-4);
  }
  // greedy: each token is the argmax; stop token ends the sequence and is kept
  const g = generate(model, prompts, { maxNewTokens: 6, temperature: 0 });
  const stopTok = g.sequences[1].tokens[2];
  const gs = generate(model, prompts, { maxNewTokens: 6, temperature: 0, stopTokenIds: [stopTok] });
  const s1 = gs.sequences[1];
  assert.equal(s1.finishReason, 'stop');
  assert.equal(s1.tokens[s1.tokens.length - 1], stopTok);
  assert.ok(s1.tokens.length <= 3);
  assert.deepEqual([...s1.tokens], [...g.sequences[1].tokens.subarray(0, s1.tokens.length)]);
  assert.throws(() => generate(model, [[]], { maxNewTokens: 2 }), /empty/);
  assert.throws(() => generate(model, [[1]], { maxNewTokens: 2, topP: 0 }), /topP/);
  model.dispose();
});

test('sampling: top-k 1 is greedy, top-p keeps the smallest nucleus, frequencies follow the tempered softmax', () => {
  const logits = Float32Array.from([2, 1, 0.5, -1]);
  const rng = new Mulberry32Rng(3);
  assert.equal(sampleToken(logits, { topK: 1 }, rng).token, 0);
  // p(0) ≈ 0.61 < 0.7 → nucleus {0, 1}
  for (let i = 0; i < 50; i++) assert.ok(sampleToken(logits, { topP: 0.7 }, rng).token <= 1);
  const counts = [0, 0, 0, 0];
  const n = 4000;
  for (let i = 0; i < n; i++) counts[sampleToken(logits, { temperature: 2 }, rng).token]++;
  const lp = logSoftmax(Float32Array.from(logits, (x) => x / 2));
  for (let k = 0; k < 4; k++) assert.ok(Math.abs(counts[k] / n - Math.exp(lp[k])) < 0.03);
});
