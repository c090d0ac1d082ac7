/**
 * `longrun model probe DIR`: the small seeded probe a shipped model's card states (`models/<name>/card.json`, `probe`), so that anyone — and CI —
 * can check that the model folder still plays as its card says: a synthetic task set generated from seeds (a world no
 * training step used), then `longrun eval --agent checkpoint` on it with the model's own settings (longrun.json),
 * every episode seeded. The same folder, seeds and code give the same rewards, episode for episode.
 *
 *   card.json: { "probe": { "tasks": { "seed", "worldSeed", "count", "difficulty", "users", "orders", "products"?, "families"? },
 *                           "trials", "seed", "result"?: { "meanReward", "rewards": { "<taskId>#<trial>": r } } } }
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import { generateTaskSet, writeTaskSet } from '../domains/retail/synth/taskset.ts';
import { DEFAULT_WORLD_SIZES } from '../domains/retail/synth/world.ts';
import { TASK_FAMILIES } from '../domains/retail/synth/scenario.ts';
import { evalCommand, type EvalCommandOptions } from './eval.ts';

const int = (min: number) => z.number().int().min(min);

export const CardProbeSchema = z.object({
  tasks: z.object({
    seed: int(0),
    worldSeed: int(0),
    count: int(1).max(256),
    difficulty: int(1).max(5).default(1),
    users: int(1).default(DEFAULT_WORLD_SIZES.users),
    orders: int(0).default(DEFAULT_WORLD_SIZES.orders),
    products: int(1).default(DEFAULT_WORLD_SIZES.products),
    /** Task families (default all): a probe whose episodes both succeed and fail checks more than one of zeros. */
    families: z.array(z.enum(TASK_FAMILIES)).min(1).optional(),
  }).strict(),
  trials: int(1).max(16).default(1),
  seed: int(0).default(300),
  result: z.object({ meanReward: z.number(), rewards: z.record(z.string(), z.number()) }).strict().optional(),
}).strict();

export type CardProbe = z.output<typeof CardProbeSchema>;

/** Reads `DIR/card.json`'s probe (a clear error naming the file when it is missing or malformed). */
export function readCardProbe(modelDir: string): CardProbe {
  const file = join(modelDir, 'card.json');
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (e) {
    throw new Error(`${file}: cannot read the model card's probe (${(e as Error).message})`, { cause: e });
  }
  const r = CardProbeSchema.safeParse((raw as { probe?: unknown } | null)?.probe);
  if (!r.success) throw new Error(`${file}: probe: ${r.error.issues.map((i) => `${i.path.join('.') || '(probe)'}: ${i.message}`).join('; ')}`);
  return r.data;
}

/** Plays the probe on the model folder; returns every episode's reward and the mean. Quiet (nothing printed). */
export async function runCardProbe(modelDir: string, probe: CardProbe): Promise<{ meanReward: number; rewards: Record<string, number> }> {
  const work = mkdtempSync(join(tmpdir(), 'longrun-card-probe-'));
  try {
    const t = probe.tasks;
    const set = generateTaskSet({ worldSeed: t.worldSeed, taskSeed: t.seed, count: t.count, sizes: { users: t.users, orders: t.orders, products: t.products }, families: t.families, difficulty: t.difficulty, split: 'probe' });
    const tasksDir = join(work, 'tasks');
    mkdirSync(tasksDir, { recursive: true });
    // The folder's policy.md is not what the model reads: its longrun.json names the policy text of its prompt.
    writeTaskSet(tasksDir, set, '(the model folder\'s longrun.json sets the policy)');
    const out = join(work, 'eval');
    const opts: EvalCommandOptions = {
      agent: 'checkpoint', checkpoint: modelDir, tasks: join(tasksDir, 'tasks.json'), trials: probe.trials, out, seed: probe.seed, progress: false,
      taskSet: 'v1', user: 'scripted', concurrency: 1, maxRequests: 8, timeout: 120, maxRetries: 4, maxSteps: 200, maxErrors: 10,
    };
    const given = new Set<string>(['agent', 'checkpoint', 'tasks', 'trials', 'out', 'seed', 'progress', 'concurrency']);
    const log = { out: console.log, err: console.error };
    console.log = () => {};
    console.error = () => {};
    let code: number;
    try {
      code = await evalCommand(opts, (k) => given.has(k));
    } finally {
      console.log = log.out;
      console.error = log.err;
    }
    if (code !== 0) throw new Error(`the card probe of ${modelDir} did not finish (eval exit code ${code})`);
    const rewards: Record<string, number> = {};
    for (const line of readFileSync(join(out, 'trajectories.jsonl'), 'utf8').split('\n')) {
      if (!line.trim()) continue;
      const e = JSON.parse(line) as { taskId: string; trial: number; reward: number | null; status: string };
      if (e.status !== 'ok' || e.reward === null) throw new Error(`the card probe of ${modelDir}: task ${e.taskId} trial ${e.trial} ended with ${e.status}`);
      rewards[`${e.taskId}#${e.trial}`] = e.reward;
    }
    const values = Object.values(rewards);
    return { meanReward: values.reduce((a, b) => a + b, 0) / values.length, rewards };
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

/** Stores a probe result in `DIR/card.json` (the rest of the file is kept). */
export function writeCardProbeResult(modelDir: string, result: { meanReward: number; rewards: Record<string, number> }): void {
  const file = join(modelDir, 'card.json');
  const card = JSON.parse(readFileSync(file, 'utf8')) as { probe: Record<string, unknown> };
  card.probe.result = { meanReward: result.meanReward, rewards: result.rewards };
  writeFileSync(file, JSON.stringify(card, null, 2) + '\n');
}
