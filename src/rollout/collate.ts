/**
 * Trajectories → `Batch` in verl's padded layout (docs/grpo.md, "The batch"):
 * `prompts [B,P]` left-padded, `responses [B,R]` right-padded, `input_ids = [prompts|responses]`,
 * `attention_mask`, `position_ids = max(cumsum(mask)−1, 0)`, `response_mask` (1 = policy token),
 * `rollout_log_probs` (0 on observations and padding), `token_level_scores` with the episode reward at the last valid
 * response token (index L−1; row start when the response is empty).
 * Non-tensor columns: `uid`, `task_id`, `num_turns`, `reward`, `success`, counts, `termination_reason`, `reward_info`.
 */
import { Batch, leftPad, positionIdsFromMask, rightPad } from './batch.ts';
import type { Trajectory } from './agent-loop.ts';

export interface CollateOptions {
  /** Padding id for prompts and responses. */
  padId: number;
  /** P; default: the longest prompt. A longer prompt is an error. */
  promptLength?: number;
  /** R; default: the longest response. A longer response is an error (the loop keeps responses within R). */
  responseLength?: number;
  /** The GRPO group key of each trajectory (same length). */
  uids: readonly string[];
  /** The sampling temperature, kept in meta for log-prob recomputation. */
  temperature: number;
}

export function collate(trajectories: readonly Trajectory[], o: CollateOptions): Batch {
  const B = trajectories.length;
  if (B === 0) throw new Error('collate: no trajectories');
  if (o.uids.length !== B) throw new Error(`collate: ${B} trajectories but ${o.uids.length} uids`);
  const P = o.promptLength ?? Math.max(...trajectories.map((t) => t.promptIds.length));
  const R = o.responseLength ?? Math.max(1, ...trajectories.map((t) => t.responseIds.length));
  trajectories.forEach((t, i) => {
    if (t.responseMask.length !== t.responseIds.length || t.rolloutLogprobs.length !== t.responseIds.length) {
      throw new Error(`collate: trajectory ${i} has ${t.responseIds.length} response ids, ${t.responseMask.length} mask values and ${t.rolloutLogprobs.length} log-probs`);
    }
  });
  const prompts = leftPad(trajectories.map((t) => t.promptIds), P, o.padId);
  const responses = rightPad(Int32Array, trajectories.map((t) => t.responseIds), R, o.padId);
  const responseMask = rightPad(Int32Array, trajectories.map((t) => t.responseMask), R, 0);
  const responseAttention = rightPad(Int32Array, trajectories.map((t) => t.responseIds.map(() => 1)), R, 0);
  const rolloutLogprobs = rightPad(Float32Array, trajectories.map((t) => t.rolloutLogprobs), R, 0);
  const W = P + R;
  const inputIds = new Int32Array(B * W);
  const attention = new Int32Array(B * W);
  const scores = new Float32Array(B * R);
  for (let i = 0; i < B; i++) {
    inputIds.set(prompts.ids.subarray(i * P, (i + 1) * P), i * W);
    inputIds.set(responses.subarray(i * R, (i + 1) * R), i * W + P);
    attention.set(prompts.mask.subarray(i * P, (i + 1) * P), i * W);
    attention.set(responseAttention.subarray(i * R, (i + 1) * R), i * W + P);
    const last = Math.max(trajectories[i].responseIds.length - 1, 0);
    scores[i * R + last] = trajectories[i].reward;
  }
  return new Batch({
    tensors: {
      prompts: { data: prompts.ids, shape: [B, P] },
      responses: { data: responses, shape: [B, R] },
      input_ids: { data: inputIds, shape: [B, W] },
      attention_mask: { data: attention, shape: [B, W] },
      position_ids: { data: positionIdsFromMask(attention, B, W), shape: [B, W] },
      response_mask: { data: responseMask, shape: [B, R] },
      rollout_log_probs: { data: rolloutLogprobs, shape: [B, R] },
      token_level_scores: { data: scores, shape: [B, R] },
    },
    objects: {
      uid: [...o.uids],
      task_id: trajectories.map((t) => t.taskId),
      num_turns: trajectories.map((t) => t.numTurns),
      user_turns: trajectories.map((t) => t.userTurns),
      reward: trajectories.map((t) => t.reward),
      success: trajectories.map((t) => t.success),
      tool_calls: trajectories.map((t) => t.toolCalls),
      tool_errors: trajectories.map((t) => t.toolErrors),
      parse_errors: trajectories.map((t) => t.parseErrors),
      termination_reason: trajectories.map((t) => t.terminationReason),
      response_length: trajectories.map((t) => t.responseIds.length),
      reward_info: trajectories.map((t) => t.rewardInfo),
    },
    meta: { prompt_length: P, response_length: R, pad_token_id: o.padId, temperature: o.temperature },
  });
}
