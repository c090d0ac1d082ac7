/**
 * Learnability-weighted task sampling (`data.sampling.mode: learnable`).
 *
 * A GRPO group whose rewards are all equal has zero advantage and teaches nothing, yet its generation costs as much
 * as any other. With outcome rewards the all-equal groups cluster by kind of task: those the policy never solves and
 * those it always solves. This sampler groups the training tasks by a key (the task's family or category, from the
 * trainer's `taskFamily`; tasks without one share a key) and estimates, per key, the share of its groups that were
 * informative (rewards not all equal): a decayed count with a prior of half a group either way,
 *
 *   u_k = (I_k + prior/2) / (G_k + prior),   I_k, G_k ← decay · (I_k, G_k) after each step, then + this step's groups.
 *
 * Each task is drawn by first drawing a key with probability ∝ share_k · (floor + u_k^power), where share_k is the
 * key's share of the training tasks (so with equal estimates it samples tasks uniformly), then taking that key's next
 * task in its own seeded shuffled order. With power 1 and floor 0.1 a kind's weight lies between 0.1 and 1.1, at most
 * 11 times another's; power 2 with floor 0.02 lets it reach 51 times. The floor keeps every key sampled now and then,
 * so a kind of task the policy starts to solve (or to fail) is noticed. This is the p(1−p) prioritisation of online
 * difficulty filtering, measured at the level of task kinds, where the estimate exists before a task is seen twice.
 *
 * What a step buys is informative groups per second, not per group: a kind whose episodes run three times as long
 * costs three groups of another kind (generation and the update are both linear in tokens). With `cost` > 0 the
 * weight is divided by (t_k / t̄)^cost, t_k the key's decayed mean of tokens per group (prompt and response of all
 * its episodes, counted like I_k and G_k) and t̄ their mean weighted by the keys' shares (a key not yet seen costs t̄).
 * `cost` 1 draws kinds in proportion to informative groups per token; 0 (the default) ignores length.
 *
 * Everything is seeded and the state (estimates, token counts, orders, cursors) is saved with the trainer's
 * checkpoint.
 */
import type { XoshiroRng } from '../gym/rng.ts';

export interface LearnableSamplingConfig {
  /** Weight added to every key's informative share (> 0 keeps every key in play). */
  floor: number;
  /** Multiplier of the counts at each update (1 = no forgetting). */
  decay: number;
  /** Pseudo-groups of the prior (half informative). */
  prior: number;
  /** Exponent of the informative share in the weight (default 1; larger prefers informative kinds more sharply). */
  power?: number;
  /** Exponent of the key's relative tokens per group, dividing the weight (default 0: length ignored). */
  cost?: number;
}

export interface TaskSamplerState {
  keys: string[];
  informative: number[];
  groups: number[];
  /** Decayed sum of tokens of the key's groups (mean tokens per group: tokens / groups); absent in older checkpoints. */
  tokens?: number[];
  orders: number[][];
  cursors: number[];
}

export class LearnableTaskSampler {
  private readonly keys: string[];
  /** Task indices of each key, in task-list order. */
  private readonly members: number[][];
  /** Key index of each task id. */
  private readonly keyOfTask: Map<string, number>;
  private state: Required<TaskSamplerState>;

  constructor(private readonly tasks: readonly string[], keyOfTask: (taskId: string) => string | undefined, private readonly config: LearnableSamplingConfig) {
    if (!(config.floor > 0)) throw new Error(`data.sampling.floor must be > 0, got ${config.floor}`);
    if (!(config.decay > 0 && config.decay <= 1)) throw new Error(`data.sampling.decay must be in (0, 1], got ${config.decay}`);
    if (!(config.prior > 0)) throw new Error(`data.sampling.prior must be > 0, got ${config.prior}`);
    if (config.power !== undefined && !(config.power > 0 && config.power <= 8)) throw new Error(`data.sampling.power must be in (0, 8], got ${config.power}`);
    if (config.cost !== undefined && !(config.cost >= 0 && config.cost <= 4)) throw new Error(`data.sampling.cost must be in [0, 4], got ${config.cost}`);
    const byKey = new Map<string, number[]>();
    tasks.forEach((t, i) => {
      const k = keyOfTask(t) ?? '';
      if (!byKey.has(k)) byKey.set(k, []);
      byKey.get(k)!.push(i);
    });
    this.keys = [...byKey.keys()].sort();
    this.members = this.keys.map((k) => byKey.get(k)!);
    this.keyOfTask = new Map();
    this.members.forEach((m, k) => m.forEach((t) => this.keyOfTask.set(tasks[t], k)));
    const K = this.keys.length;
    this.state = { keys: [...this.keys], informative: new Array(K).fill(0), groups: new Array(K).fill(0), tokens: new Array(K).fill(0), orders: this.keys.map(() => []), cursors: new Array(K).fill(0) };
  }

  /** The estimated informative share of each key. */
  estimates(): Record<string, number> {
    const out: Record<string, number> = {};
    this.keys.forEach((k, i) => (out[k] = this.estimate(i)));
    return out;
  }

  private estimate(i: number): number {
    const p = this.config.prior;
    return (this.state.informative[i] + p / 2) / (this.state.groups[i] + p);
  }

  /** Each key's mean tokens per group relative to the share-weighted mean (1 for keys not yet seen, or all when none is). */
  relativeCosts(): Record<string, number> {
    const out: Record<string, number> = {};
    const rel = this.relativeCost();
    this.keys.forEach((k, i) => (out[k] = rel[i]));
    return out;
  }

  private relativeCost(): number[] {
    const s = this.state, total = this.tasks.length;
    const mean = this.keys.map((_, i) => (s.groups[i] > 0 && s.tokens[i] > 0 ? s.tokens[i] / s.groups[i] : NaN));
    let num = 0, den = 0;
    mean.forEach((m, i) => {
      if (Number.isNaN(m)) return;
      num += (this.members[i].length / total) * m;
      den += this.members[i].length / total;
    });
    if (den === 0) return mean.map(() => 1);
    const avg = num / den;
    return mean.map((m) => (Number.isNaN(m) ? 1 : m / avg));
  }

  /** The next `count` tasks. */
  next(count: number, rng: XoshiroRng): string[] {
    const total = this.tasks.length;
    const power = this.config.power ?? 1, cost = this.config.cost ?? 0;
    const rel = cost > 0 ? this.relativeCost() : null;
    const weights = this.members.map((m, i) => ((m.length / total) * (this.config.floor + this.estimate(i) ** power)) / (rel ? rel[i] ** cost : 1));
    const sum = weights.reduce((a, b) => a + b, 0);
    const out: string[] = [];
    for (let n = 0; n < count; n++) {
      let x = rng.random() * sum, i = 0;
      while (i < weights.length - 1 && x >= weights[i]) x -= weights[i++];
      const s = this.state;
      if (s.cursors[i] >= s.orders[i].length) {
        s.orders[i] = rng.permutation(this.members[i].length);
        s.cursors[i] = 0;
      }
      out.push(this.tasks[this.members[i][s.orders[i][s.cursors[i]++]]]);
    }
    return out;
  }

  /** One step's groups: each its task, whether its rewards differed, and its tokens (all its episodes). Decays the counts first. */
  update(groups: readonly { taskId: string; informative: boolean; tokens?: number }[]): void {
    const s = this.state;
    for (let i = 0; i < this.keys.length; i++) {
      s.informative[i] *= this.config.decay;
      s.groups[i] *= this.config.decay;
      s.tokens[i] *= this.config.decay;
    }
    for (const g of groups) {
      const k = this.keyOfTask.get(g.taskId);
      if (k === undefined) continue;
      s.groups[k] += 1;
      if (g.informative) s.informative[k] += 1;
      s.tokens[k] += g.tokens ?? 0;
    }
  }

  saveState(): TaskSamplerState {
    return structuredClone(this.state);
  }

  loadState(saved: TaskSamplerState): void {
    if (!saved || !Array.isArray(saved.keys) || JSON.stringify(saved.keys) !== JSON.stringify(this.keys)) {
      throw new Error(`the checkpoint's task sampler has keys ${JSON.stringify(saved?.keys)}, the training tasks ${JSON.stringify(this.keys)}: the task set changed`);
    }
    const K = this.keys.length;
    const ok = [saved.informative, saved.groups, saved.cursors, ...(saved.tokens !== undefined ? [saved.tokens] : [])].every((a) => Array.isArray(a) && a.length === K) && Array.isArray(saved.orders) && saved.orders.length === K &&
      saved.orders.every((o, i) => Array.isArray(o) && (o.length === 0 || o.length === this.members[i].length));
    if (!ok) throw new Error('the checkpoint\'s task sampler state is malformed');
    // a state written before token counts: none counted yet
    this.state = structuredClone({ ...saved, tokens: saved.tokens ?? new Array(K).fill(0) });
  }
}
