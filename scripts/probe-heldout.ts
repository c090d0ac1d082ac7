/**
 * Held-out probe: plays the first N validation tasks of a run config with a model checkpoint (one episode each,
 * scripted user) and prints every transcript with its reward, termination, tool errors and parse errors.
 *
 *   node --import tsx scripts/probe-heldout.ts --config presets/retail-tiny.yaml \
 *     --checkpoint runs/retail-tiny/sft/checkpoints/step-00000125 [--tasks 32] [--temperature 1] [--seed 7] [--samples 1] [--quiet]
 *
 * `--samples k` plays k episodes per task (seeded, interleaved as GRPO groups are) and prints the mean reward over all
 * episodes, the mean of each sample round, and pass@k (the share of tasks solved at least once); one sample per task
 * cannot tell a gain of a few tasks from noise. `--quiet` prints only the per-episode headers and the summary.
 */
import { parseArgs } from 'node:util';
import { AgentLoop } from '../src/rollout/agent-loop.ts';
import { sampleGroups } from '../src/rollout/groups.ts';
import { loadGrpoRun } from '../src/recipes/load-run.ts';
import { computeMetrics } from '../src/tooluse/metrics.ts';

const { values: a } = parseArgs({ options: { config: { type: 'string' }, checkpoint: { type: 'string' }, tasks: { type: 'string', default: '32' }, temperature: { type: 'string', default: '1' }, seed: { type: 'string', default: '7' }, samples: { type: 'string', default: '1' }, quiet: { type: 'boolean', default: false } } });
if (!a.config || !a.checkpoint) throw new Error('usage: --config RUN.yaml --checkpoint DIR [--tasks N] [--temperature T] [--seed S] [--samples K] [--quiet]');
const tasksN = Number(a.tasks), temperature = Number(a.temperature), seed = Number(a.seed), samples = Number(a.samples);
if (!(Number.isInteger(tasksN) && tasksN > 0)) throw new Error(`--tasks must be a positive integer, got ${a.tasks}`);
if (!(temperature >= 0)) throw new Error(`--temperature must be a number ≥ 0, got ${a.temperature}`);
if (!(Number.isInteger(samples) && samples > 0)) throw new Error(`--samples must be a positive integer, got ${a.samples}`);
if (!Number.isSafeInteger(seed) || seed < 0) throw new Error(`--seed must be a non-negative integer, got ${a.seed}`);
const { trainer, built } = await loadGrpoRun(a.config, { checkpoint: a.checkpoint });
if (!built.deps.valTasks || !built.deps.makeValEnv) throw new Error('the config has no validation tasks (taskOptions.valDir)');
const r = trainer.rollout;
const loop = new AgentLoop({
  format: built.deps.format, engine: built.deps.engine, sampling: { temperature },
  maxTurns: r.maxTurns, maxResponseTokens: r.maxResponseTokens, maxTokensPerTurn: r.maxTokensPerTurn, ...built.deps.loop,
});
const tasks = built.deps.valTasks.slice(0, tasksN);
const groups = await sampleGroups({ loop, makeEnv: built.deps.makeValEnv, groups: tasks.map((taskId, i) => ({ taskId, uid: String(i) })), n: samples, concurrency: 16, seed });
const rounds = new Array<number>(samples).fill(0);
for (const g of groups) g.trajectories.forEach((t, k) => { rounds[k] += t.reward; });
for (const g of groups) for (const t of g.trajectories) {
  console.log(`=== ${t.taskId} (${built.deps.taskFamily?.(t.taskId ?? '') ?? '?'}) reward ${t.reward} term ${t.terminationReason} turns ${t.numTurns} ` +
    `toolErr ${t.toolErrors}/${t.toolCalls} parseErr ${t.parseErrors} len ${t.promptIds.length}+${t.responseIds.length}`);
  if (!a.quiet) for (const m of t.messages.slice(1)) console.log(`  [${m.role}] ${(m.content ?? '').slice(0, 300)} ${m.toolCalls ? JSON.stringify(m.toolCalls) : ''}`);
}
const m = computeMetrics(groups.flatMap((g) => g.trajectories.map((t) => ({ taskId: g.taskId, reward: t.reward }))));
console.log(`mean reward ${m.avgReward.toFixed(4)} ± ${m.rewardStdErr.toFixed(4)} (standard error over tasks) over ${tasks.length} tasks × ${samples} samples`);
if (samples > 1) {
  console.log(`per sample round: ${rounds.map((r) => (r / tasks.length).toFixed(4)).join(' ')}`);
  console.log(`pass@${samples} ${m.passAtK[samples].toFixed(4)}, pass^${samples} ${m.passHatK[samples].toFixed(4)}`);
}
