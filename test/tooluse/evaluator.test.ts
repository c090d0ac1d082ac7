import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Judge, JudgeRequest, JudgeResult } from '../../src/tooluse/evaluator.ts';
import { actionMatchesToolCall, checkCommunicate, evaluateEpisode, GoldHashCache, judgeTranscript } from '../../src/tooluse/evaluator.ts';
import type { Message, ToolCall } from '../../src/tooluse/messages.ts';
import type { Task } from '../../src/tooluse/tasks.ts';
import { getTask } from '../../src/tooluse/tasks.ts';
import { createKvDomain } from './fake-domain.ts';
import { KV_TASKS } from './kv-tasks.ts';

const domain = createKvDomain();
const paint = getTask(KV_TASKS, 'paint');
const judgeTask = getTask(KV_TASKS, 'judge');

function say(text: string): Message {
  return { role: 'assistant', content: text, toolCalls: null };
}
function calls(...cs: [string, Record<string, unknown>][]): Message {
  return { role: 'assistant', content: null, toolCalls: cs.map(([name, args], i) => ({ id: `c${i}`, name, arguments: args, requestor: 'assistant' })) };
}
function goldTrajectory(task: Task, dropLast = 0): Message[] {
  const actions = task.evaluation_criteria!.actions!.slice(0, task.evaluation_criteria!.actions!.length - dropLast);
  return [say('Hi! How can I help you today?'), ...actions.map((a) => calls([a.name, a.arguments])), { role: 'user', content: '###STOP###', toolCalls: null }];
}

class FakeJudge implements Judge {
  calls = 0;
  constructor(private readonly results: (req: JudgeRequest) => JudgeResult[]) {}
  async judge(req: JudgeRequest): Promise<JudgeResult[]> {
    this.calls++;
    return this.results(req);
  }
}

describe('evaluateEpisode', () => {
  it('gives DB reward 1 to the gold trajectory (failing gold calls ignored) and 0 without its last write', async () => {
    const ok = await evaluateEpisode(domain, paint, { messages: goldTrajectory(paint), terminationReason: 'user_stop' });
    assert.equal(ok.dbCheck!.dbReward, 1);
    assert.equal(ok.rewardBreakdown.DB, 1);
    const short = await evaluateEpisode(domain, paint, { messages: goldTrajectory(paint, 1), terminationReason: 'user_stop' });
    assert.equal(short.dbCheck!.dbReward, 0);
    assert.equal(short.reward, 0);
  });

  it('uses the live DB hash when given instead of replaying writes', async () => {
    const db = domain.freshDb();
    db.values.apple = 'green';
    db.values.cherry = 'dark red';
    const r = await evaluateEpisode(domain, paint, { messages: [], terminationReason: 'agent_stop', finalDbHash: domain.hashDb(db) });
    assert.equal(r.dbCheck!.dbMatch, true);
  });

  it('multiplies DB and COMMUNICATE under the default basis', async () => {
    const base = goldTrajectory(paint);
    const without = await evaluateEpisode(domain, paint, { messages: base, terminationReason: 'user_stop' });
    assert.deepEqual(without.rewardBasis, ['DB', 'COMMUNICATE']);
    assert.deepEqual(without.rewardBreakdown, { DB: 1, COMMUNICATE: 0 });
    assert.equal(without.reward, 0);
    const withSay = [...base.slice(0, -1), say('Done: the total is $1,093.34 and the apple is GREEN now.'), base[base.length - 1]!];
    const full = await evaluateEpisode(domain, paint, { messages: withSay, terminationReason: 'user_stop' });
    assert.equal(full.reward, 1);
    assert.ok(full.communicateChecks!.every((c) => c.met));
    // ACTION is reported but outside the basis.
    assert.equal(full.actionChecks!.length, 4);
    assert.equal(full.rewardBreakdown.ACTION, undefined);
  });

  it('gives 0 for every termination other than agent_stop/user_stop, evaluating nothing', async () => {
    for (const reason of ['max_steps', 'too_many_errors', 'agent_error', 'user_error'] as const) {
      const r = await evaluateEpisode(domain, paint, { messages: goldTrajectory(paint), terminationReason: reason });
      assert.equal(r.reward, 0);
      assert.equal(r.dbCheck, null);
      assert.equal(r.info.note, `Simulation terminated prematurely. Termination reason: ${reason}`);
    }
  });

  it('calls the judge for NL assertions and applies the fewer-results quirk', async () => {
    const msgs = [...goldTrajectory(judgeTask).slice(0, -1), say('The banana is yellow.'), { role: 'user', content: '###STOP###', toolCalls: null } as Message];
    const allMet = new FakeJudge((req) => req.assertions.map((a) => ({ expectedOutcome: a, reasoning: 'ok', metExpectation: true })));
    assert.equal((await evaluateEpisode(domain, judgeTask, { messages: msgs, terminationReason: 'user_stop' }, { judge: allMet })).reward, 1);
    const oneFails = new FakeJudge((req) => req.assertions.map((a, i) => ({ expectedOutcome: a, reasoning: '', metExpectation: i === 0 })));
    const failed = await evaluateEpisode(domain, judgeTask, { messages: msgs, terminationReason: 'user_stop' }, { judge: oneFails });
    assert.equal(failed.reward, 0);
    assert.deepEqual(failed.rewardBreakdown, { DB: 1, NL_ASSERTION: 0 });
    const fewer = new FakeJudge((req) => [{ expectedOutcome: req.assertions[0]!, reasoning: '', metExpectation: true }]);
    assert.equal((await evaluateEpisode(domain, judgeTask, { messages: msgs, terminationReason: 'user_stop' }, { judge: fewer })).reward, 1);
    const seen: string[] = [];
    const recorder = new FakeJudge((req) => (seen.push(req.transcript), []));
    await evaluateEpisode(domain, judgeTask, { messages: msgs, terminationReason: 'user_stop' }, { judge: recorder });
    assert.equal(seen[0], judgeTranscript(msgs));
    assert.match(seen[0]!, /^assistant: Hi! How can I help you today\?\nassistant: None\n/);
    await assert.rejects(evaluateEpisode(domain, judgeTask, { messages: msgs, terminationReason: 'user_stop' }), /need a judge/);
  });

  it('does not call the judge when the task has no assertions', async () => {
    const noNl: Task = { ...judgeTask, evaluation_criteria: { ...judgeTask.evaluation_criteria!, nl_assertions: [] } };
    const j = new FakeJudge(() => []);
    const r = await evaluateEpisode(domain, noNl, { messages: goldTrajectory(noNl), terminationReason: 'agent_stop' }, { judge: j });
    assert.equal(r.reward, 1);
    assert.equal(j.calls, 0);
  });

  it('scores ACTION all-or-nothing when it is in the basis', async () => {
    const actionTask: Task = { ...paint, evaluation_criteria: { ...paint.evaluation_criteria!, reward_basis: ['ACTION', 'ACTION'] } };
    const full = await evaluateEpisode(domain, actionTask, { messages: goldTrajectory(actionTask), terminationReason: 'user_stop' });
    assert.deepEqual([full.reward, full.rewardBasis], [1, ['ACTION']]);
    const partial = await evaluateEpisode(domain, actionTask, { messages: goldTrajectory(actionTask, 1), terminationReason: 'user_stop' });
    assert.equal(partial.reward, 0);
    assert.deepEqual(partial.actionChecks!.map((c) => c.actionMatch), [true, true, true, false]);
    assert.deepEqual(partial.actionChecks!.map((c) => c.toolType), ['read', 'write', 'write', 'write']);
  });

  it('caches gold hashes per task', async () => {
    const cache = new GoldHashCache();
    const a = await evaluateEpisode(domain, paint, { messages: goldTrajectory(paint), terminationReason: 'user_stop' }, { goldHashCache: cache });
    const b = await evaluateEpisode(domain, paint, { messages: goldTrajectory(paint, 1), terminationReason: 'user_stop' }, { goldHashCache: cache });
    assert.equal(a.dbCheck!.goldHash, b.dbCheck!.goldHash);
    assert.equal(b.dbCheck!.dbMatch, false);
  });
});

describe('communicate matcher (tau2.md §13.1.6)', () => {
  const task = (infos: string[]): Task => ({ ...paint, evaluation_criteria: { ...paint.evaluation_criteria!, communicate_info: infos } });

  it('strips commas from the text only and ignores case', () => {
    assert.equal(checkCommunicate(task(['1093.34']), [say('The total is $1,093.34')]).reward, 1);
    assert.equal(checkCommunicate(task(['1,093.34']), [say('The total is $1,093.34')]).reward, 0);
    assert.equal(checkCommunicate(task(['TOTAL IS']), [say('the total is 5')]).reward, 1);
  });

  it('counts only assistant text messages', () => {
    const userSaid: Message = { role: 'user', content: 'The total is 1093.34', toolCalls: null };
    const toolSaid: Message = { role: 'tool', id: 'c0', content: '1093.34', requestor: 'assistant', error: false };
    assert.equal(checkCommunicate(task(['1093.34']), [userSaid, toolSaid]).reward, 0);
    assert.equal(checkCommunicate(task([]), []).reward, 1);
  });
});

describe('action matching (compare_args)', () => {
  const call = (args: Record<string, unknown>): ToolCall => ({ id: 'x', name: 'set_value', arguments: args, requestor: 'assistant' });
  const action = (compare_args: string[] | null, args: Record<string, unknown> = { key: 'a', value: 'b' }) => ({
    action_id: 'a',
    requestor: 'assistant' as const,
    name: 'set_value',
    arguments: args,
    info: null,
    compare_args,
  });

  it('null compares every argument of the call, regardless of key order', () => {
    assert.equal(actionMatchesToolCall(action(null), call({ value: 'b', key: 'a' })), true);
    assert.equal(actionMatchesToolCall(action(null), call({ key: 'a', value: 'c' })), false);
    assert.equal(actionMatchesToolCall(action(null), call({ key: 'a', value: 'b', extra: 1 })), false);
  });

  it('a list restricts the comparison; [] matches by name only', () => {
    assert.equal(actionMatchesToolCall(action(['key']), call({ key: 'a', value: 'zzz' })), true);
    assert.equal(actionMatchesToolCall(action([]), call({})), true);
    assert.equal(actionMatchesToolCall(action([]), { name: 'get_value', arguments: {} }), false);
  });

  it('compares nested JSON strings by meaning and lists in order', () => {
    assert.equal(actionMatchesToolCall(action(null, { key: 'a', value: '{"x": 1, "y": [1, 2]}' }), call({ key: 'a', value: '{"y":[1,2],"x":1}' })), true);
    assert.equal(actionMatchesToolCall(action(null, { key: ['a', 'b'], value: 1 }), call({ key: ['b', 'a'], value: 1 })), false);
  });
});
