/**
 * Outcome advantages for group-relative policy optimisation (docs/grpo.md, "Advantages").
 *
 * Every estimator here is outcome-only: a trajectory's score is the plain (unmasked) sum of its token-level rewards,
 * one scalar per trajectory is computed from its group (trajectories sharing a `uid`), and that scalar is broadcast
 * over the response tokens through the response mask (observation and padding tokens get 0).
 */

import { namesOf } from './registry.ts';

/** verl's `epsilon` in compute_grpo_outcome_advantage. */
export const GRPO_EPSILON = 1e-6;

export interface AdvantageOptions {
  /** `algorithm.norm_adv_by_std_in_grpo`: true = GRPO, false = Dr.GRPO (no std scaling). Default true. */
  normAdvByStd?: boolean;
  epsilon?: number;
  /**
   * Per-trajectory scores whose group std divides the advantages instead of the std of the training scores (with
   * partial credit: the task rewards, so a credit difference is not blown up to the size of a success); a group in
   * which they are all equal is divided by 1. GRPO only.
   */
  stdScores?: ArrayLike<number>;
  /** RFT's threshold: a trajectory is kept (A = 1) when its score is ≥ this (default 1). */
  minReward?: number;
}

export interface AdvantageResult {
  /** Per-trajectory advantage, before broadcasting. */
  sequence: Float64Array;
  /** `[B, R]` row-major: `sequence[i] · mask[i, t]`. For these estimators `returns` is the same tensor. */
  tokens: Float32Array;
}

/** `s_i = Σ_t token_level_rewards[i, t]` over all R positions (not masked). */
export function sequenceScores(tokenLevelRewards: ArrayLike<number>, rows: number, cols: number): Float64Array {
  checkShape('tokenLevelRewards', tokenLevelRewards, rows, cols);
  const s = new Float64Array(rows);
  for (let i = 0; i < rows; i++) {
    let sum = 0;
    for (let t = 0; t < cols; t++) sum += tokenLevelRewards[i * cols + t];
    s[i] = sum;
  }
  return s;
}

/** Indices of each group, in first-appearance order of the uids. */
export function groupIndices(uids: readonly string[]): Map<string, number[]> {
  const groups = new Map<string, number[]>();
  uids.forEach((u, i) => {
    const g = groups.get(u);
    if (g) g.push(i);
    else groups.set(u, [i]);
  });
  return groups;
}

/**
 * GRPO (DeepSeekMath, arXiv 2402.03300, §4.1, outcome supervision; verl's compute_grpo_outcome_advantage): per
 * group with more than one member, μ = mean and σ = unbiased std (N−1); a singleton group uses μ = 0, σ = 1.
 * `A_i = (s_i − μ)/(σ + ε)`, or `s_i − μ` when `normAdvByStd` is false (Dr.GRPO, arXiv 2503.20783).
 * With `stdScores`, σ is their group std, and a group where they are all equal gets `A_i = s_i − μ`.
 */
export function grpoSequenceAdvantages(scores: ArrayLike<number>, uids: readonly string[], options: AdvantageOptions = {}): Float64Array {
  if (scores.length !== uids.length) throw new Error(`grpo advantages: ${scores.length} scores but ${uids.length} uids`);
  const stdScores = options.stdScores;
  if (stdScores && stdScores.length !== scores.length) throw new Error(`grpo advantages: ${stdScores.length} stdScores for ${scores.length} scores`);
  const eps = options.epsilon ?? GRPO_EPSILON;
  const norm = options.normAdvByStd ?? true;
  const adv = new Float64Array(scores.length);
  const groupStd = (x: ArrayLike<number>, members: readonly number[]) => {
    const m = members.reduce((a, i) => a + x[i], 0) / members.length;
    return Math.sqrt(members.reduce((a, i) => a + (x[i] - m) ** 2, 0) / (members.length - 1));
  };
  for (const members of groupIndices(uids).values()) {
    let mean = 0;
    let divisor = 1 + eps;
    if (members.length > 1) {
      mean = members.reduce((a, i) => a + scores[i], 0) / members.length;
      if (stdScores) {
        const std = groupStd(stdScores, members);
        divisor = std > 0 ? std + eps : 1;
      } else {
        divisor = groupStd(scores, members) + eps;
      }
    }
    for (const i of members) adv[i] = norm ? (scores[i] - mean) / divisor : scores[i] - mean;
  }
  return adv;
}

/**
 * RLOO (Ahmadian et al., arXiv 2402.14740, leave-one-out baseline): for a group of K > 1, `A_i = K/(K−1)·(s_i − mean_g)` (= s_i − mean of the others);
 * a singleton gets `s_i`.
 */
export function rlooSequenceAdvantages(scores: ArrayLike<number>, uids: readonly string[]): Float64Array {
  if (scores.length !== uids.length) throw new Error(`rloo advantages: ${scores.length} scores but ${uids.length} uids`);
  const adv = new Float64Array(scores.length);
  for (const members of groupIndices(uids).values()) {
    const k = members.length;
    if (k === 1) {
      adv[members[0]] = scores[members[0]];
      continue;
    }
    const mean = members.reduce((a, i) => a + scores[i], 0) / k;
    for (const i of members) adv[i] = (k / (k - 1)) * (scores[i] - mean);
  }
  return adv;
}

/**
 * Rejection sampling, online (RAFT, Dong et al., arXiv 2304.06767: sample, keep the high-reward samples, fine-tune
 * on them, repeat; STaR, Zelikman et al., arXiv 2203.14465, without its rationalisation step): `A_i = 1` when the
 * trajectory's score reaches `minReward` (kept, imitated by the `sft` policy loss), else 0 (dropped before the
 * update). No baseline and no std normalisation: groups play no part.
 */
export function rftSequenceAdvantages(scores: ArrayLike<number>, minReward = 1): Float64Array {
  if (!(minReward > 0)) throw new RangeError(`rft advantages: minReward must be > 0, got ${minReward}`);
  return Float64Array.from(scores, (s) => (s >= minReward ? 1 : 0));
}

/** `advantages[i, t] = A_i · m[i, t]` (the outcome advantage on every response token). */
export function broadcastOverMask(sequence: ArrayLike<number>, responseMask: ArrayLike<number>, rows: number, cols: number): Float32Array {
  if (sequence.length !== rows) throw new Error(`broadcast: ${sequence.length} sequence values for ${rows} rows`);
  checkShape('responseMask', responseMask, rows, cols);
  const out = new Float32Array(rows * cols);
  for (let i = 0; i < rows; i++) for (let t = 0; t < cols; t++) out[i * cols + t] = responseMask[i * cols + t] === 0 ? 0 : sequence[i] * responseMask[i * cols + t];
  return out;
}

/** One estimator: the per-trajectory scores of a batch and their group uids → one advantage per trajectory. */
type SequenceAdvantages = (scores: Float64Array, uids: readonly string[], options: AdvantageOptions) => Float64Array;

/** The advantage estimators by `algorithm.advEstimator` name (docs/grpo.md, "Advantages"). */
export const ADVANTAGE_ESTIMATORS = {
  grpo: (scores, uids, options) => grpoSequenceAdvantages(scores, uids, options),
  rloo: (scores, uids) => rlooSequenceAdvantages(scores, uids),
  rft: (scores, uids, options) => {
    if (uids.length !== scores.length) throw new Error(`rft advantages: ${scores.length} rows but ${uids.length} uids`);
    return rftSequenceAdvantages(scores, options.minReward);
  },
} as const satisfies Record<string, SequenceAdvantages>;

export type AdvantageEstimator = keyof typeof ADVANTAGE_ESTIMATORS;
export const ADVANTAGE_ESTIMATOR_NAMES = namesOf(ADVANTAGE_ESTIMATORS);

/** The whole estimator: token-level rewards `[B,R]` + mask + uids → per-sequence and per-token advantages. */
export function computeAdvantages(
  estimator: AdvantageEstimator,
  tokenLevelRewards: ArrayLike<number>,
  responseMask: ArrayLike<number>,
  uids: readonly string[],
  rows: number,
  cols: number,
  options: AdvantageOptions = {},
): AdvantageResult {
  const scores = sequenceScores(tokenLevelRewards, rows, cols);
  const f: SequenceAdvantages | undefined = Object.hasOwn(ADVANTAGE_ESTIMATORS, estimator) ? ADVANTAGE_ESTIMATORS[estimator] : undefined;
  if (!f) throw new Error(`unknown advantage estimator "${String(estimator)}" (use ${ADVANTAGE_ESTIMATOR_NAMES.join(', ')})`);
  const sequence = f(scores, uids, options);
  return { sequence, tokens: broadcastOverMask(sequence, responseMask, rows, cols) };
}

export function checkShape(name: string, a: ArrayLike<number>, rows: number, cols: number): void {
  if (a.length !== rows * cols) throw new Error(`${name}: expected ${rows}×${cols} = ${rows * cols} values, got ${a.length}`);
}
