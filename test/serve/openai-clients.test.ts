import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ChatClient } from '../../src/llm/openai/chat-client.ts';
import { ConcurrencyLimiter } from '../../src/llm/openai/limiter.ts';
import { EMPTY_REPLY_TEXT, OpenAIAgent, withoutDoneTool } from '../../src/llm/openai/agent.ts';
import { DEFAULT_USER_GUIDELINES, LLMUserSimulator } from '../../src/llm/openai/user-simulator.ts';
import { JUDGE_SYSTEM_PROMPT, LLMJudge, parseJudgeReply } from '../../src/llm/openai/judge.ts';
import { Retrier } from '../../src/llm/openai/retry.ts';
import { loadRetailTaskSet } from '../../src/domains/retail/register.ts';
import { ToolUseEnv } from '../../src/tooluse/env.ts';
import { TicketUser, userEpisodeContext } from '../../src/tooluse/user.ts';
import { agentSystemPrompt } from '../../src/tooluse/openai.ts';
import { TAU2_RETAIL_DIR } from '../helpers/paths.ts';
import { completion, startFakeOpenAI, toolCall } from './fake-openai.ts';

const fastRetry = { baseDelayMs: 1, maxDelayMs: 5, maxRetries: 3 };

describe('OpenAI-compatible clients against a fake server', () => {
  it('retries a 500 and a 429 (with backoff) and counts usage', async () => {
    const fake = await startFakeOpenAI((_req, i) => {
      if (i === 0) return { status: 500, body: { error: { message: 'boom' } } };
      if (i === 1) return { status: 429, body: { error: { message: 'slow down' } }, headers: { 'retry-after': '0' } };
      return { body: completion({ content: 'hello' }) };
    });
    try {
      const delays: number[] = [];
      const client = new ChatClient({ baseUrl: fake.url, model: 'm', apiKey: null, retry: { ...fastRetry, onRetry: (r) => delays.push(r.delayMs) } });
      const r = await client.complete({ messages: [{ role: 'user', content: 'hi' }] });
      assert.equal(r.choices[0]!.message.content, 'hello');
      assert.equal(fake.requests.length, 3);
      assert.equal(delays.length, 2);
      assert.equal(delays[1], 0, 'Retry-After: 0 is honoured');
      assert.deepEqual(client.usage, { requests: 3, promptTokens: 10, completionTokens: 5, retries: 2, failures: 0 });
    } finally {
      await fake.close();
    }
  });

  it('does not retry a 400 and gives up after maxRetries on persistent 503s', async () => {
    const fake = await startFakeOpenAI((req) => (req.body.messages[0].content === 'bad' ? { status: 400, body: { error: { message: 'bad request' } } } : { status: 503, body: { error: { message: 'down' } } }));
    try {
      const client = new ChatClient({ baseUrl: fake.url, model: 'm', retry: fastRetry });
      await assert.rejects(client.complete({ messages: [{ role: 'user', content: 'bad' }] }), /bad request/);
      assert.equal(fake.requests.length, 1);
      await assert.rejects(client.complete({ messages: [{ role: 'user', content: 'x' }] }), /failed: .*down/);
      assert.equal(fake.requests.length, 1 + 4);
      assert.equal(client.usage.failures, 2);
    } finally {
      await fake.close();
    }
  });

  it('times out slow requests and retries them', async () => {
    const fake = await startFakeOpenAI((_r, i) => (i === 0 ? { delayMs: 3000, body: completion({ content: 'late' }) } : { body: completion({ content: 'fast' }) }));
    try {
      const client = new ChatClient({ baseUrl: fake.url, model: 'm', timeoutMs: 600, retry: fastRetry });
      const r = await client.complete({ messages: [{ role: 'user', content: 'x' }] });
      assert.equal(r.choices[0]!.message.content, 'fast');
      assert.ok(client.usage.retries >= 1);
    } finally {
      await fake.close();
    }
  });

  it('a shared limiter caps requests in flight across clients', async () => {
    let inFlight = 0;
    let peak = 0;
    const fake = await startFakeOpenAI(async () => {
      inFlight++;
      peak = Math.max(peak, inFlight);
      await new Promise((r) => setTimeout(r, 30));
      inFlight--;
      return { body: completion({ content: 'ok' }) };
    });
    try {
      const limiter = new ConcurrencyLimiter(2);
      const a = new ChatClient({ baseUrl: fake.url, model: 'a', limiter });
      const b = new ChatClient({ baseUrl: fake.url, model: 'b', limiter });
      await Promise.all([a, b, a, b, a, b].map((c) => c.complete({ messages: [{ role: 'user', content: 'x' }] })));
      assert.equal(peak, 2);
      assert.equal(limiter.peak, 2);
    } finally {
      await fake.close();
    }
  });

  it('jitter is seeded: the same seed gives the same delays', () => {
    const delays = (seed: number) => {
      const r = new Retrier({ seed, baseDelayMs: 100, maxDelayMs: 10_000 });
      return [0, 1, 2, 3].map((a) => r.delayFor(a, new Error('x')));
    };
    assert.deepEqual(delays(7), delays(7));
    assert.notDeepEqual(delays(7), delays(8));
    for (const [i, d] of delays(7).entries()) assert.ok(d >= 0 && d <= 100 * 2 ** i);
  });
});

describe('OpenAIAgent', () => {
  it('sends τ² system prompt, history and tools; turns tool calls, text and broken replies into turns', async () => {
    const { domain, tasks } = loadRetailTaskSet({ dataDir: TAU2_RETAIL_DIR, version: 'v0' });
    const replies = [
      completion({ tool_calls: [toolCall('c1', 'find_user_id_by_email', '{"email": "broken')] }), // malformed JSON
      completion({ tool_calls: [toolCall('c2', 'find_user_id_by_email', { email: 'nobody@example.com' })] }),
      completion({ content: '' }), // empty reply
    ];
    const fake = await startFakeOpenAI((_r, i) => ({ body: replies[i]! }));
    try {
      const env = new ToolUseEnv({ domain, tasks, user: new TicketUser() });
      const agent = new OpenAIAgent(new ChatClient({ baseUrl: fake.url, model: 'agent-m' }));
      const [obs] = await env.reset({ seed: 0, options: { taskId: '1' } });
      assert.ok(obs.text.startsWith('user: '));
      const session = agent.start({ systemPrompt: agentSystemPrompt(domain.policy), tools: withoutDoneTool(env.tools), seed: 5 });
      const results = [];
      for (let i = 0; i < 3; i++) results.push(await env.step(await session.act(env.messages)));
      // Malformed JSON became a tool error, not a crash.
      assert.match(results[0]![0].text, /^tool: Error: Arguments of tool 'find_user_id_by_email' must be a JSON object/);
      assert.equal(results[1]![0].text, 'tool: Error: User not found');
      // The empty reply went to the user as a short text; the ticket user (no question asked) stopped.
      assert.equal(results[2]![4].terminationReason, 'user_stop');
      assert.equal(env.messages.filter((m) => m.role === 'assistant' && m.content === EMPTY_REPLY_TEXT).length, 1);
      assert.deepEqual(agent.stats, { malformedToolCalls: 1, emptyReplies: 1 });
      const first = fake.requests[0]!.body;
      assert.equal(first.model, 'agent-m');
      assert.equal(first.seed, 5);
      assert.equal(first.messages[0].role, 'system');
      assert.match(first.messages[0].content, /^<instructions>/);
      assert.equal(first.messages[1].content, 'Hi! How can I help you today?');
      assert.equal(first.tools.length, 15);
      assert.ok(!first.tools.some((t: any) => t.function.name === 'done'));
      // Later requests replay the tool calls and results in OpenAI format.
      const second = fake.requests[1]!.body.messages;
      const toolMsg = second.find((m: any) => m.role === 'tool');
      assert.equal(toolMsg.tool_call_id, 'c1');
      assert.equal(second.find((m: any) => m.tool_calls)?.tool_calls[0].function.name, 'find_user_id_by_email');
    } finally {
      await fake.close();
    }
  });
});

describe('LLMUserSimulator', () => {
  it('uses guidelines + <scenario>, flips roles, passes the seed, and its stop token ends the episode', async () => {
    const { domain, tasks } = loadRetailTaskSet({ dataDir: TAU2_RETAIL_DIR, version: 'v0' });
    const fake = await startFakeOpenAI((_r, i) => ({ body: completion({ content: i === 0 ? 'Hi, I want to return something.' : i === 1 ? '' : 'Thanks, that is all. ###STOP###' }) }));
    try {
      const user = new LLMUserSimulator(new ChatClient({ baseUrl: fake.url, model: 'user-m' }));
      const env = new ToolUseEnv({ domain, tasks, user });
      const [obs] = await env.reset({ seed: 1, options: { taskId: '3' } });
      assert.equal(obs.text, 'user: Hi, I want to return something.');
      const [, reward, terminated, , info] = await env.step({ content: 'Sure, what is your email?', toolCalls: null });
      assert.equal(terminated, true);
      assert.equal(info.terminationReason, 'user_stop');
      assert.equal(typeof reward, 'number');
      const sys = fake.requests[0]!.body.messages[0];
      const task = tasks.find((t) => t.id === '3')!;
      assert.equal(sys.role, 'system');
      assert.ok(sys.content.startsWith(DEFAULT_USER_GUIDELINES));
      assert.ok(sys.content.endsWith(`<scenario>\n${userEpisodeContext(task, 0).instructions}\n</scenario>`));
      // The agent's greeting arrives as `user`; the simulator's own first message as `assistant`.
      const conv = fake.requests[2]!.body.messages.slice(1);
      assert.deepEqual(conv.map((m: any) => m.role), ['user', 'assistant', 'user']);
      assert.equal(conv[0].content, 'Hi! How can I help you today?');
      assert.equal(conv[2].content, 'Sure, what is your email?');
      assert.equal(typeof fake.requests[0]!.body.seed, 'number');
      assert.equal(fake.requests.length, 3, 'the empty reply was asked again');
    } finally {
      await fake.close();
    }
  });
});

describe('LLMJudge', () => {
  it("follows τ²'s prompt contract and parses the results", async () => {
    const fake = await startFakeOpenAI((_r, i) =>
      i === 0
        ? { body: completion({ content: 'I think it was fine.' }) } // no JSON: asked again
        : { body: completion({ content: '```json\n{"results": [{"expectedOutcome": "A", "reasoning": "said it", "metExpectation": true}, {"expectedOutcome": "B", "reasoning": "no", "metExpectation": false}]}\n```' }) },
    );
    try {
      const judge = new LLMJudge(new ChatClient({ baseUrl: fake.url, model: 'judge-m' }));
      const results = await judge.judge({ transcript: 'assistant: hi\nuser: bye', messages: [], assertions: ["Agent says 'A'", 'B'] });
      assert.deepEqual(results.map((r) => r.metExpectation), [true, false]);
      const msgs = fake.requests[1]!.body.messages;
      assert.equal(msgs[0].content, JUDGE_SYSTEM_PROMPT);
      assert.equal(msgs[1].content, `conversation:\nassistant: hi\nuser: bye\n\nexpectedOutcomes:\n["Agent says 'A'", 'B']`);
    } finally {
      await fake.close();
    }
  });

  it('gives up with a clear error after repeated unusable replies', async () => {
    const fake = await startFakeOpenAI(() => ({ body: completion({ content: '{"results": [{"expectedOutcome": "A"}]}' }) }));
    try {
      const judge = new LLMJudge(new ChatClient({ baseUrl: fake.url, model: 'j' }), { maxAttempts: 2 });
      await assert.rejects(judge.judge({ transcript: '', messages: [], assertions: ['A'] }), /no usable answer in 2 attempts/);
      assert.equal(fake.requests.length, 2);
    } finally {
      await fake.close();
    }
    assert.throws(() => parseJudgeReply('nothing'), /no JSON object/);
  });
});
