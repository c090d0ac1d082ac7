import assert from 'node:assert/strict';
import { test } from 'node:test';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { resolveCheckpointOptions, type EvalCommandOptions } from '../../src/cli/eval.ts';
import { withCheckpointAgent } from '../../src/serve/eval/checkpoint-agent.ts';
import { createCaches, decodeStep, prefill } from '../../src/model/generate.ts';
import { GptOssModel } from '../../src/model/model.ts';
import { randomTokens, testConfig } from './helpers.ts';

/** Full-vocabulary log-probs [T·V] of a model on one sequence. */
function fullLogprobs(model: GptOssModel, tokens: Int32Array): Float32Array {
  const r = model.logprobs({ tokens }, { fullLogprobs: true });
  const a = r.fullLogprobs!.toArray();
  r.fullLogprobs!.dispose();
  return a;
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  assert.equal(a.length, b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

/** Large sink logits, so that they take a visible share of every row's attention. */
function setSinks(model: GptOssModel, value: (layer: number, head: number) => number): void {
  for (let i = 0; i < model.config.num_hidden_layers; i++) {
    const s = model.param(`model.layers.${i}.self_attn.sinks`);
    s.data().set(Float32Array.from({ length: s.size }, (_, h) => value(i, h)));
  }
}

for (const impl of ['wasm', 'reference'] as const) test(`sinks 'ignore' changes the logits and equals the sinks' −∞ limit; 'exact' is the default (${impl})`, () => {
  const cfg = testConfig({ num_hidden_layers: 3, layer_types: undefined });
  const tokens = randomTokens(24, cfg.vocab_size, 5);
  const make = (options: ConstructorParameters<typeof GptOssModel>[1]) => {
    const m = new GptOssModel(cfg, { seed: 3, grads: false, impl, ...options });
    setSinks(m, (i, h) => 1.5 + 0.5 * ((i + h) % 3));
    return m;
  };
  const byDefault = make({});
  const exact = make({ sinks: 'exact' });
  const ignored = make({ sinks: 'ignore' });
  assert.equal(byDefault.sinks, 'exact');
  assert.equal(ignored.sinks, 'ignore');
  const lpDefault = fullLogprobs(byDefault, tokens);
  const lpExact = fullLogprobs(exact, tokens);
  const lpIgnored = fullLogprobs(ignored, tokens);
  assert.deepEqual(lpExact, lpDefault, "sinks: 'exact' is the default model, bit for bit");
  assert.ok(maxAbsDiff(lpIgnored, lpExact) > 1e-2, `ignoring sinks of 1.5–2.5 must change the log-probs (max |Δ| ${maxAbsDiff(lpIgnored, lpExact)})`);
  for (const x of lpIgnored) assert.ok(Number.isFinite(x), 'no NaN or ∞ from the −∞ sinks');
  // The −∞ limit: exact attention with sink logits of −1e4 (exp underflows to 0) gives the same log-probs.
  const limit = make({});
  setSinks(limit, () => -1e4);
  assert.ok(maxAbsDiff(fullLogprobs(limit, tokens), lpIgnored) < 1e-5, 'ignored sinks = sinks at −1e4');
  // The sink parameters themselves are untouched (saved and loaded as they are).
  assert.equal(ignored.param('model.layers.0.self_attn.sinks').data()[0], 1.5);
  for (const m of [byDefault, exact, ignored, limit]) m.dispose();
});

for (const kernel of ['wasm', 'js'] as const) test(`sinks 'ignore': KV-cache decode (one token and chunks) gives the full forward's logits (${kernel} decode kernel)`, () => {
  const cfg = testConfig({ num_hidden_layers: 3, layer_types: undefined });
  const V = cfg.vocab_size;
  const model = new GptOssModel(cfg, { seed: 4, grads: false, sinks: 'ignore' });
  setSinks(model, () => 2);
  const seq = randomTokens(30, V, 9);
  const full = fullLogprobs(model, seq);
  const caches = [createCaches(model, seq.length)];
  const logSoftmaxDiff = (row: Float32Array, pos: number) => {
    let m = -Infinity;
    for (const v of row) m = Math.max(m, v);
    let z = 0;
    for (const v of row) z += Math.exp(v - m);
    let worst = 0;
    for (let v = 0; v < V; v++) worst = Math.max(worst, Math.abs(row[v] - m - Math.log(z) - full[pos * V + v]));
    return worst;
  };
  let worst = logSoftmaxDiff(prefill(model, [seq.subarray(0, 5)], caches), 4);
  let at = 5;
  for (const n of [1, 7, 1, 9, 2]) {
    const logits = decodeStep(model, seq.subarray(at, at + n), caches, true, [n], { tileMin: 4, kernel });
    at += n;
    worst = Math.max(worst, logSoftmaxDiff(logits, at - 1));
  }
  assert.equal(at, 25);
  assert.ok(worst < 2e-4, `decode vs full forward with ignored sinks: max |Δ log p| = ${worst}`);
  for (const l of caches[0]) l.dispose();
  model.dispose();
});

test("sinks 'ignore': training gives the sink parameters no gradient; 'exact' does", () => {
  const cfg = testConfig();
  const tokens = randomTokens(12, cfg.vocab_size, 2);
  const targets = Int32Array.from(tokens, (_, i) => (i + 1 < tokens.length ? tokens[i + 1] : -1));
  for (const sinks of ['exact', 'ignore'] as const) {
    const model = new GptOssModel(cfg, { seed: 1, sinks });
    model.zeroGrad();
    model.forward({ tokens, targets });
    model.backward();
    const g = model.grad('model.layers.0.self_attn.sinks')!.toArray();
    const norm = Math.hypot(...g);
    if (sinks === 'exact') assert.ok(norm > 0, 'exact sinks get a gradient');
    else assert.equal(norm, 0, 'ignored sinks get none');
    model.dispose();
  }
  assert.throws(() => new GptOssModel(cfg, { sinks: 'drop' as 'ignore' }), /sinks must be 'exact' or 'ignore'/);
});

test('longrun eval --ignore-sinks: recorded in the eval identity only when given, refused for other agents and the server engine', async () => {
  const opts = { agent: 'checkpoint', checkpoint: join(tmpdir(), 'longrun-no-such-model'), taskSet: 'v1', user: 'ticket', trials: 1, concurrency: 1, maxRequests: 8, timeout: 120, maxRetries: 4, maxSteps: 200, maxErrors: 10, seed: 300, out: 'o', progress: false } as EvalCommandOptions;
  const exact = resolveCheckpointOptions(opts, (k) => k === 'agent' || k === 'checkpoint').options as { agentSettings?: Record<string, unknown> };
  assert.equal(exact.agentSettings!.sinks, undefined, 'earlier eval folders keep their identity');
  const ignored = resolveCheckpointOptions({ ...opts, ignoreSinks: true }, (k) => k === 'agent' || k === 'checkpoint' || k === 'ignoreSinks').options as { agentSettings?: Record<string, unknown> };
  assert.equal(ignored.agentSettings!.sinks, 'ignore');
  assert.throws(() => resolveCheckpointOptions({ ...opts, agent: 'openai', ignoreSinks: true }, (k) => k === 'ignoreSinks'), /--ignore-sinks apply to --agent checkpoint only/);
  await assert.rejects(withCheckpointAgent({ ...opts, tokenizer: 'o200k_harmony', engine: 'server', ignoreSinks: true }, async () => 0), /--ignore-sinks runs with --engine in-process only/);
});
