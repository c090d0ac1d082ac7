/**
 * Tool-use environment speed on the τ²-bench retail data (one process, one core):
 * - tool calls: every gold action of the v1.0 tasks (550 calls, reads and writes, some failing on purpose) executed
 *   through `executeToolCall` on fresh episode DBs; per-call latency (median, p90) and calls per second;
 * - reset: `ToolUseEnv.reset` with a fixed task (fresh copy-on-write DB, orchestrator, user's first message), and
 *   `domain.freshDb()` alone;
 * - evaluated episodes: each v0.x task played through `ToolUseEnv` (reset, its gold actions as tool-call turns,
 *   `done`), reward evaluated at the end (DB hash check + COMMUNICATE); the env caches gold hashes per task, so a
 *   second figure re-evaluates with the gold replay every time.
 * Writes bench/results/env.{json,md}. Targets on the 2-core dev machine: reset ≤ 2 ms, median tool call ≤ 20 µs,
 * ≥ 200 evaluated episodes/s.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadRetailTaskSet } from '../src/domains/retail/register.ts';
import { ToolUseEnv } from '../src/tooluse/env.ts';
import { evaluateEpisode } from '../src/tooluse/evaluator.ts';
import { executeToolCall } from '../src/tooluse/execute.ts';
import { runGoldEpisode } from '../src/tooluse/replay.ts';
import { TicketUser } from '../src/tooluse/user.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const DATA_DIR = process.env.LONGRUN_TAU2_RETAIL ?? join(ROOT, '..', 'shared', 'tau2', 'retail');
const quick = process.argv.includes('--quick');

function quantile(xs: number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}

function benchToolCalls(rounds: number) {
  const { domain, tasks } = loadRetailTaskSet({ dataDir: DATA_DIR, version: 'v1' });
  const perTool = new Map<string, number[]>();
  const all: number[] = [];
  let total = 0;
  for (let r = -1; r < rounds; r++) {
    for (const task of tasks) {
      const db = domain.freshDb();
      for (const a of task.evaluation_criteria?.actions ?? []) {
        const call = { name: a.name, arguments: a.arguments };
        const t0 = performance.now();
        executeToolCall(domain, db, call);
        const dt = performance.now() - t0;
        if (r < 0) continue; // warm-up round
        all.push(dt);
        total += dt;
        if (!perTool.has(a.name)) perTool.set(a.name, []);
        perTool.get(a.name)!.push(dt);
      }
    }
  }
  return {
    calls: all.length,
    callsPerSecond: all.length / (total / 1000),
    medianUs: quantile(all, 0.5) * 1000,
    p90Us: quantile(all, 0.9) * 1000,
    perTool: Object.fromEntries(
      [...perTool.entries()].sort((a, b) => b[1].length - a[1].length).map(([name, xs]) => [name, { calls: xs.length, medianUs: quantile(xs, 0.5) * 1000 }]),
    ),
  };
}

async function benchReset(n: number) {
  const { domain, tasks } = loadRetailTaskSet({ dataDir: DATA_DIR, version: 'v0' });
  const env = new ToolUseEnv({ domain, tasks, user: new TicketUser() });
  const resets: number[] = [];
  const fresh: number[] = [];
  for (let i = -20; i < n; i++) {
    let t0 = performance.now();
    await env.reset({ seed: i + 20, options: { taskId: '0' } });
    const dt = performance.now() - t0;
    t0 = performance.now();
    domain.freshDb();
    const df = performance.now() - t0;
    if (i >= 0) {
      resets.push(dt);
      fresh.push(df);
    }
  }
  return { resets: n, resetMedianMs: quantile(resets, 0.5), resetP90Ms: quantile(resets, 0.9), freshDbMedianMs: quantile(fresh, 0.5) };
}

async function benchEpisodes(rounds: number) {
  const { domain, tasks } = loadRetailTaskSet({ dataDir: DATA_DIR, version: 'v0' });
  const env = new ToolUseEnv({ domain, tasks, user: new TicketUser() });
  let episodes = 0;
  let successes = 0;
  let steps = 0;
  let ms = 0;
  for (let r = -1; r < rounds; r++) {
    const t0 = performance.now();
    for (const task of tasks) {
      await env.reset({ options: { taskId: task.id } });
      for (const a of task.evaluation_criteria?.actions ?? []) await env.step({ toolCalls: [{ name: a.name, arguments: a.arguments }] });
      const infos = task.evaluation_criteria?.communicate_info ?? [];
      if (infos.length) await env.step({ content: `Summary: ${infos.join('; ')}. Anything else?` });
      const [, reward, terminated] = await env.step('done()');
      if (!terminated) throw new Error(`task ${task.id} did not end on done()`);
      if (r >= 0) {
        episodes++;
        successes += reward === 1 ? 1 : 0;
        steps += (task.evaluation_criteria?.actions?.length ?? 0) + 1;
      }
    }
    if (r >= 0) ms += performance.now() - t0;
  }
  // Evaluation alone with the gold replay redone each time (no cache): the τ² evaluator's cost per episode.
  const golds = tasks.map((t) => ({ task: t, episode: runGoldEpisode(domain, t) }));
  const t1 = performance.now();
  for (const { task, episode } of golds) {
    await evaluateEpisode(domain, task, { messages: episode.messages, terminationReason: 'user_stop', finalDbHash: domain.hashDb(episode.db) });
  }
  const uncachedMs = performance.now() - t1;
  return {
    episodes,
    successRate: successes / episodes,
    agentTurnsPerEpisode: steps / episodes,
    episodesPerSecond: episodes / (ms / 1000),
    uncachedEvaluationsPerSecond: golds.length / (uncachedMs / 1000),
  };
}

const toolCalls = benchToolCalls(quick ? 3 : 20);
const reset = await benchReset(quick ? 100 : 500);
const episodes = await benchEpisodes(quick ? 1 : 5);
const targets = {
  resetMs: { target: 2, measured: reset.resetMedianMs, met: reset.resetMedianMs <= 2 },
  toolCallMedianUs: { target: 20, measured: toolCalls.medianUs, met: toolCalls.medianUs <= 20 },
  episodesPerSecond: { target: 200, measured: episodes.episodesPerSecond, met: episodes.episodesPerSecond >= 200 },
};
const result = {
  bench: 'env',
  date: new Date().toISOString(),
  node: process.version,
  cpu: cpus()[0]?.model ?? 'unknown',
  cores: cpus().length,
  quick,
  toolCalls,
  reset,
  episodes,
  targets,
};

const f = (x: number, d = 1) => x.toFixed(d);
const md = [
  '# Tool-use env benchmark (τ²-bench retail)',
  '',
  `${result.date}, Node ${result.node}, ${result.cpu} (${result.cores} cores), one process${quick ? ', quick run' : ''}. Command: \`npm run bench:env\`.`,
  '',
  '| measure | value | target | met |',
  '| --- | --- | --- | --- |',
  `| median tool call (${toolCalls.calls} gold calls, fresh DB per task) | ${f(toolCalls.medianUs, 2)} µs (p90 ${f(toolCalls.p90Us, 2)} µs) | ≤ 20 µs | ${targets.toolCallMedianUs.met ? 'yes' : 'no'} |`,
  `| tool calls per second | ${f(toolCalls.callsPerSecond, 0)} | | |`,
  `| env reset (fresh DB + greeting + user's first message) | ${f(reset.resetMedianMs, 3)} ms (p90 ${f(reset.resetP90Ms, 3)} ms) | ≤ 2 ms | ${targets.resetMs.met ? 'yes' : 'no'} |`,
  `| freshDb() alone | ${f(reset.freshDbMedianMs, 4)} ms | | |`,
  `| evaluated gold-replay episodes per second (v0.x, ${f(episodes.agentTurnsPerEpisode)} agent turns each, gold hash cached) | ${f(episodes.episodesPerSecond, 0)} | ≥ 200 | ${targets.episodesPerSecond.met ? 'yes' : 'no'} |`,
  `| evaluations per second with the gold replay redone each time | ${f(episodes.uncachedEvaluationsPerSecond, 0)} | | |`,
  `| success rate of the gold episodes | ${f(episodes.successRate * 100)} % | 100 % | ${episodes.successRate === 1 ? 'yes' : 'no'} |`,
  '',
  '## Median latency per tool',
  '',
  '| tool | calls | median µs |',
  '| --- | --- | --- |',
  ...Object.entries(toolCalls.perTool).map(([name, s]) => `| ${name} | ${s.calls} | ${f(s.medianUs, 2)} |`),
  '',
].join('\n');

const outDir = join(ROOT, 'bench', 'results');
mkdirSync(outDir, { recursive: true });
writeFileSync(join(outDir, 'env.json'), JSON.stringify(result, null, 2) + '\n');
writeFileSync(join(outDir, 'env.md'), md);
console.log(md);
