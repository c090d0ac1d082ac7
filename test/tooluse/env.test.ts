import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ResetNeeded } from '../../src/gym/errors.ts';
import { ToolUseEnv } from '../../src/tooluse/env.ts';
import type { RewardInfo } from '../../src/tooluse/evaluator.ts';
import { ScriptedUser } from '../../src/tooluse/user.ts';
import { createKvDomain } from './fake-domain.ts';
import { KV_TASKS } from './kv-tasks.ts';

const paintOnly = KV_TASKS.filter((t) => t.id === 'paint');

function makeEnv(options: Partial<ConstructorParameters<typeof ToolUseEnv>[0]> = {}) {
  return new ToolUseEnv({ domain: createKvDomain(), tasks: paintOnly, user: new ScriptedUser(['Paint the apple green, add a dark red cherry.', 'yes']), renderMode: 'ansi', ...options });
}

describe('ToolUseEnv', () => {
  it('refuses step before reset', async () => {
    await assert.rejects(makeEnv().step('hello'), ResetNeeded);
  });

  it('observes the user first message and offers the tools plus done', async () => {
    const env = makeEnv();
    const [obs, info] = await env.reset({ seed: 1 });
    assert.equal(obs.text, 'user: Paint the apple green, add a dark red cherry.');
    assert.deepEqual(obs.messages.map((m) => m.role), ['user']);
    assert.equal(info.taskId, 'paint');
    const names = (info.tools as { function: { name: string } }[]).map((t) => t.function.name);
    assert.equal(names.at(-1), 'done');
    assert.ok(names.includes('set_value'));
    assert.equal(typeof info.policy, 'string');
    assert.match(info.systemPrompt as string, /<policy>\nYou manage a key-value store/);
    assert.ok(env.observationSpace.contains(obs));
  });

  it('runs string tool calls with reward 0 until done(), then returns the evaluated reward', async () => {
    const env = makeEnv();
    await env.reset({ seed: 1 });
    const first = await env.step("set_value(key='apple', value='green')");
    assert.deepEqual([first[0].text, first[1], first[2], first[3]], ['tool: Set apple', 0, false, false]);
    const second = await env.step('{"name": "set_value", "arguments": {"key": "cherry", "value": "dark red"}}');
    assert.deepEqual([second[0].text, second[1], second[2]], ['tool: Set cherry', 0, false]);
    const third = await env.step('The total is $1,093.34 and the apple is green. Anything else?');
    assert.deepEqual([third[0].text, third[1], third[2]], ['user: yes', 0, false]);
    const [, finalReward, term, trunc, info] = await env.step('done()');
    assert.deepEqual([finalReward, term, trunc], [1, true, false]);
    assert.equal(info.terminationReason, 'agent_stop');
    assert.deepEqual((info.rewardInfo as RewardInfo).rewardBreakdown, { DB: 1, COMMUNICATE: 1 });
    await assert.rejects(env.step('hello'), /episode ended \(agent_stop\); call reset\(\)/);
    const transcript = await env.render();
    assert.match(transcript!, /^assistant: Hi! How can I help you today\?\nuser: Paint/);
    assert.match(transcript!, /assistant: set_value\(key='apple', value='green'\)\ntool: Set apple/);
    assert.match(transcript!, /assistant: ###STOP###$/);
  });

  it('scores a wrong end state 0 and ends with user_stop when the user stops', async () => {
    const env = makeEnv({ user: new ScriptedUser(['hi']) });
    await env.reset({ seed: 3 });
    const [obs, reward, terminated, , info] = await env.step({ content: 'Done!' });
    assert.equal(obs.text, 'user: ###STOP###');
    assert.deepEqual([reward, terminated, info.terminationReason], [0, true, 'user_stop']);
  });

  it('truncates at maxSteps with reward 0 (a documented deviation from τ², which terminates)', async () => {
    const env = makeEnv({ maxSteps: 4 });
    await env.reset({ seed: 1 });
    await env.step("set_value(key='apple', value='green')"); // steps 2, 3
    const [, reward, terminated, truncated, info] = await env.step({ toolCalls: [{ name: 'set_value', arguments: { key: 'cherry', value: 'dark red' } }] });
    assert.deepEqual([reward, terminated, truncated, info.terminationReason], [0, false, true, 'max_steps']);
  });

  it('ends with too_many_errors after 10 cumulative tool errors', async () => {
    const env = makeEnv();
    await env.reset({ seed: 1 });
    let last: unknown[] = [];
    for (let i = 0; i < 5; i++) last = await env.step({ toolCalls: [{ name: 'nope', arguments: {} }, { name: 'get_value', arguments: { key: 'x' } }] });
    assert.deepEqual([last[1], last[2], last[3], (last[4] as { terminationReason: string }).terminationReason], [0, true, false, 'too_many_errors']);
  });

  it('picks tasks by options.taskId or by the seed, reproducibly', async () => {
    const judge = { judge: async () => [] };
    await assert.rejects(new ToolUseEnv({ domain: createKvDomain(), tasks: KV_TASKS, user: new ScriptedUser(['hi']) }).reset({ options: { taskId: 'judge' } }), /give the env a judge/);
    const env = new ToolUseEnv({ domain: createKvDomain(), tasks: KV_TASKS, user: new ScriptedUser(['hi']), judge });
    const pick = async (seed: number) => (await env.reset({ seed }))[1].taskId;
    const picks: unknown[] = [];
    for (let s = 0; s < 8; s++) picks.push(await pick(s));
    for (let s = 0; s < 8; s++) assert.equal(await pick(s), picks[s]);
    assert.deepEqual(new Set(picks), new Set(['paint', 'judge']));
    assert.equal((await env.reset({ seed: 0, options: { taskId: 'judge' } }))[1].taskId, 'judge');
    await assert.rejects(env.reset({ options: { taskId: 'zzz' } }), /Unknown task id 'zzz'/);
  });

  it('samples seeded actions from its action space', () => {
    const env = makeEnv();
    env.actionSpace.seed(7);
    const a = Array.from({ length: 5 }, () => env.actionSpace.sample());
    env.actionSpace.seed(7);
    assert.deepEqual(Array.from({ length: 5 }, () => env.actionSpace.sample()), a);
    assert.ok(a.every((x) => env.actionSpace.contains(x)));
    assert.equal(env.actionSpace.contains({}), false);
  });

  it('can observe the whole history', async () => {
    const env = makeEnv({ allMessagesAsObservation: true });
    const [obs] = await env.reset({ seed: 1 });
    assert.deepEqual(obs.messages.map((m) => m.role), ['assistant', 'user']);
  });
});
