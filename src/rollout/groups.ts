/**
 * Group sampling for GRPO: n trajectories per task (same task, different seeds), many tasks in flight at once with
 * bounded concurrency, results grouped by `uid` (one fresh uid per task occurrence; docs/grpo.md, "The batch").
 *
 * Each worker owns one env (envs are stateful) and runs episodes one after another; `concurrency` workers run at
 * once, so up to `concurrency` generation requests reach the engine together (where a batching engine merges them).
 * Output order is deterministic: task by task, its n samples in order (verl's `repeat(n, interleave=True)` layout),
 * whatever order the episodes finish in.
 */
import type { AgentEnv, AgentLoop, Trajectory } from './agent-loop.ts';

export interface GroupSpec {
  taskId: string;
  /** The GRPO group key. */
  uid: string;
}

export interface SampleGroupsOptions {
  loop: AgentLoop;
  makeEnv: () => AgentEnv;
  groups: readonly GroupSpec[];
  /** Samples per group (verl `rollout.n`). */
  n: number;
  /** Episodes in flight at once (default 8). */
  concurrency?: number;
  /** Seeds are `seed + global sample index`, so a run is reproducible. */
  seed: number;
  /** Called after each finished episode (progress display). */
  onTrajectory?: (t: Trajectory, done: number, total: number) => void;
}

export interface SampledGroup {
  uid: string;
  taskId: string;
  trajectories: Trajectory[];
}

/** Runs async jobs with at most `limit` in flight; results in job order. */
export async function mapConcurrent<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number, worker: number) => Promise<R>): Promise<R[]> {
  if (!(Number.isInteger(limit) && limit >= 1)) throw new RangeError(`concurrency must be a positive integer, got ${limit}`);
  const results = new Array<R>(items.length);
  let next = 0;
  const worker = async (w: number) => {
    while (next < items.length) {
      const i = next++;
      results[i] = await fn(items[i], i, w);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, (_, w) => worker(w)));
  return results;
}

export async function sampleGroups(o: SampleGroupsOptions): Promise<SampledGroup[]> {
  if (!(Number.isInteger(o.n) && o.n >= 1)) throw new RangeError(`n (samples per task) must be a positive integer, got ${o.n}`);
  const uids = new Set(o.groups.map((g) => g.uid));
  if (uids.size !== o.groups.length) throw new Error('sampleGroups: every group needs its own uid');
  const jobs = o.groups.flatMap((g, gi) => Array.from({ length: o.n }, (_, j) => ({ group: g, seed: o.seed + gi * o.n + j })));
  const concurrency = o.concurrency ?? 8;
  const envs: AgentEnv[] = [];
  let done = 0;
  let results: Trajectory[];
  try {
    results = await mapConcurrent(jobs, concurrency, async (job, _i, w) => {
      const env = (envs[w] ??= o.makeEnv());
      const t = await o.loop.run(env, { seed: job.seed, taskId: job.group.taskId });
      done++;
      o.onTrajectory?.(t, done, jobs.length);
      return t;
    });
  } finally {
    await Promise.all(envs.map((e) => e.close?.()));
  }
  return o.groups.map((g, gi) => ({ uid: g.uid, taskId: g.taskId, trajectories: results.slice(gi * o.n, (gi + 1) * o.n) }));
}

/** Flattens groups into trajectories and their uids, in order. */
export function flattenGroups(groups: readonly SampledGroup[]): { trajectories: Trajectory[]; uids: string[] } {
  const trajectories = groups.flatMap((g) => g.trajectories);
  const uids = groups.flatMap((g) => g.trajectories.map(() => g.uid));
  return { trajectories, uids };
}
