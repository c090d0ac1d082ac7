/**
 * `communicate-fallback`: a deterministic stand-in for τ²'s LLM judge, for runs without a judge model. It does not
 * read the assertions: every assertion of a task is marked met exactly when the task's `communicate_info` strings
 * were all said (τ²'s communicate rule; met when the task has none). Scores graded this way are NOT comparable to
 * τ² scores, and eval results say so.
 */
import type { Judge, JudgeRequest, JudgeResult } from './evaluator.ts';
import { checkCommunicate } from './evaluator.ts';
import type { Task } from './tasks.ts';

export const FALLBACK_JUDGE_NAME = 'communicate-fallback';

export class CommunicateFallbackJudge implements Judge {
  private readonly byAssertions = new Map<string, Task>();
  private readonly byArray = new WeakMap<readonly string[], Task>();

  constructor(tasks: readonly Task[]) {
    for (const t of tasks) {
      const list = t.evaluation_criteria?.nl_assertions;
      if (!list?.length) continue;
      this.byArray.set(list, t);
      this.byAssertions.set(JSON.stringify(list), t);
    }
  }

  async judge(request: JudgeRequest): Promise<JudgeResult[]> {
    const task = this.byArray.get(request.assertions) ?? this.byAssertions.get(JSON.stringify(request.assertions));
    if (!task) throw new Error('communicate-fallback judge: these NL assertions belong to no task it was given');
    const { reward, checks } = checkCommunicate(task, request.messages);
    const met = reward === 1;
    const why = checks.length
      ? `${FALLBACK_JUDGE_NAME}: communicate_info ${met ? 'all said' : `missing ${checks.filter((c) => !c.met).map((c) => JSON.stringify(c.info)).join(', ')}`} (the assertion itself was not judged)`
      : `${FALLBACK_JUDGE_NAME}: the task has no communicate_info, so the assertion is counted as met without judging`;
    return request.assertions.map((a) => ({ expectedOutcome: a, reasoning: why, metExpectation: met }));
  }
}
