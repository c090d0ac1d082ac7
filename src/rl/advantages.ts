/**
 * Outcome advantages for group-relative policy optimisation (verl.md §4.1, §4.2).
 *
 * Every estimator here is outcome-only: a trajectory's score is the plain (unmasked) sum of its token-level rewards,
 * one scalar per trajectory is computed from its group (trajectories sharing a `uid`), and that scalar is broadcast
 * over the response tokens through the response mask (observation and padding tokens get 0).
 */

/** verl's `epsilon` in compute_grpo_outcome_advantage. */
export const GRPO_EPSILON = 1e-6;

export type AdvantageEstimator = 'grpo' | 'rloo';

export interface AdvantageOptions {
  /** `algorithm.norm_adv_by_std_in_grpo`: true = GRPO, false = Dr.GRPO (no std scaling). Default true. */
  normAdvByStd?: boolean;
  epsilon?: number;
}

export interface AdvantageResult {
  /** Per-trajectory advantage, before broadcasting. */
  sequence: Float64Array;
  /** `[B, R]` row-major: `sequence[i] · mask[i, t]`. For these estimators `returns` is the same tensor. */
  tokens: Float32Array;
}

/** `s_i = Σ_t token_level_rewards[i, t]` over all R positions (not masked, verl.md §4.1 step 1). */
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
 * GRPO (verl.md §4.1): per group with more than one member, μ = mean and σ = unbiased std (N−1);
 * a singleton group uses μ = 0, σ = 1. `A_i = (s_i − μ)/(σ + ε)`, or `s_i − μ` when `normAdvByStd` is false (Dr.GRPO).
 */
export function grpoSequenceAdvantages(scores: ArrayLike<number>, uids: readonly string[], options: AdvantageOptions = {}): Float64Array {
  if (scores.length !== uids.length) throw new Error(`grpo advantages: ${scores.length} scores but ${uids.length} uids`);
  const eps = options.epsilon ?? GRPO_EPSILON;
  const norm = options.normAdvByStd ?? true;
  const adv = new Float64Array(scores.length);
  for (const members of groupIndices(uids).values()) {
    let mean = 0;
    let std = 1;
    if (members.length > 1) {
      mean = members.reduce((a, i) => a + scores[i], 0) / members.length;
      const ss = members.reduce((a, i) => a + (scores[i] - mean) ** 2, 0);
      std = Math.sqrt(ss / (members.length - 1));
    }
    for (const i of members) adv[i] = norm ? (scores[i] - mean) / (std + eps) : scores[i] - mean;
  }
  return adv;
}

/**
 * RLOO (verl.md §4.2): for a group of K > 1, `A_i = K/(K−1)·(s_i − mean_g)` (= s_i − mean of the others);
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

/** `advantages[i, t] = A_i · m[i, t]` (verl.md §4.1 step 4). */
export function broadcastOverMask(sequence: ArrayLike<number>, responseMask: ArrayLike<number>, rows: number, cols: number): Float32Array {
  if (sequence.length !== rows) throw new Error(`broadcast: ${sequence.length} sequence values for ${rows} rows`);
  checkShape('responseMask', responseMask, rows, cols);
  const out = new Float32Array(rows * cols);
  for (let i = 0; i < rows; i++) for (let t = 0; t < cols; t++) out[i * cols + t] = responseMask[i * cols + t] === 0 ? 0 : sequence[i] * responseMask[i * cols + t];
  return out;
}

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
  let sequence: Float64Array;
  switch (estimator) {
    case 'grpo':
      sequence = grpoSequenceAdvantages(scores, uids, options);
      break;
    case 'rloo':
      sequence = rlooSequenceAdvantages(scores, uids);
      break;
    default:
      throw new Error(`unknown advantage estimator "${String(estimator)}" (use grpo or rloo)`);
  }
  return { sequence, tokens: broadcastOverMask(sequence, responseMask, rows, cols) };
}

export function checkShape(name: string, a: ArrayLike<number>, rows: number, cols: number): void {
  if (a.length !== rows * cols) throw new Error(`${name}: expected ${rows}×${cols} = ${rows * cols} values, got ${a.length}`);
}
