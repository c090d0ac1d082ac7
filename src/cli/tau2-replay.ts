/** `longrun tau2 replay`: replays each task's gold actions on a fresh retail DB and prints one JSON line per task. */
import type { Command } from 'commander';
import { loadRetailTaskSet } from '../domains/retail/register.ts';
import { GoldHashCache } from '../tooluse/evaluator.ts';
import { replayTask } from '../tooluse/replay.ts';

export interface ReplayCommandOptions {
  data?: string;
  tasks?: string;
  split?: string;
  toolSet?: string;
}

/** Writes `{"task_id","final_db_hash","outputs","db_reward"}` lines; returns the exit code (1 if any db_reward is not 1). */
export function replayCommand(opts: ReplayCommandOptions, print: (line: string) => void = console.log): number {
  const toolSet = opts.toolSet ?? 'v1';
  if (toolSet !== 'v0' && toolSet !== 'v1') throw new Error(`--tool-set must be v0 or v1, got ${toolSet}`);
  const { domain, tasks } = loadRetailTaskSet({ dataDir: opts.data, tasksFile: opts.tasks, split: opts.split, version: toolSet });
  const cache = new GoldHashCache();
  let failures = 0;
  for (const task of tasks) {
    const result = replayTask(domain, task, cache);
    if (result.db_reward !== 1) failures++;
    print(JSON.stringify(result));
  }
  return failures === 0 ? 0 : 1;
}

export function registerReplay(tau2: Command): void {
  tau2
    .command('replay')
    .description("replay each task's gold actions on a fresh DB; print one JSON line per task with outputs, final DB hash and DB reward")
    .option('--data <dir>', 'τ²-bench retail data folder (default: $LONGRUN_TAU2_RETAIL or ../shared/tau2/retail)')
    .option('--tasks <file>', 'task file (default: <data>/tasks.json)')
    .option('--split <name>', 'task split from split_tasks.json', 'base')
    .option('--tool-set <v0|v1>', "retail tool list: v1 (16 tools) or v0 (τ² v0.x's 15)", 'v1')
    .action((opts: ReplayCommandOptions) => {
      process.exitCode = replayCommand(opts);
    });
}
