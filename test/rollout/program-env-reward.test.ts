/**
 * An env defined with the environment API scores program rollouts (`rollout.reward: env`): its reward function gets a
 * FinishedEpisode built from the recorded conversation, and `replay` runs the program's tool calls on a fresh state
 * through the env's own tools. The example openai-agent program runs against a scripted engine (a random tiny
 * model calls no tools).
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { z } from 'zod';
import { BpeTokenizer } from '../../src/llm/bpe.ts';
import { createChatFormat } from '../../src/llm/formats.ts';
import { defineEnv } from '../../src/tooluse/api/define.ts';
import { tool } from '../../src/tooluse/api/tool.ts';
import { envRewardFn, toolUseConversation } from '../../src/rollout/program-env-reward.ts';
import { ProgramGroupSampler, type ProgramTask } from '../../src/rollout/program-sampler.ts';
import { startGateway } from '../../src/serve/gateway.ts';
import { scriptedAgentEngine } from './program-fixtures.ts';

type ShopTask = { id: string; prompt: string; total: number };
const PRICES: Record<string, number> = { apple: 0.5, pear: 0.75, bread: 2.25, milk: 1.2, cheese: 4.5, coffee: 6 };
const tasks: ShopTask[] = JSON.parse(readFileSync(join('examples', 'openai-agent', 'tasks.json'), 'utf8'));

const shop = defineEnv<{ looked: string[] }, ShopTask>({
  id: 'shop-test',
  instructions: 'You are a shop assistant.',
  tasks,
  state: () => ({ looked: [] }),
  tools: [
    tool({ name: 'lookup_price', description: 'price', parameters: z.object({ item: z.string() }), run: ({ item }, ctx) => {
      (ctx.state as { looked: string[] }).looked.push(item);
      return { item, price: PRICES[item] };
    } }),
    tool({ name: 'add', description: 'sum', parameters: z.object({ numbers: z.array(z.number()) }), run: ({ numbers }) => ({ sum: numbers.reduce((a, b) => a + b, 0) }) }),
  ],
  reward: async (ep) => {
    const answer = [...ep.messages].reverse().find((m) => m.role === 'assistant' && m.content)?.content ?? '';
    const looked = await ep.replay(ep.toolCalls.filter((c) => c.name === 'lookup_price').map((c) => ({ name: c.name, arguments: c.arguments as Record<string, unknown> })), (s) => s.looked);
    const named = (answer.match(/\d+(?:\.\d+)?/g) ?? []).map(Number).some((n) => Math.abs(n - ep.task.total) < 1e-6);
    return { reward: named ? 1 : 0, info: { looked, toolCalls: ep.toolCalls.length, termination: ep.terminationReason } };
  },
});

describe('an env\'s reward over program rollouts', () => {
  it('converts the recorded conversation to tool-use messages with paired tool calls', () => {
    const { messages, toolCalls } = toolUseConversation([
      { role: 'system', content: 'S' },
      { role: 'user', content: 'ORDER: 1 apple.' },
      { role: 'assistant', content: '', reasoning: 'r', toolCalls: [{ name: 'lookup_price', arguments: { item: 'apple' } }] },
      { role: 'tool', content: '{"item":"apple","price":0.5}', toolCallId: 'call_x' },
      { role: 'assistant', content: '', toolCalls: [{ name: 'add', arguments: { numbers: [0.5] } }] },
      { role: 'tool', content: 'Error: bad numbers' },
      { role: 'assistant', content: 'The total is 0.5.' },
    ]);
    assert.deepEqual(messages.map((m) => m.role), ['system', 'user', 'assistant', 'tool', 'assistant', 'tool', 'assistant']);
    assert.deepEqual(toolCalls, [
      { name: 'lookup_price', arguments: { item: 'apple' }, result: '{"item":"apple","price":0.5}', error: false },
      { name: 'add', arguments: { numbers: [0.5] }, result: 'Error: bad numbers', error: true },
    ]);
    assert.equal((messages[3] as { id: string }).id, (messages[2] as { toolCalls: { id: string }[] }).toolCalls[0]!.id);
    assert.equal((messages[2] as { content: string | null }).content, null);
  });

  it('scores examples/openai-agent rollouts with the env\'s reward (replaying the looked-up items on a fresh state)', async () => {
    const format = createChatFormat('harmony', BpeTokenizer.train('ORDER: lookup_price add numbers total euros\n'.repeat(20), { vocabSize: 400 }));
    const gw = await startGateway({ engine: scriptedAgentEngine(format), format, contextLength: 8192 });
    try {
      const sampler = new ProgramGroupSampler({
        gateway: gw, tasks: new Map(tasks.map((t) => [t.id, t as ProgramTask])), reward: envRewardFn(shop),
        program: { command: process.execPath, args: [join('examples', 'openai-agent', 'agent.mjs')], timeoutMs: 60_000 },
      });
      const out = await sampler.sample({ groups: [{ taskId: 'shop-2', uid: 'g' }], n: 2, seed: 1, temperature: 1, kind: 'train' });
      assert.equal(out.metrics['programs/reward_source/function'], 2, JSON.stringify(out.metrics));
      for (const o of out.outcomes) {
        assert.equal(o.reward, 1);
        assert.deepEqual(o.rewardInfo, { looked: ['bread', 'milk'], toolCalls: 3, termination: 'agent_stop' });
      }
    } finally {
      await gw.close();
    }
  });
});
