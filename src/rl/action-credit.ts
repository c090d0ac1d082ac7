/**
 * Partial credit from the task's gold actions, a training-only reward (`algorithm.actionCredit`).
 *
 * τ²'s reward is all or nothing: a retail episode earns 1 only when the final database and the answers are right.
 * A policy that solves no task outright gets equal rewards in every GRPO group, so no gradient. The evaluator
 * already checks each gold action against the episode's tool calls (right tool, right compared arguments; the
 * `actionChecks` of its reward info); the share matched says how far an episode got. With weight w, an episode of
 * task reward r and matched share f trains on r + (1 − r) · w · f: a full success still scores 1, above any partial
 * one when w < 1. Validation keeps the task reward. With `actions: 'writes'` only the gold writes count: reads (the
 * identity lookups every episode starts with) earn nothing, so a policy cannot settle on the lookups alone.
 */

import type { Trajectory } from '../rollout/agent-loop.ts';
import type { RewardInfo } from '../tooluse/evaluator.ts';

/**
 * Which gold actions earn credit: all of them; only the writes (reads such as the identity lookups earn none); or
 * the writes graded, a matched write 1 and a call of the right write tool with other arguments ½ (the right action
 * for the request, not yet the right ids).
 */
export type CreditedActions = 'all' | 'writes' | 'writes-graded';

/**
 * The share of gold actions an episode matched, from the evaluator's action checks; 0 when there are none (an
 * episode that ended prematurely, an env without gold actions, or a task without gold writes when only writes count).
 */
export function goldActionShare(rewardInfo: Pick<RewardInfo, 'actionChecks'> | null, actions: CreditedActions = 'all', calledTools: ReadonlySet<string> = new Set()): number {
  const checks = (rewardInfo?.actionChecks ?? []).filter((c) => actions === 'all' || c.toolType === 'write');
  if (checks.length === 0) return 0;
  let credit = 0;
  for (const c of checks) {
    if (c.actionMatch) credit += 1;
    else if (actions === 'writes-graded' && calledTools.has(c.action.name)) credit += 0.5;
  }
  return credit / checks.length;
}

/** The gold-action shares of a batch of episodes, for the `reward/gold_*` metrics of a run with partial credit. */
export function goldActionMetrics(episodes: readonly Pick<Trajectory, 'rewardInfo' | 'messages'>[]): Record<string, number> {
  const mean = (f: (e: Pick<Trajectory, 'rewardInfo' | 'messages'>) => number) => episodes.reduce((a, e) => a + f(e), 0) / Math.max(episodes.length, 1);
  return {
    'reward/gold_action_share': mean((e) => goldActionShare(e.rewardInfo)),
    'reward/gold_write_share': mean((e) => goldActionShare(e.rewardInfo, 'writes')),
    'reward/gold_write_graded': mean((e) => goldActionShare(e.rewardInfo, 'writes-graded', calledToolNames(e.messages))),
  };
}

/** Names of the tools the agent called in an episode's messages. */
export function calledToolNames(messages: readonly { role: string; toolCalls?: readonly { name: string }[] | null }[]): Set<string> {
  const names = new Set<string>();
  for (const m of messages) if (m.role === 'assistant') for (const c of m.toolCalls ?? []) names.add(c.name);
  return names;
}

/** r + (1 − r) · weight · share. */
export function withActionCredit(reward: number, share: number, weight: number): number {
  if (!(weight >= 0 && weight <= 1)) throw new RangeError(`action credit: weight must be in [0, 1], got ${weight}`);
  if (!(share >= 0 && share <= 1)) throw new RangeError(`action credit: share must be in [0, 1], got ${share}`);
  return reward + (1 - reward) * weight * share;
}
