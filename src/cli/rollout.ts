/**
 * `longrun rollout`: plays a synthetic task set with an agent against the scripted user and writes one JSON line per
 * episode (messages, tool calls, reward breakdown), then prints mean reward, success rate and pass^k.
 * `--mistake-rate r [--mistake-kinds a,b]` makes the expert an imperfect demonstrator; each line then lists the
 * mistakes made (`mistakes`, `mistakeOpportunities`).
 *
 * `--env MODULE_OR_ID` instead plays an env defined with `defineEnv` (a module of yours, or the id of one): its
 * `demonstrator`'s scripted turns on every task of `--split`, `--trials` times, through the env's own tools, user and
 * reward (`demonstrationEpisodes`), one JSON line per episode in the format `longrun sft --data` reads.
 */
import { createWriteStream } from 'node:fs';
import { basename, dirname } from 'node:path';
import { SingleBar, Presets } from 'cli-progress';
import type { Command } from 'commander';
import { MISTAKE_KINDS, parseMistakeKinds, type MistakeKind } from '../domains/retail/synth/expert-mistakes.ts';
import { AGENT_NAMES, makeAgent, makeUser, runRollouts, USER_NAMES, type RolloutSummary } from '../domains/retail/synth/rollouts.ts';
import { readTaskSet } from '../domains/retail/synth/taskset.ts';
import { demonstrationEpisodes, writeTrajectoriesJsonl, type DemonstrationRecord } from '../tooluse/api/index.ts';
import { meanStdErr } from '../tooluse/metrics.ts';
import { resolveEnvDefinition } from './env-arg.ts';
import { outFile } from './out-file.ts';

interface RolloutOpts {
  agent: string;
  user: string;
  tasks?: string;
  env?: string;
  split: string;
  out: string;
  trials: number;
  seed: number;
  limit?: number;
  maxSteps: number;
  progress: boolean;
  mistakeRate?: number;
  mistakeKinds?: MistakeKind[];
}

function int(name: string, min: number) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isSafeInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}, got '${v}'`);
    return n;
  };
}

function mistakeRate(v: string): number {
  const n = Number(v);
  if (v.trim() === '' || !Number.isFinite(n) || n < 0 || n > 1) throw new Error(`--mistake-rate must be a number in [0, 1], got '${v}'`);
  return n;
}

function mistakeKinds(v: string): MistakeKind[] {
  try {
    return parseMistakeKinds(v.split(',').map((k) => k.trim()).filter((k) => k !== ''));
  } catch (err) {
    throw new Error(`--mistake-kinds: ${(err as Error).message}`, { cause: err });
  }
}

export function formatSummary(s: RolloutSummary): string {
  const m = s.metrics;
  const lines = [
    `episodes ${s.episodes} over ${m.numTasks} tasks`,
    `mean reward ${m.avgReward.toFixed(4)} ± ${m.rewardStdErr.toFixed(4)} (standard error over tasks), success ${(100 * m.successRate).toFixed(2)}%`,
    `pass^k: ${Object.entries(m.passHatK).map(([k, v]) => `pass^${k}=${v.toFixed(4)}`).join(', ')}`,
    `pass@k: ${Object.entries(m.passAtK).map(([k, v]) => `pass@${k}=${v.toFixed(4)}`).join(', ')}`,
    `mean steps ${s.meanSteps.toFixed(1)}; terminations ${Object.entries(s.terminations).map(([k, v]) => `${k}=${v}`).join(', ')}`,
    'success by family: ' + Object.entries(s.byFamily).map(([k, v]) => `${k} ${(100 * v.successRate).toFixed(1)}% (${v.episodes})`).join(', '),
  ];
  const mk = s.mistakes;
  if (mk) {
    const share = mk.opportunities > 0 ? ` (${((100 * mk.count) / mk.opportunities).toFixed(1)}%)` : '';
    const byKind = Object.entries(mk.byKind).map(([k, v]) => `${k}=${v}`).join(', ');
    lines.push(`expert mistakes ${mk.count} at ${mk.opportunities} decision points${share}${byKind ? `: ${byKind}` : ''}`);
  }
  return lines.join('\n');
}

/** Mean reward of the episodes with its standard error over tasks (each task's trials averaged first). */
function perTaskMean(records: readonly { taskId: string; reward: number }[]): { mean: number; stdErr: number; tasks: number } {
  const byTask = new Map<string, number[]>();
  for (const r of records) byTask.set(r.taskId, [...(byTask.get(r.taskId) ?? []), r.reward]);
  const means = [...byTask.values()].map((xs) => xs.reduce((a, b) => a + b, 0) / xs.length);
  return { ...meanStdErr(means), tasks: means.length };
}

export function formatDemoSummary(envId: string, split: string, records: readonly DemonstrationRecord[]): string {
  if (records.length === 0) return `env ${envId}, split ${split}: no episodes`;
  const all = perTaskMean(records);
  const terminations: Record<string, number> = {};
  for (const r of records) terminations[r.terminationReason] = (terminations[r.terminationReason] ?? 0) + 1;
  const lines = [
    `env ${envId}, split ${split}: ${records.length} demonstrator episodes over ${all.tasks} tasks`,
    `mean reward ${all.mean.toFixed(4)} ± ${all.stdErr.toFixed(4)} (standard error over tasks)`,
    `terminations ${Object.entries(terminations).map(([k, v]) => `${k}=${v}`).join(', ')}`,
  ];
  const families = [...new Set(records.map((r) => r.family).filter((f): f is string => f !== undefined))].sort();
  if (families.length) {
    lines.push('mean reward by family: ' + families.map((f) => {
      const m = perTaskMean(records.filter((r) => r.family === f));
      return `${f} ${m.mean.toFixed(4)} (${m.tasks} tasks)`;
    }).join(', '));
  }
  return lines.join('\n');
}

/** `longrun rollout --env`: the env's demonstrator on a split, written as SFT trajectories. */
export async function rolloutEnvCommand(o: { env: string; split: string; trials: number; seed: number; limit?: number; out: string }, print: (line: string) => void = console.log): Promise<DemonstrationRecord[]> {
  const def = await resolveEnvDefinition(o.env, 'rollout --env');
  const retail = def.id.startsWith('longrun/retail') ? '; retail: use --tasks with a task set from `longrun gen tasks`, whose expert demonstrates' : '';
  if (!def.spec.demonstrator && !def.spec.demonstratorSession) throw new Error(`rollout --env ${o.env}: env ${def.id} has no demonstrator (give defineEnv a demonstrator: (task) => turns) to record SFT trajectories from${retail}`);
  let envErrors = 0;
  const records = await demonstrationEpisodes(def, o.split, o.trials, {
    seed: o.seed,
    maxTasks: o.limit,
    onEnvError: (taskId, trial, error) => {
      envErrors++;
      console.error(`task ${taskId} trial ${trial}: env error, episode left out: ${error.message}`);
    },
  });
  writeTrajectoriesJsonl(outFile(o.out), records);
  print(formatDemoSummary(def.id, o.split, records));
  if (envErrors) print(`${envErrors} episode(s) ended in an env error and were left out`);
  print(`trajectories written to ${o.out}`);
  return records;
}

export function register(program: Command): void {
  program
    .command('rollout')
    .description("play a synthetic retail task set (from `longrun gen tasks`), or an env module's demonstrator (--env), and write trajectories as JSONL")
    .option('--agent <name>', `agent: ${AGENT_NAMES.join(' | ')}`, 'expert')
    .option('--user <name>', `user simulator: ${USER_NAMES.join(' | ')}`, 'scripted')
    .option('--tasks <path>', 'task-set folder (or its tasks.json)')
    .option('--env <module-or-id>', "an env defined with defineEnv: a module (.ts, .mjs, .js; path:export picks an export) or its id; plays the env's demonstrator")
    .option('--split <name>', 'with --env: the task split', 'train')
    .requiredOption('--out <file>', 'output JSONL file')
    .option('--trials <k>', 'episodes per task (pass^k is reported for k = 1..trials)', int('trials', 1), 1)
    .option('--seed <n>', 'seed for per-episode seeds', int('seed', 0), 0)
    .option('--limit <n>', 'only the first N tasks', int('limit', 1))
    .option('--max-steps <n>', 'step limit per episode', int('max-steps', 1), 200)
    .option('--mistake-rate <r>', 'expert only: probability of a mistake at each decision point where one applies, in [0, 1]', mistakeRate)
    .option('--mistake-kinds <list>', `expert only: comma-separated mistake kinds (default all: ${MISTAKE_KINDS.join(', ')})`, mistakeKinds)
    .option('--no-progress', 'no progress bar')
    .action(async (o: RolloutOpts, cmd: Command) => {
      if ((o.env === undefined) === (o.tasks === undefined)) throw new Error('rollout: give --tasks (a synthetic retail task set) or --env (an env module or id), not both or neither');
      if (o.env !== undefined) {
        const retailOnly = (['agent', 'user', 'maxSteps', 'mistakeRate', 'mistakeKinds'] as const).filter((k) => cmd.getOptionValueSource(k) === 'cli');
        if (retailOnly.length) throw new Error(`${retailOnly.map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(', ')} ${retailOnly.length > 1 ? 'apply' : 'applies'} to --tasks only; --env plays the env's own demonstrator, user and turn limit`);
        await rolloutEnvCommand({ env: o.env, split: o.split, trials: o.trials, seed: o.seed, limit: o.limit, out: o.out });
        return;
      }
      if (cmd.getOptionValueSource('split') === 'cli') throw new Error('--split applies to --env only (a task-set folder is one split)');
      if (o.mistakeKinds !== undefined && o.mistakeRate === undefined) throw new Error('--mistake-kinds needs --mistake-rate');
      if (o.mistakeRate !== undefined && o.agent !== 'expert') throw new Error(`--mistake-rate applies to --agent expert only, not '${o.agent}'`);
      const agent = makeAgent(o.agent, { mistakeRate: o.mistakeRate, mistakeKinds: o.mistakeKinds });
      const user = makeUser(o.user);
      const tasksPath = o.tasks!;
      const dir = basename(tasksPath) === 'tasks.json' ? dirname(tasksPath) : tasksPath;
      const set = readTaskSet(dir);
      const tasks = o.limit ? set.tasks.slice(0, o.limit) : set.tasks;
      const out = createWriteStream(outFile(o.out));
      const bar = new SingleBar({ format: 'rollout [{bar}] {value}/{total} episodes | success {success}% | {eta_formatted} left', hideCursor: true }, Presets.shades_classic);
      if (o.progress) bar.start(tasks.length * o.trials, 0, { success: '0.0' });
      let done = 0;
      let ok = 0;
      const summary = await runRollouts({
        domain: set.domain,
        tasks,
        agent,
        user,
        trials: o.trials,
        seed: o.seed,
        maxSteps: o.maxSteps,
        onEpisode: (t, task) => {
          out.write(JSON.stringify({ ...t, family: task.longrun.family, difficulty: task.longrun.difficulty }) + '\n');
          done++;
          if (t.reward === 1) ok++;
          if (o.progress) bar.update(done, { success: ((100 * ok) / done).toFixed(1) });
        },
      });
      if (o.progress) bar.stop();
      await new Promise<void>((resolve, reject) => out.end((err?: Error | null) => (err ? reject(err) : resolve())));
      console.log(formatSummary(summary));
      console.log(`trajectories written to ${o.out}`);
    });
}
