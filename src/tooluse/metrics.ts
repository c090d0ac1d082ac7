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

/** pass@k for one task with n trials and c successes: the chance that at least one of k trials drawn without replacement succeeds, 1 − C(n−c,k)/C(n,k). */
export function passAtK(n: number, c: number, k: number): number {
  if (k < 1 || k > n) throw new Error(`pass@k needs 1 <= k <= n trials (k=${k}, n=${n})`);
  if (c < 0 || c > n) throw new Error(`successes must be between 0 and n (c=${c}, n=${n})`);
  return 1 - binomial(n - c, k) / binomial(n, k);
}

/** The mean of `xs` and its standard error: the sample standard deviation over √n (0 for a single value). */
export function meanStdErr(xs: readonly number[]): { mean: number; stdErr: number } {
  if (xs.length === 0) throw new Error('meanStdErr needs at least one value');
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  const variance = xs.length > 1 ? xs.reduce((a, x) => a + (x - mean) ** 2, 0) / (xs.length - 1) : 0;
  return { mean, stdErr: Math.sqrt(variance / xs.length) };
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
  /** pass@k (at least one of k trials succeeds) for k = 1 … the smallest trial count, averaged over tasks. */
  passAtK: Record<number, number>;
  /**
   * Standard error of the mean reward with tasks as the sampling unit: the sample standard deviation of the per-task
   * mean rewards over √(tasks) (0 with one task). With one trial per task it is the binomial √(p(1−p)/(N−1)) for 0/1
   * rewards; more trials per task shrink it only by the share of the variance that is within tasks.
   */
  rewardStdErr: number;
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
  const passAt: Record<number, number> = {};
  for (let k = 1; k <= maxK; k++) {
    let sum = 0, sumAt = 0;
    for (const rewards of byTask.values()) {
      const c = rewards.filter(isSuccess).length;
      sum += passHatK(rewards.length, c, k);
      sumAt += passAtK(rewards.length, c, k);
    }
    pass[k] = sum / byTask.size;
    passAt[k] = sumAt / byTask.size;
  }
  return {
    numEpisodes: results.length,
    numTasks: byTask.size,
    avgReward: results.reduce((s, r) => s + r.reward, 0) / results.length,
    successRate: results.filter((r) => isSuccess(r.reward)).length / results.length,
    passHatK: pass,
    passAtK: passAt,
    rewardStdErr: meanStdErr([...byTask.values()].map((l) => l.reduce((a, b) => a + b, 0) / l.length)).stdErr,
  };
}
