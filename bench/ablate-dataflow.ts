/**
 * Ablation: the rollout dataflow. The same multi-turn episodes sampled four ways through the training agent loop
 * (src/rollout/agent-loop.ts) and the in-process step-batching engine (src/rollout/step-batching.ts), a model of
 * tiny-4m's shape (4 layers, hidden 160, 8 / 2 heads of 24, window 64, 4 experts; random weights, as bench/rollout.ts):
 *
 * - batched + KV cache kept: every trajectory of the batch decodes together (continuous batching) and each keeps its
 *   KV cache across turns (engine sessions), so a turn feeds only the observation's new tokens — GRPO's dataflow;
 * - batched, re-prefilled: decoded together, but every turn prefills the whole conversation again (no session);
 * - one at a time + KV cache: a synchronous loop, one trajectory after the other, the cache kept across turns;
 * - one at a time, re-prefilled: the plain synchronous sampling loop (generate() per turn on the whole context).
 *
 * Episodes are retail-sized and synthetic: a ~1k-token system prompt, then `--turns` assistant turns of ≤ 40 sampled
 * tokens, each answered by a ~250-token observation. Per-trajectory seeds are the same in every cell, so the sampled
 * tokens should match (the check counts identical trajectories; float32 kernels may flip a rare draw between a
 * prefill and a decode step). The cells run interleaved for `--rounds` rounds (order rotated) in one process, so
 * ratios between them are measured under the same load. Memory: the engine's peak bytes during a cell (weights
 * excluded: KV caches, activations, scratch).
 *
 *   npm run bench:ablate-dataflow -- [--tasks N] [--samples N] [--turns N] [--rounds N]
 *
 * Defaults: 4 tasks × 4 samples = 16 trajectories, 8 turns, 2 rounds. Writes bench/results/ablate-dataflow.{json,md}.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beginMemoryScope } from '../src/engine/memory.ts';
import { validateConfig } from '../src/model/config.ts';
import { GptOssModel } from '../src/model/model.ts';
import { AgentLoop, type AgentEnv } from '../src/rollout/agent-loop.ts';
import { sampleGroups } from '../src/rollout/groups.ts';
import { withoutSessions } from '../src/rollout/inference.ts';
import { createStepModelEngine } from '../src/rollout/model-engine.ts';
import { createToySetup } from '../src/recipes/toy/toy-task.ts';
import { median, parseOptions } from './kernel-ablation.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const opts = parseOptions(process.argv.slice(2), { tasks: 'number', samples: 'number', turns: 'number', rounds: 'number' }, 'bench:ablate-dataflow');
const TASKS = (opts.tasks as number | undefined) ?? 4, SAMPLES = (opts.samples as number | undefined) ?? 4;
const TURNS = (opts.turns as number | undefined) ?? 8, ROUNDS = (opts.rounds as number | undefined) ?? 2;
for (const [k, v] of Object.entries({ tasks: TASKS, samples: SAMPLES, turns: TURNS, rounds: ROUNDS })) {
  if (!Number.isInteger(v) || v < 1) throw new Error(`bench:ablate-dataflow: --${k} must be a positive integer, got ${v}`);
}
const N = TASKS * SAMPLES;

const s = createToySetup();
const config = validateConfig({
  num_hidden_layers: 4, hidden_size: 160, num_attention_heads: 8, num_key_value_heads: 2, head_dim: 24, sliding_window: 64,
  num_local_experts: 4, num_experts_per_tok: 2, intermediate_size: 256, vocab_size: s.tokenizer.vocabSize, rope_theta: 10000,
  max_position_embeddings: 8192, rms_norm_eps: 1e-5, initializer_range: 0.1,
});
const model = new GptOssModel(config, { seed: 2, grads: false });
const systemPrompt = Array.from({ length: 330 }, () => 'solve hello please').join(' ');
const observation = Array.from({ length: 83 }, () => 'ok hello please').join(' ');
const makeEnv = (): AgentEnv => ({
  reset: async () => [{ messages: [{ role: 'user', content: 'please cue_1', toolCalls: null }] }, { systemPrompt, tools: [] }],
  step: async () => [{ messages: [{ role: 'user', content: observation, toolCalls: null }] }, 0, false, false, {}],
});

interface Cell { name: string; batched: boolean; sessions: boolean }
const CELLS: Cell[] = [
  { name: 'batched + KV cache kept', batched: true, sessions: true },
  { name: 'batched, re-prefilled every turn', batched: true, sessions: false },
  { name: 'one at a time + KV cache kept', batched: false, sessions: true },
  { name: 'one at a time, re-prefilled every turn', batched: false, sessions: false },
];

interface Run { seconds: number; peakBytes: number; sampled: number; prefilled: number; decoded: number; reused: number; longest: number; responses: string[]; loadAvg: number }

async function runCell(cell: Cell): Promise<Run> {
  const engine = createStepModelEngine(model, { maxBatchSize: cell.batched ? N : 1, sessionCapacity: 8192 });
  const loop = new AgentLoop({ format: s.format, engine: cell.sessions ? engine : withoutSessions(engine), sampling: { temperature: 1 }, maxTurns: TURNS, maxResponseTokens: 6000, maxTokensPerTurn: 40 });
  const scope = beginMemoryScope();
  const t0 = performance.now();
  const groups = await sampleGroups({ loop, makeEnv, groups: Array.from({ length: TASKS }, (_, i) => ({ taskId: 'x', uid: `u${i}` })), n: SAMPLES, seed: 3, concurrency: cell.batched ? N : 1 });
  const seconds = (performance.now() - t0) / 1000;
  const mem = scope.end();
  const ts = groups.flatMap((g) => g.trajectories);
  return {
    seconds, peakBytes: mem.peakDeltaBytes,
    sampled: ts.reduce((a, t) => a + t.responseMask.reduce((x, y) => x + y, 0), 0),
    prefilled: engine.stats.prefilledTokens, decoded: engine.stats.decodedTokens, reused: engine.stats.reusedTokens,
    longest: Math.max(...ts.map((t) => t.promptIds.length + t.responseIds.length)),
    responses: ts.map((t) => t.responseIds.join(',')), loadAvg: loadavg()[0],
  };
}

const runs = new Map<string, Run[]>(CELLS.map((c) => [c.name, []]));
// warm-up (Wasm tier-up), untimed: one short batched pass
{
  const engine = createStepModelEngine(model, { maxBatchSize: 4, sessionCapacity: 8192 });
  const loop = new AgentLoop({ format: s.format, engine, sampling: { temperature: 1 }, maxTurns: 2, maxResponseTokens: 6000, maxTokensPerTurn: 40 });
  await sampleGroups({ loop, makeEnv, groups: [{ taskId: 'x', uid: 'w' }], n: 4, seed: 99, concurrency: 4 });
}
for (let round = 0; round < ROUNDS; round++) {
  for (let j = 0; j < CELLS.length; j++) {
    const cell = CELLS[(j + round) % CELLS.length];
    const r = await runCell(cell);
    runs.get(cell.name)!.push(r);
    console.log(`round ${round + 1}: ${cell.name}: ${r.seconds.toFixed(1)} s, ${(N / r.seconds).toFixed(2)} episodes/s, peak ${(r.peakBytes / 2 ** 20).toFixed(1)} MiB, load ${r.loadAvg.toFixed(1)}`);
  }
}

const ref = runs.get(CELLS[0].name)![0].responses;
const rows = CELLS.map((c) => {
  const rs = runs.get(c.name)!;
  const base = runs.get(CELLS[0].name)!;
  const ratio = rs.map((r, i) => r.seconds / base[i].seconds);
  const first = rs[0];
  return {
    cell: c.name, batched: c.batched, sessions: c.sessions,
    seconds: rs.map((r) => r.seconds), medianSeconds: median(rs.map((r) => r.seconds)), episodesPerSecond: N / median(rs.map((r) => r.seconds)),
    secondsVsBatchedCached: ratio, peakBytes: Math.max(...rs.map((r) => r.peakBytes)),
    sampledTokens: first.sampled, prefilledTokens: first.prefilled, decodedTokens: first.decoded, reusedTokens: first.reused, longestContext: first.longest,
    sameTokensAsBatchedCached: first.responses.filter((x, i) => x === ref[i]).length,
    sameTokensAcrossRounds: rs.every((r) => r.responses.join('|') === first.responses.join('|')),
    loadAvg: rs.map((r) => r.loadAvg),
  };
});

const meta = {
  command: ['npm run bench:ablate-dataflow', ...(process.argv.length > 2 ? ['--', ...process.argv.slice(2)] : [])].join(' '),
  date: new Date().toISOString(), cpu: cpus()[0]?.model.trim() ?? 'unknown', cores: cpus().length, node: process.versions.node,
  trajectories: N, tasks: TASKS, samples: SAMPLES, turns: TURNS, rounds: ROUNDS,
  model: { layers: 4, hidden: 160, heads: '8/2', headDim: 24, window: 64, experts: '4 top 2', weightsMiB: Number(([...model.parameters().values()].reduce((a, t) => a + t.size * 4, 0) / 2 ** 20).toFixed(1)) },
};
const out = join(ROOT, 'bench', 'results');
mkdirSync(out, { recursive: true });
writeFileSync(join(out, 'ablate-dataflow.json'), JSON.stringify({ meta, rows }, null, 2) + '\n');
const loads = rows.flatMap((r) => r.loadAvg);
const md = [
  '# Ablation: the rollout dataflow (tiny-4m shape, retail-sized synthetic episodes)',
  '',
  `Made by \`${meta.command}\` · ${meta.date} · ${meta.cpu} · ${meta.cores} cores · Node ${meta.node}.`,
  `${N} trajectories (${TASKS} tasks × ${SAMPLES} samples, temperature 1, the same per-trajectory seeds in every cell): a ~1k-token prompt, ${TURNS} assistant turns of ≤ 40 sampled tokens, each answered by a ~250-token observation. ` +
    `Model: tiny-4m's shape (4 layers, hidden 160, 8 / 2 heads of 24, window 64, 4 experts top 2), random weights, ${meta.model.weightsMiB} MiB of weights.`,
  `Each cell ran ${ROUNDS} time(s), the cells interleaved (order rotated per round) in one process; time vs batched = the cell's seconds over the batched + KV cache cell's in the same round (median [min – max]). ` +
    `1-min load average on ${meta.cores} cores after each cell: ${Math.min(...loads).toFixed(1)} – ${Math.max(...loads).toFixed(1)}.`,
  'Peak memory = the engine\'s peak bytes during the cell above what was live before it (KV caches, activations, scratch; the weights excluded). Decoded = tokens run through decode steps (sampled tokens fed back, plus observations fed into kept caches); prefilled = prompt tokens run through prefill.',
  '',
  '| dataflow | seconds (median) | episodes/s | time vs batched + cache | peak memory (MiB) | sampled tokens | prefilled tokens | decoded tokens | reused from cache | trajectories with the same tokens as row 1 |',
  '|---|---:|---:|---|---:|---:|---:|---:|---:|---:|',
  ...rows.map((r) => `| ${r.cell} | ${r.medianSeconds.toFixed(1)} | ${r.episodesPerSecond.toFixed(3)} | ${median(r.secondsVsBatchedCached).toFixed(2)}× [${Math.min(...r.secondsVsBatchedCached).toFixed(2)} – ${Math.max(...r.secondsVsBatchedCached).toFixed(2)}] | ` +
    `${(r.peakBytes / 2 ** 20).toFixed(1)} | ${r.sampledTokens} | ${r.prefilledTokens} | ${r.decodedTokens} | ${r.reusedTokens} | ${r.sameTokensAsBatchedCached}/${N}${r.sameTokensAcrossRounds ? '' : ' (differed between rounds)'} |`),
  '',
  `Longest context: ${Math.max(...rows.map((r) => r.longestContext))} tokens. Not measured here: seconds per GRPO step (the rollout is one part of it) and a one-step-off-policy (asynchronous) mode, which longrun does not have.`,
  '',
].join('\n');
writeFileSync(join(out, 'ablate-dataflow.md'), md);
console.log(md);
