/**
 * Multi-turn rollout throughput of the in-process inference engines (src/rollout), tiny gpt-oss on CPU:
 * 16 concurrent trajectories (4 tasks × n = 4) of a chatty env (every turn gets a user reply) for 6 assistant
 * turns of ≤ 12 tokens after a ~190-token prompt, through the same AgentLoop and seeds, with
 * - request-level batching (`createModelEngine`): concurrent turns gathered into batches, each a fresh prefill;
 * - step-level continuous batching (`createStepModelEngine`), every turn prefilled again;
 * - step-level + sessions: each trajectory's KV cache kept between turns, only new tokens fed.
 * All three sample exactly the same tokens (checked). Then long episodes (retail-sized model and contexts): decode
 * attention in the JS loop vs the Wasm kernel, one token per step vs chunked session feeding, and a chunk's
 * full-attention layers one query at a time vs as query tiles of the blockwise kernel (src/model/ops/chunk-attention-wasm.ts).
 * Writes bench/results/rollout.{json,md}.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { validateConfig } from '../src/model/config.ts';
import { DEFAULT_TILE_MIN, MAX_DECODE_CHUNK } from '../src/model/generate.ts';
import { GptOssModel } from '../src/model/model.ts';
import { AgentLoop, type AgentEnv } from '../src/rollout/agent-loop.ts';
import { sampleGroups } from '../src/rollout/groups.ts';
import type { InferenceEngine } from '../src/rollout/inference.ts';
import { createModelEngine, createStepModelEngine } from '../src/rollout/model-engine.ts';
import { createToySetup } from '../src/recipes/toy/toy-task.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const s = createToySetup();
const config = validateConfig({
  num_hidden_layers: 4, hidden_size: 64, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 16, sliding_window: 32,
  num_local_experts: 4, num_experts_per_tok: 2, intermediate_size: 64, vocab_size: s.tokenizer.vocabSize, rope_theta: 1000,
  max_position_embeddings: 1024, rms_norm_eps: 1e-5, initializer_range: 0.1,
});
const model = new GptOssModel(config, { seed: 1, grads: false });
const systemPrompt = Array.from({ length: 60 }, () => 'solve hello please').join(' ');
const chatty = (): AgentEnv => ({
  reset: async () => [{ messages: [{ role: 'user', content: 'please cue_1', toolCalls: null }] }, { systemPrompt, tools: [] }],
  step: async () => [{ messages: [{ role: 'user', content: 'ok hello please', toolCalls: null }] }, 0, false, false, {}],
});

async function run(engine: InferenceEngine) {
  const loop = new AgentLoop({ format: s.format, engine, sampling: { temperature: 1 }, maxTurns: 6, maxResponseTokens: 400, maxTokensPerTurn: 12 });
  const t0 = performance.now();
  const groups = await sampleGroups({ loop, makeEnv: chatty, groups: Array.from({ length: 4 }, (_, i) => ({ taskId: 'x', uid: `u${i}` })), n: 4, seed: 1, concurrency: 16 });
  const seconds = (performance.now() - t0) / 1000;
  const trajectories = groups.flatMap((g) => g.trajectories);
  const sampled = trajectories.reduce((a, t) => a + t.responseMask.reduce((x, y) => x + y, 0), 0);
  return { seconds, sampled, tokensPerSecond: sampled / seconds, responses: trajectories.map((t) => t.responseIds.join(',')) };
}

const rows: { engine: string; seconds: number; sampledTokens: number; sampledTokensPerSecond: number; prefilledTokens?: number; reusedTokens?: number }[] = [];
let reference: string[] | undefined;
for (const [name, make] of [
  ['request-level', () => createModelEngine(model, { maxBatchSize: 16 })],
  ['step-level', () => createStepModelEngine(model, { maxBatchSize: 16 })],
  ['step-level + sessions', () => createStepModelEngine(model, { maxBatchSize: 16, sessionCapacity: 1024 })],
] as const) {
  const engine = make();
  await run(engine); // warm-up
  const fresh = make();
  const r = await run(fresh);
  reference ??= r.responses;
  if (r.responses.join('|') !== reference.join('|')) throw new Error(`${name}: sampled tokens differ from the request-level engine`);
  const stats = fresh.stats as { prefilledTokens?: number; reusedTokens?: number };
  rows.push({ engine: name, seconds: r.seconds, sampledTokens: r.sampled, sampledTokensPerSecond: r.tokensPerSecond, prefilledTokens: stats.prefilledTokens, reusedTokens: stats.reusedTokens });
}

// Long episodes: a retail-sized model (tiny-4m's shape, 8192 positions) and retail-sized contexts: a ~1k-token
// prompt, then 8 turns of ≤ 40 sampled tokens, each answered by a ~250-token observation (≈ 3.3k tokens at the end,
// 50 times the 64-token window). Decode attention in the JS reference loop with one token per step (before), on
// the Wasm kernel with one token per step, and on the Wasm kernel with a session's observation fed in chunks, those
// chunks' full-layer attention one query at a time or as query tiles.
const longConfig = validateConfig({
  num_hidden_layers: 4, hidden_size: 160, num_attention_heads: 8, num_key_value_heads: 2, head_dim: 24, sliding_window: 64,
  num_local_experts: 4, num_experts_per_tok: 2, intermediate_size: 256, vocab_size: s.tokenizer.vocabSize, rope_theta: 10000,
  max_position_embeddings: 8192, rms_norm_eps: 1e-5, initializer_range: 0.1,
});
const longModel = new GptOssModel(longConfig, { seed: 2, grads: false });
const longPrompt = Array.from({ length: 330 }, () => 'solve hello please').join(' ');
const observation = Array.from({ length: 83 }, () => 'ok hello please').join(' ');
const longEnv = (): AgentEnv => ({
  reset: async () => [{ messages: [{ role: 'user', content: 'please cue_1', toolCalls: null }] }, { systemPrompt: longPrompt, tools: [] }],
  step: async () => [{ messages: [{ role: 'user', content: observation, toolCalls: null }] }, 0, false, false, {}],
});
const longRows: { engine: string; seconds: number; sampledTokens: number; decodedTokens: number; contextTokens: number; decodedTokensPerSecond: number; sameTokens: boolean }[] = [];
let longReference: string | undefined;
for (const [name, options] of [
  ['JS attention, 1 token per step (before)', { decodeKernel: 'js', decodeChunk: 1 }],
  ['Wasm attention, 1 token per step', { decodeKernel: 'wasm', decodeChunk: 1 }],
  ['Wasm attention, 256-token chunks, one query at a time', { decodeKernel: 'wasm', decodeChunk: 256, decodeTileMin: MAX_DECODE_CHUNK + 1 }],
  [`Wasm attention, 256-token chunks, full layers as query tiles (chunks of ${DEFAULT_TILE_MIN}+)`, { decodeKernel: 'wasm', decodeChunk: 256 }],
] as const) {
  const engine = createStepModelEngine(longModel, { maxBatchSize: 16, sessionCapacity: 8192, ...options });
  const loop = new AgentLoop({ format: s.format, engine, sampling: { temperature: 1 }, maxTurns: 8, maxResponseTokens: 6000, maxTokensPerTurn: 40 });
  const t0 = performance.now();
  const groups = await sampleGroups({ loop, makeEnv: longEnv, groups: Array.from({ length: 4 }, (_, i) => ({ taskId: 'x', uid: `u${i}` })), n: 4, seed: 3, concurrency: 16 });
  const seconds = (performance.now() - t0) / 1000;
  const ts = groups.flatMap((g) => g.trajectories);
  const joined = ts.map((t) => t.responseIds.join(',')).join('|');
  longReference ??= joined;
  const sampled = ts.reduce((a, t) => a + t.responseMask.reduce((x, y) => x + y, 0), 0);
  const decoded = engine.stats.decodedTokens;
  longRows.push({ engine: name, seconds, sampledTokens: sampled, decodedTokens: decoded, contextTokens: Math.max(...ts.map((t) => t.promptIds.length + t.responseIds.length)), decodedTokensPerSecond: decoded / seconds, sameTokens: joined === longReference });
}

const out = join(ROOT, 'bench', 'results');
mkdirSync(out, { recursive: true });
const meta = { date: new Date().toISOString(), cpus: cpus().length, cpu: cpus()[0]?.model ?? 'unknown', node: process.version, model: { layers: 4, hidden: 64, experts: 4 } };
writeFileSync(join(out, 'rollout.json'), JSON.stringify({ meta, rows, long: { model: { layers: 4, hidden: 160, heads: '8/2', headDim: 24, window: 64 }, rows: longRows } }, null, 2));
const md = [
  '# Rollout engines (tiny gpt-oss, 16 concurrent 6-turn trajectories)',
  '',
  `${meta.cpu}, ${meta.cpus} cores, node ${meta.node}, ${meta.date}`,
  '',
  '| engine | seconds | sampled tokens | sampled tok/s | prefilled tokens | reused tokens |',
  '| --- | ---: | ---: | ---: | ---: | ---: |',
  ...rows.map((r) => `| ${r.engine} | ${r.seconds.toFixed(2)} | ${r.sampledTokens} | ${r.sampledTokensPerSecond.toFixed(0)} | ${r.prefilledTokens ?? '—'} | ${r.reusedTokens ?? '—'} |`),
  '',
  '## Long episodes (tiny-4m shape, ~1k-token prompt, 8 turns with ~250-token observations, 16 trajectories, sessions)',
  '',
  'Decoded tokens = sampled tokens fed back plus the observations fed into the session caches. The Wasm kernels compute',
  'in float32 where the JS loop accumulates in float64, and the tile kernel\'s exp is another polynomial, so sampled',
  'tokens may differ from the first row in rare draws.',
  '',
  '| decode | seconds | sampled tokens | decoded tokens | longest context | decoded tok/s | same tokens as row 1 |',
  '| --- | ---: | ---: | ---: | ---: | ---: | --- |',
  ...longRows.map((r) => `| ${r.engine} | ${r.seconds.toFixed(2)} | ${r.sampledTokens} | ${r.decodedTokens} | ${r.contextTokens} | ${r.decodedTokensPerSecond.toFixed(0)} | ${r.sameTokens ? 'yes' : 'no'} |`),
  '',
].join('\n');
writeFileSync(join(out, 'rollout.md'), md);
console.log(md);
