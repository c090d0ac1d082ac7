import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Message } from '../../src/tooluse/messages.ts';
import { agentSystemPrompt, fromOpenAIAssistant, toOpenAIMessages } from '../../src/tooluse/openai.ts';
import { Orchestrator } from '../../src/tooluse/orchestrator.ts';
import { getTask } from '../../src/tooluse/tasks.ts';
import { ScriptedUser } from '../../src/tooluse/user.ts';
import { createKvDomain } from './fake-domain.ts';
import { KV_TASKS } from './kv-tasks.ts';

describe('OpenAI chat bridge', () => {
  it('wraps the policy in τ²’s agent system prompt', () => {
    const p = agentSystemPrompt('POLICY');
    assert.match(p, /^<instructions>\nYou are a customer service agent/);
    assert.match(p, /You cannot do both at the same time\./);
    assert.ok(p.endsWith('</instructions>\n<policy>\nPOLICY\n</policy>'));
  });

  it('renders tool calls with JSON-string arguments and tool results with tool_call_id', () => {
    const messages: Message[] = [
      { role: 'assistant', content: 'Hi', toolCalls: null },
      { role: 'user', content: 'Help', toolCalls: null },
      { role: 'assistant', content: null, toolCalls: [{ id: 'c1', name: 'get_value', arguments: { key: 'a' }, requestor: 'assistant' }] },
      { role: 'tool', id: 'c1', content: 'red', requestor: 'assistant', error: false },
    ];
    assert.deepEqual(toOpenAIMessages(messages, 'SYS'), [
      { role: 'system', content: 'SYS' },
      { role: 'assistant', content: 'Hi' },
      { role: 'user', content: 'Help' },
      { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'get_value', arguments: '{"key":"a"}' } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'red' },
    ]);
  });

  it('turns an OpenAI assistant reply into an agent turn the orchestrator runs', async () => {
    const o = new Orchestrator(createKvDomain(), getTask(KV_TASKS, 'paint'), new ScriptedUser(['go']));
    await o.start();
    const turn = fromOpenAIAssistant({ content: null, tool_calls: [{ id: 'x9', type: 'function', function: { name: 'get_value', arguments: '{"key": "banana"}' } }] });
    const out = await o.act(turn);
    assert.deepEqual(out[1], { role: 'tool', id: 'x9', content: 'yellow', requestor: 'assistant', error: false });
    assert.deepEqual(fromOpenAIAssistant({ content: 'hello' }), { content: 'hello', toolCalls: null });
  });
});
