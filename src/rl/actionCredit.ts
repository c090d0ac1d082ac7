/**
 * Partial credit from the task's gold actions, a training-only reward (`algorithm.actionCredit`).
 *
 * τ²'s reward is all or nothing: a retail episode earns 1 only when the final database and the answers are right.
 * A policy that solves no task outright gets equal rewards in every GRPO group, so no gradient. The evaluator
 * already checks each gold action against the episode's tool calls (right tool, right compared arguments; the
 * `actionChecks` of its reward info); the share matched says how far an episode got. With weight w, an episode of
 * task reward r and matched share f trains on r + (1 − r) · w · f: a full success still scores 1, above any partial
 * one when w < 1. Validation keeps the task reward.
 */

/** The share of gold actions an episode matched, from its reward info; 0 when there is none (e.g. a truncated episode). */
export function goldActionShare(rewardInfo: unknown): number {
  if (typeof rewardInfo !== 'object' || rewardInfo === null) return 0;
  const checks = (rewardInfo as { actionChecks?: unknown }).actionChecks;
  if (!Array.isArray(checks) || checks.length === 0) return 0;
  return checks.filter((c) => typeof c === 'object' && c !== null && (c as { actionMatch?: unknown }).actionMatch === true).length / checks.length;
}

/** r + (1 − r) · weight · share. */
export function withActionCredit(reward: number, share: number, weight: number): number {
  if (!(weight >= 0 && weight <= 1)) throw new RangeError(`action credit: weight must be in [0, 1], got ${weight}`);
  if (!(share >= 0 && share <= 1)) throw new RangeError(`action credit: share must be in [0, 1], got ${share}`);
  return reward + (1 - reward) * weight * share;
}
