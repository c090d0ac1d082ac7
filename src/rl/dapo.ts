/**
 * DAPO (arXiv 2503.14476, §3.2 and §3.4): dynamic sampling ("filter groups") and overlong reward shaping, with
 * verl's config names (https://verl.readthedocs.io/en/latest/algo/dapo.html); docs/grpo.md, "DAPO".
 */
import { groupIndices } from './advantages.ts';

/** Population std (numpy's np.std, ddof 0). */
export function populationStd(xs: readonly number[]): number {
  if (xs.length === 0) return 0;
  const mean = xs.reduce((a, b) => a + b, 0) / xs.length;
  return Math.sqrt(xs.reduce((a, b) => a + (b - mean) ** 2, 0) / xs.length);
}

/**
 * The uids of the groups to keep: a group is kept if the population std of its metric is > 0, or it has exactly one
 * member. Groups whose members all scored the same have zero GRPO advantage and are dropped.
 */
export function keptGroupUids(metric: readonly number[], uids: readonly string[]): Set<string> {
  if (metric.length !== uids.length) throw new Error(`filter groups: ${metric.length} metric values but ${uids.length} uids`);
  const kept = new Set<string>();
  for (const [uid, members] of groupIndices(uids)) {
    if (members.length === 1 || populationStd(members.map((i) => metric[i])) > 0) kept.add(uid);
  }
  return kept;
}

export interface DynamicSamplingOptions<G> {
  /** Samples one generation batch of groups (each group = the n trajectories of one prompt). */
  generate: (round: number) => Promise<G[]>;
  /** The metric of each member of a group (e.g. reward or success). */
  metricOf: (group: G) => number[];
  /** Prompts (groups) wanted: `data.train_batch_size`. */
  targetGroups: number;
  /** `max_num_gen_batches`; ≤ 0 means unlimited. */
  maxRounds: number;
}

export interface DynamicSamplingResult<G> {
  groups: G[];
  rounds: number;
  /** Groups generated and dropped for zero variance. */
  dropped: number;
  generated: number;
}

/**
 * Keeps sampling generation batches, accumulating the groups with non-zero variance, until `targetGroups` are
 * collected; the result is truncated to exactly `targetGroups`. Past `maxRounds` it throws (as verl does).
 */
export async function dynamicSampling<G>(o: DynamicSamplingOptions<G>): Promise<DynamicSamplingResult<G>> {
  if (!(o.targetGroups >= 1)) throw new RangeError(`dynamic sampling: targetGroups must be ≥ 1, got ${o.targetGroups}`);
  const kept: G[] = [];
  let rounds = 0;
  let dropped = 0;
  let generated = 0;
  while (kept.length < o.targetGroups) {
    if (o.maxRounds > 0 && rounds >= o.maxRounds) {
      throw new Error(`dynamic sampling: only ${kept.length}/${o.targetGroups} groups with non-zero reward variance after ${rounds} generation batches (max_num_gen_batches=${o.maxRounds}); raise the limit or the generation batch size`);
    }
    const batch = await o.generate(rounds);
    rounds++;
    for (const g of batch) {
      generated++;
      const m = o.metricOf(g);
      if (m.length === 1 || populationStd(m) > 0) kept.push(g);
      else dropped++;
    }
  }
  return { groups: kept.slice(0, o.targetGroups), rounds, dropped, generated };
}

export interface OverlongOptions {
  /** Max response length R. */
  maxResponseLength: number;
  /** L_buf: the penalty ramps over the last L_buf tokens. */
  bufferLength: number;
  penaltyFactor: number;
}

/**
 * `expected = R − L_buf`, `exceed = len − expected`, penalty `min(−exceed/L_buf · factor, 0)`; `len` counts every valid
 * response token (observations included).
 */
export function overlongPenalty(responseLength: number, o: OverlongOptions): number {
  if (!(o.bufferLength > 0)) throw new RangeError(`overlong buffer length must be > 0, got ${o.bufferLength}`);
  if (o.bufferLength > o.maxResponseLength) throw new RangeError(`overlong buffer length ${o.bufferLength} exceeds the max response length ${o.maxResponseLength}`);
  const expected = o.maxResponseLength - o.bufferLength;
  const exceed = responseLength - expected;
  const penalty = (-exceed / o.bufferLength) * o.penaltyFactor;
  return penalty < 0 ? penalty : 0;
}
