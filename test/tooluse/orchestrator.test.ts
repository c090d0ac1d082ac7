import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { evaluateEpisode } from '../../src/tooluse/evaluator.ts';
import { GREETING, Orchestrator } from '../../src/tooluse/orchestrator.ts';
import { getTask } from '../../src/tooluse/tasks.ts';
import type { UserViewTurn } from '../../src/tooluse/user.ts';
import { ScriptedUser, TicketUser, isUserStop, userView } from '../../src/tooluse/user.ts';
import { createKvDomain } from './fake-domain.ts';
import { KV_TASKS } from './kv-tasks.ts';

const domain = createKvDomain();
const paint = getTask(KV_TASKS, 'paint');

function orchestrator(script: string[] = ['Please paint the apple green.'], options = {}) {
  return new Orchestrator(domain, paint, new ScriptedUser(script), options);
}

describe('Orchestrator', () => {
  it('opens with the fixed greeting and the user first message', async () => {
    const o = orchestrator();
    const first = await o.start();
    assert.deepEqual(first.map((m) => [m.role, m.content]), [
      ['assistant', GREETING],
      ['user', 'Please paint the apple green.'],
    ]);
    assert.equal(o.turn, 'agent');
    assert.equal(o.stepCount, 1);
  });

  it('executes tool calls in order and returns their results before the agent acts again', async () => {
    const o = orchestrator();
    await o.start();
    const out = await o.act({ toolCalls: [{ name: 'set_value', arguments: { key: 'apple', value: 'green' } }, { name: 'get_value', arguments: '{"key": "apple"}' }] });
    assert.deepEqual(out.map((m) => m.role), ['assistant', 'tool', 'tool']);
    assert.deepEqual(out.slice(1).map((m) => m.content), ['Set apple', 'green']);
    assert.equal(o.db.values.apple, 'green');
    assert.equal(o.turn, 'agent');
    assert.equal(o.stepCount, 3); // user, agent, env
  });

  it('routes text to the user and ends with user_stop when the user emits a stop token', async () => {
    const o = orchestrator(['hello']);
    await o.start();
    const out = await o.act({ content: 'All done, anything else?' });
    assert.deepEqual(out.map((m) => [m.role, m.content]), [
      ['assistant', 'All done, anything else?'],
      ['user', '###STOP###'],
    ]);
    assert.equal(o.terminationReason, 'user_stop');
    await assert.rejects(o.act({ content: 'x' }), /episode is over \(user_stop\)/);
  });

  it('treats the stop token in agent text as agent_stop', async () => {
    const o = orchestrator();
    await o.start();
    await o.act({ content: '###STOP###' });
    assert.equal(o.terminationReason, 'agent_stop');
  });

  it('counts tool errors cumulatively and stops at 10 with too_many_errors', async () => {
    const o = orchestrator(['a', 'b', 'c', 'd', 'e', 'f']);
    await o.start();
    for (let i = 0; i < 4; i++) {
      await o.act({ toolCalls: [{ name: 'nope', arguments: {} }, { name: 'get_value', arguments: { key: 'apple' } }, { name: 'get_value', arguments: {} }] });
      assert.equal(o.done, false);
      await o.act({ content: 'still there?' }); // successes in between do not reset the counter
    }
    assert.equal(o.numErrors, 8);
    await o.act({ toolCalls: [{ name: 'nope', arguments: {} }, { name: 'nope', arguments: {} }] });
    assert.equal(o.terminationReason, 'too_many_errors');
    const r = await evaluateEpisode(domain, paint, { messages: o.messages, terminationReason: o.terminationReason!, finalDbHash: o.finalDbHash() });
    assert.equal(r.reward, 0);
  });

  it('ends with max_steps counting user, agent and tool steps, even over a stop on the last step', async () => {
    const o = orchestrator(['a', 'b', 'c'], { maxSteps: 5 });
    await o.start(); // 1
    await o.act({ toolCalls: [{ name: 'get_value', arguments: { key: 'apple' } }] }); // 2, 3
    assert.equal(o.done, false);
    await o.act({ content: '###STOP###' }); // 4: agent stop
    assert.equal(o.terminationReason, 'agent_stop');
    const p = orchestrator(['a', 'b'], { maxSteps: 4 });
    await p.start();
    await p.act({ toolCalls: [{ name: 'get_value', arguments: { key: 'apple' } }] });
    await p.act({ content: '###STOP###' });
    assert.equal(p.terminationReason, 'max_steps');
  });

  it('rejects an empty agent turn, or scores it as agent_error under the communication protocol', async () => {
    const o = orchestrator();
    await o.start();
    await assert.rejects(o.act({}), /needs text or at least one tool call/);
    const strict = orchestrator(['a'], { enforceCommunicationProtocol: true });
    await strict.start();
    await strict.act({ content: 'hi', toolCalls: [{ name: 'get_value', arguments: { key: 'apple' } }] });
    assert.equal(strict.terminationReason, 'agent_error');
  });

  it('routes a message with text and tool calls to the tools (default protocol)', async () => {
    const o = orchestrator();
    await o.start();
    const out = await o.act({ content: 'Let me check.', toolCalls: [{ name: 'get_value', arguments: { key: 'banana' } }] });
    assert.deepEqual(out.map((m) => m.role), ['assistant', 'tool']);
    assert.equal(o.turn, 'agent');
  });

  it('reports non-object arguments as a tool error and logs empty arguments', async () => {
    const o = orchestrator();
    await o.start();
    const out = await o.act({ toolCalls: [{ name: 'get_value', arguments: [1] }] });
    assert.match(out[1]!.content!, /^Error: Arguments of tool 'get_value' must be a JSON object/);
    assert.equal(o.numErrors, 1);
  });
});

describe('user side', () => {
  it('detects stop tokens anywhere in the text', () => {
    assert.equal(isUserStop('thanks ###STOP###'), true);
    assert.equal(isUserStop('###TRANSFER###'), true);
    assert.equal(isUserStop('x ###OUT-OF-SCOPE### y'), true);
    assert.equal(isUserStop('STOP'), false);
  });

  it('sees the conversation with roles flipped and without tool traffic', () => {
    const view = userView([
      { role: 'assistant', content: 'Hi', toolCalls: null },
      { role: 'user', content: 'Help', toolCalls: null },
      { role: 'assistant', content: null, toolCalls: [{ id: '1', name: 'x', arguments: {}, requestor: 'assistant' }] },
      { role: 'tool', id: '1', content: 'secret', requestor: 'assistant', error: false },
      { role: 'assistant', content: 'Done', toolCalls: null },
    ]);
    assert.deepEqual(view, [
      { role: 'user', content: 'Hi' },
      { role: 'assistant', content: 'Help' },
      { role: 'user', content: 'Done' },
    ]);
  });

  it('TicketUser states the request, confirms questions, and stops', async () => {
    const session = new TicketUser({ maxConfirmations: 1 }).start({ task: paint, instructions: '', seed: 0 });
    const conv: UserViewTurn[] = [{ role: 'user', content: 'Hi! How can I help you today?' }];
    const opening = await session.respond(conv);
    assert.equal(opening, 'You want the apple to be green and the cherry to exist as dark red. You are the store owner.');
    conv.push({ role: 'assistant', content: opening }, { role: 'user', content: 'Shall I proceed (yes/no)?' });
    assert.equal(await session.respond(conv), 'Yes, please go ahead.');
    conv.push({ role: 'assistant', content: 'Yes' }, { role: 'user', content: 'Another question?' });
    assert.equal(await session.respond(conv), '###STOP###');
    conv.push({ role: 'user', content: 'YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON.' });
    assert.equal(await session.respond(conv), '###TRANSFER###');
  });
});
