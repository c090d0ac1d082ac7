/** τ²-bench aggregate metrics (tau2.md §7.6): success, pass^k and average reward over episodes grouped by task. */

export const SUCCESS_TOLERANCE = 1e-6;

export function isSuccess(reward: number): boolean {
  return Math.abs(reward - 1) <= SUCCESS_TOLERANCE;
}

/** Binomial coefficient C(n, k) as a float (exact for the small n used here). */
export function binomial(n: number, k: number): number {
  if (!Number.isInteger(n) || !Number.isInteger(k) || n < 0) throw new Error(`binomial needs non-negative integers, got C(${n}, ${k})`);
  if (k < 0 || k > n) return 0;
  let r = 1;
  for (let i = 1; i <= Math.min(k, n - k); i++) r = (r * (n - Math.min(k, n - k) + i)) / i;
  return Math.round(r);
}

/** pass^k for one task with n trials and c successes: the chance that k i.i.d. trials all succeed, C(c,k)/C(n,k). */
export function passHatK(n: number, c: number, k: number): number {
  if (k < 1 || k > n) throw new Error(`pass^k needs 1 <= k <= n trials (k=${k}, n=${n})`);
  if (c < 0 || c > n) throw new Error(`successes must be between 0 and n (c=${c}, n=${n})`);
  return binomial(c, k) / binomial(n, k);
}

export interface EpisodeResult {
  taskId: string;
  reward: number;
}

export interface AgentMetrics {
  numEpisodes: number;
  numTasks: number;
  avgReward: number;
  successRate: number;
  /** pass^k for k = 1 … the smallest trial count of any task, averaged over tasks. */
  passHatK: Record<number, number>;
}

export function computeMetrics(results: readonly EpisodeResult[]): AgentMetrics {
  if (results.length === 0) throw new Error('No episodes to compute metrics from');
  const byTask = new Map<string, number[]>();
  for (const r of results) {
    if (!Number.isFinite(r.reward)) throw new Error(`Episode of task ${r.taskId} has a non-finite reward ${r.reward}`);
    let list = byTask.get(r.taskId);
    if (!list) byTask.set(r.taskId, (list = []));
    list.push(r.reward);
  }
  const maxK = Math.min(...[...byTask.values()].map((l) => l.length));
  const pass: Record<number, number> = {};
  for (let k = 1; k <= maxK; k++) {
    let sum = 0;
    for (const rewards of byTask.values()) sum += passHatK(rewards.length, rewards.filter(isSuccess).length, k);
    pass[k] = sum / byTask.size;
  }
  return {
    numEpisodes: results.length,
    numTasks: byTask.size,
    avgReward: results.reduce((s, r) => s + r.reward, 0) / results.length,
    successRate: results.filter((r) => isSuccess(r.reward)).length / results.length,
    passHatK: pass,
  };
}
