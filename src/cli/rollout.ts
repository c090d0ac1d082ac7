/**
 * `longrun rollout`: plays a synthetic task set with an agent against the scripted user and writes one JSON line per
 * episode (messages, tool calls, reward breakdown), then prints mean reward, success rate and pass^k.
 * `--mistake-rate r [--mistake-kinds a,b]` makes the expert an imperfect demonstrator; each line then lists the
 * mistakes made (`mistakes`, `mistakeOpportunities`).
 */
import { createWriteStream } from 'node:fs';
import { basename, dirname } from 'node:path';
import { SingleBar, Presets } from 'cli-progress';
import type { Command } from 'commander';
import { MISTAKE_KINDS, parseMistakeKinds, type MistakeKind } from '../domains/retail/synth/expert-mistakes.ts';
import { AGENT_NAMES, makeAgent, makeUser, runRollouts, USER_NAMES, type RolloutSummary } from '../domains/retail/synth/rollouts.ts';
import { readTaskSet } from '../domains/retail/synth/taskset.ts';

interface RolloutOpts {
  agent: string;
  user: string;
  tasks: string;
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

export function register(program: Command): void {
  program
    .command('rollout')
    .description('play a synthetic retail task set (from `longrun gen tasks`) and write trajectories as JSONL')
    .option('--agent <name>', `agent: ${AGENT_NAMES.join(' | ')}`, 'expert')
    .option('--user <name>', `user simulator: ${USER_NAMES.join(' | ')}`, 'scripted')
    .requiredOption('--tasks <path>', 'task-set folder (or its tasks.json)')
    .requiredOption('--out <file>', 'output JSONL file')
    .option('--trials <k>', 'episodes per task (pass^k is reported for k = 1..trials)', int('trials', 1), 1)
    .option('--seed <n>', 'seed for per-episode seeds', int('seed', 0), 0)
    .option('--limit <n>', 'only the first N tasks', int('limit', 1))
    .option('--max-steps <n>', 'step limit per episode', int('max-steps', 1), 200)
    .option('--mistake-rate <r>', 'expert only: probability of a mistake at each decision point where one applies, in [0, 1]', mistakeRate)
    .option('--mistake-kinds <list>', `expert only: comma-separated mistake kinds (default all: ${MISTAKE_KINDS.join(', ')})`, mistakeKinds)
    .option('--no-progress', 'no progress bar')
    .action(async (o: RolloutOpts) => {
      if (o.mistakeKinds !== undefined && o.mistakeRate === undefined) throw new Error('--mistake-kinds needs --mistake-rate');
      if (o.mistakeRate !== undefined && o.agent !== 'expert') throw new Error(`--mistake-rate applies to --agent expert only, not '${o.agent}'`);
      const agent = makeAgent(o.agent, { mistakeRate: o.mistakeRate, mistakeKinds: o.mistakeKinds });
      const user = makeUser(o.user);
      const dir = basename(o.tasks) === 'tasks.json' ? dirname(o.tasks) : o.tasks;
      const set = readTaskSet(dir);
      const tasks = o.limit ? set.tasks.slice(0, o.limit) : set.tasks;
      const out = createWriteStream(o.out);
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
