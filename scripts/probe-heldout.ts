/**
 * Held-out probe: plays the first N validation tasks of a run config with a model checkpoint (one episode each,
 * scripted user) and prints every transcript with its reward, termination, tool errors and parse errors.
 *
 *   node --import tsx scripts/probe-heldout.ts --config presets/retail-tiny.yaml \
 *     --checkpoint runs/retail-tiny/sft/checkpoints/step-00000125 [--tasks 32] [--temperature 1] [--seed 7]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parse } from 'yaml';
import { AgentLoop } from '../src/rollout/agentLoop.ts';
import { sampleGroups } from '../src/rollout/groups.ts';
import { buildRun, parseRunFile, runFileFromCheckpoint } from '../src/rl/trainSetup.ts';

const { values: a } = parseArgs({ options: { config: { type: 'string' }, checkpoint: { type: 'string' }, tasks: { type: 'string', default: '32' }, temperature: { type: 'string', default: '1' }, seed: { type: 'string', default: '7' } } });
if (!a.config || !a.checkpoint) throw new Error('usage: --config RUN.yaml --checkpoint DIR [--tasks N] [--temperature T] [--seed S]');
const tasksN = Number(a.tasks), temperature = Number(a.temperature), seed = Number(a.seed);
if (!(Number.isInteger(tasksN) && tasksN > 0)) throw new Error(`--tasks must be a positive integer, got ${a.tasks}`);
if (!(temperature >= 0)) throw new Error(`--temperature must be a number ≥ 0, got ${a.temperature}`);
if (!Number.isSafeInteger(seed) || seed < 0) throw new Error(`--seed must be a non-negative integer, got ${a.seed}`);
const raw = runFileFromCheckpoint(parse(readFileSync(a.config, 'utf8')), a.checkpoint);
const { run, trainer } = parseRunFile(raw);
const built = await buildRun(run);
if (!built.deps.valTasks || !built.deps.makeValEnv) throw new Error('the config has no validation tasks (taskOptions.valDir)');
const r = trainer.rollout;
const loop = new AgentLoop({
  format: built.deps.format, engine: built.deps.engine, sampling: { temperature },
  maxTurns: r.maxTurns, maxResponseTokens: r.maxResponseTokens, maxTokensPerTurn: r.maxTokensPerTurn, ...built.deps.loop,
});
const tasks = built.deps.valTasks.slice(0, tasksN);
const groups = await sampleGroups({ loop, makeEnv: built.deps.makeValEnv, groups: tasks.map((taskId, i) => ({ taskId, uid: String(i) })), n: 1, concurrency: 16, seed });
let total = 0;
for (const g of groups) for (const t of g.trajectories) {
  total += t.reward;
  console.log(`=== ${t.taskId} (${built.deps.taskFamily?.(t.taskId ?? '') ?? '?'}) reward ${t.reward} term ${t.terminationReason} turns ${t.numTurns} ` +
    `toolErr ${t.toolErrors}/${t.toolCalls} parseErr ${t.parseErrors} len ${t.promptIds.length}+${t.responseIds.length}`);
  for (const m of t.messages.slice(1)) console.log(`  [${m.role}] ${(m.content ?? '').slice(0, 300)} ${m.toolCalls ? JSON.stringify(m.toolCalls) : ''}`);
}
console.log(`mean reward ${(total / tasks.length).toFixed(4)} over ${tasks.length} tasks`);
