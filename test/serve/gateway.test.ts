import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { BpeTokenizer } from '../../src/llm/bpe.ts';
import { createChatFormat } from '../../src/llm/formats.ts';
import { Qwen3Format } from '../../src/llm/qwen3.ts';
import { qwen3Tokenizer } from '../../src/llm/qwen3-tokenizer.ts';
import { startGateway, type GatewayHandle } from '../../src/serve/gateway.ts';
import { assertRowsExact, scriptedAgentEngine } from '../rollout/program-fixtures.ts';
import { api } from './helpers.ts';

const bpe = BpeTokenizer.train('ORDER: 2 apple, 1 pear. {"item":"apple","price":0.5} lookup_price add numbers the total is euros\n'.repeat(20), { vocabSize: 400 });
const PRICES: Record<string, number> = { apple: 0.5, pear: 0.75 };
const tools: OpenAI.ChatCompletionTool[] = [
  { type: 'function', function: { name: 'lookup_price', description: 'price', parameters: { type: 'object', properties: { item: { type: 'string' } }, required: ['item'] } } },
  { type: 'function', function: { name: 'add', description: 'sum', parameters: { type: 'object', properties: { numbers: { type: 'array', items: { type: 'number' } } } } } },
];
type Msg = OpenAI.ChatCompletionMessageParam;

function toolResult(call: OpenAI.ChatCompletionMessageToolCall): string {
  if (call.type !== 'function') throw new Error('function calls only');
  const a = JSON.parse(call.function.arguments);
  return call.function.name === 'add' ? JSON.stringify({ sum: a.numbers.reduce((x: number, y: number) => x + y, 0) }) : JSON.stringify({ item: a.item, price: PRICES[a.item] });
}

/** The example shop agent's loop, in process; `edit` may rewrite the history before call k (k ≥ 1). */
async function shopAgent(client: OpenAI, o: { edit?: (messages: Msg[], call: number) => Msg[]; stream?: boolean } = {}): Promise<string> {
  let messages: Msg[] = [{ role: 'system', content: 'You are a shop assistant.' }, { role: 'user', content: 'ORDER: 2 apple, 1 pear. What do I pay?' }];
  for (let call = 0; call < 6; call++) {
    if (o.edit && call > 0) messages = o.edit(messages, call);
    let message: OpenAI.ChatCompletionMessage;
    if (o.stream) {
      const stream = await client.chat.completions.create({ model: 'any', messages, tools, stream: true, stream_options: { include_usage: true } });
      const acc: any = { role: 'assistant', content: '', tool_calls: [] };
      let reasoning = '';
      let usage = false;
      for await (const chunk of stream) {
        if (chunk.usage) usage = true;
        const d: any = chunk.choices[0]?.delta ?? {};
        if (d.content) acc.content += d.content;
        if (d.reasoning_content) reasoning += d.reasoning_content;
        for (const c of d.tool_calls ?? []) acc.tool_calls[c.index] = { id: c.id, type: 'function', function: { name: c.function.name, arguments: c.function.arguments } };
      }
      assert.ok(usage, 'include_usage sends a usage chunk');
      if (reasoning) acc.reasoning_content = reasoning;
      if (!acc.tool_calls.length) delete acc.tool_calls;
      message = acc;
    } else {
      message = (await client.chat.completions.create({ model: 'any', messages, tools })).choices[0]!.message;
    }
    messages.push(message as Msg);
    if (!message.tool_calls?.length) return message.content ?? '';
    for (const c of message.tool_calls) messages.push({ role: 'tool', tool_call_id: c.id, content: toolResult(c) });
  }
  return '';
}

describe('gateway (harmony, scripted engine that calls tools)', () => {
  const format = createChatFormat('harmony', bpe);
  const engine = scriptedAgentEngine(format);
  let gw: GatewayHandle;
  before(async () => {
    gw = await startGateway({ engine, format, contextLength: 4096, maxResponseTokens: 2048 });
  });
  after(async () => gw.close());
  const client = (baseURL: string) => new OpenAI({ baseURL, apiKey: 'unused', maxRetries: 0 });

  it('records an append-only multi-call conversation as one row on the exact ids', async () => {
    const { id, baseUrl } = gw.openRollout({ taskId: 'shop', seed: 3 });
    const answer = await shopAgent(client(baseUrl));
    assert.equal(answer, 'The total is 1.75 euros.');
    const record = await gw.finishRollout(id);
    assert.equal(record.rows.length, 1);
    assert.deepEqual(record.splits, []);
    assert.equal(record.calls.length, 4);
    assert.deepEqual(record.calls.map((c) => c.toolCalls), [1, 1, 1, 0]);
    const first = format.render({ messages: [{ role: 'system', content: 'You are a shop assistant.' }, { role: 'user', content: 'ORDER: 2 apple, 1 pear. What do I pay?' }], tools: tools as any }, { addGenerationPrompt: true });
    assert.deepEqual(record.rows[0]!.promptIds, first, 'the first prompt is the chat format\'s rendering');
    // Later calls render only their new messages: the tool result and the next generation prompt.
    assert.ok(record.calls.slice(1).every((c) => c.renderedTokens < 80 && c.promptTokens > first.length));
    assertRowsExact(format, engine, record);
    // Seeds derive from the rollout's seed, one per call.
    const seeds = engine.requests.filter((r) => r.session?.startsWith(`${id}#`)).map((r) => r.seed);
    assert.equal(new Set(seeds).size, 4);
  });

  it('streams (SSE) the same completions and records the same row', async () => {
    const a = gw.openRollout({ seed: 5 });
    const b = gw.openRollout({ seed: 5 });
    assert.equal(await shopAgent(client(a.baseUrl), { stream: true }), 'The total is 1.75 euros.');
    await shopAgent(client(b.baseUrl));
    const [ra, rb] = [await gw.finishRollout(a.id), await gw.finishRollout(b.id)];
    assert.equal(ra.rows.length, 1);
    assert.ok(ra.calls.every((c) => c.stream));
    assert.deepEqual(ra.rows[0]!.responseIds, rb.rows[0]!.responseIds, 'streamed and plain rollouts record the same ids');
    assertRowsExact(format, engine, ra);
  });

  it('splits into a new row, with its reason, when the program edits its history, and keeps every row exact', async () => {
    const { id, baseUrl } = gw.openRollout({ seed: 7 });
    const edits = (messages: Msg[], call: number): Msg[] => {
      if (call === 1) return messages.map((m) => (m.role === 'assistant' ? (({ reasoning_content: _r, ...rest }: any) => rest)(m) : m));
      if (call === 2) return [{ role: 'system', content: 'You are a careful shop assistant.' }, ...messages.slice(1)];
      if (call === 3) return messages.map((m, i) => (m.role === 'tool' && i === 3 ? { ...m, content: '{"item":"apple","price":0.5} (cached)' } : m));
      return messages;
    };
    assert.equal(await shopAgent(client(baseUrl), { edit: edits }), 'The total is 1.75 euros.');
    const record = await gw.finishRollout(id);
    assert.deepEqual(record.splits.map((s) => s.reason), ['reasoning_removed', 'system_changed', 'history_edited']);
    assert.equal(record.rows.length, 4);
    assert.deepEqual(record.rows.map((r) => r.splitReason), [null, 'reasoning_removed', 'system_changed', 'history_edited']);
    assertRowsExact(format, engine, record);
    // A split row starts from the full rendering of the program's messages.
    const third = engine.requests.filter((r) => r.session === `${id}#2`)[0]!;
    assert.equal(record.rows[2]!.promptIds.length, third.tokens.length);
  });

  it('names retries, changed tools, truncated history and unrelated conversations', async () => {
    const { id, baseUrl } = gw.openRollout({ seed: 9 });
    const c = client(baseUrl);
    const base: Msg[] = [{ role: 'system', content: 'S' }, { role: 'user', content: 'ORDER: 1 apple. What do I pay?' }];
    const m1 = (await c.chat.completions.create({ model: 'm', messages: base, tools })).choices[0]!.message;
    await c.chat.completions.create({ model: 'm', messages: base, tools }); // the same request again: a retry
    const h = [...base, m1 as Msg, { role: 'tool', tool_call_id: m1.tool_calls![0]!.id, content: '{"item":"apple","price":0.5}' } as Msg];
    await c.chat.completions.create({ model: 'm', messages: h, tools: tools.slice(0, 1) }); // fewer tools
    await c.chat.completions.create({ model: 'm', messages: [base[0]!], tools }); // history cut
    await c.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'CITY: Oslo. Summarise.' }], tools }); // another conversation
    await c.chat.completions.create({ model: 'm', messages: h, tools }); // continues the first row
    const record = await gw.finishRollout(id);
    assert.deepEqual(record.splits.map((s) => s.reason), ['branched', 'tools_changed', 'history_truncated', 'new_conversation']);
    // The retry sampled the same reply (scripted), so both first rows match; the newest wins the tie.
    assert.equal(record.calls.at(-1)!.row, 1, 'the last call extends a row instead of splitting');
    assert.deepEqual(record.rows.map((r) => r.calls), [1, 2, 1, 1, 1]);
    assertRowsExact(format, engine, record);
  });

  it('names parallel calls from one history and rewritten model replies', async () => {
    // An engine that takes 100 ms, so two calls are in flight together.
    const slow = { generate: async (r: Parameters<typeof engine.generate>[0]) => (await new Promise((ok) => setTimeout(ok, 100)), engine.generate(r)) };
    const g = await startGateway({ engine: slow, format, contextLength: 4096 });
    try {
      const { id, baseUrl } = g.openRollout({ seed: 1 });
      const c = client(baseUrl);
      const base: Msg[] = [{ role: 'system', content: 'S' }, { role: 'user', content: 'ORDER: 1 apple. What do I pay?' }];
      const m1 = (await c.chat.completions.create({ model: 'm', messages: base, tools })).choices[0]!.message;
      const h = [...base, m1 as Msg, { role: 'tool', tool_call_id: m1.tool_calls![0]!.id, content: '{"item":"apple","price":0.5}' } as Msg];
      const [a] = await Promise.all([c.chat.completions.create({ model: 'm', messages: h, tools }), c.chat.completions.create({ model: 'm', messages: h, tools })]);
      // The model's tool call rewritten by the program (other arguments) before going on.
      const edited = { ...m1, tool_calls: [{ ...m1.tool_calls![0]!, function: { name: 'lookup_price', arguments: '{"item":"APPLE"}' } }] } as Msg;
      await c.chat.completions.create({ model: 'm', messages: [...base, edited, h[3]!, a.choices[0]!.message as Msg, { role: 'tool', tool_call_id: 'x', content: '{"sum":0.5}' }], tools });
      const record = await g.finishRollout(id);
      assert.deepEqual(record.splits.map((s) => s.reason), ['parallel_call', 'assistant_rewritten']);
      assert.equal(record.rows.length, 3);
    } finally {
      await g.close();
    }
  });

  it('answers bad input with clear errors and leaves other rollouts untouched', async () => {
    const good = gw.openRollout({ seed: 1 });
    const bad = gw.openRollout({ seed: 2 });
    const path = (id: string, p: string) => `/rollouts/${id}/${p}`;
    const msgs = [{ role: 'user', content: 'ORDER: 1 pear. What do I pay?' }];
    const expect = async (r: Promise<{ status: number; body: any }>, status: number, code: string) => {
      const got = await r;
      assert.equal(got.status, status, JSON.stringify(got.body));
      assert.equal(got.body.error.code, code);
      assert.ok(got.body.error.message.length > 10);
    };
    await expect(api(gw.url, 'POST', path(bad.id, 'v1/chat/completions'), { messages: [] }), 400, 'invalid_body');
    await expect(api(gw.url, 'POST', path(bad.id, 'v1/chat/completions'), '{not json'), 400, 'malformed_json');
    await expect(api(gw.url, 'POST', path(bad.id, 'v1/chat/completions'), { messages: msgs, n: 2 }), 400, 'invalid_body');
    await expect(api(gw.url, 'POST', path(bad.id, 'v1/chat/completions'), { messages: msgs, stop: ['\n'] }), 400, 'unsupported_parameter');
    await expect(api(gw.url, 'POST', path(bad.id, 'v1/chat/completions'), { messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'x', type: 'function', function: { name: 'f', arguments: '{oops' } }] }] }), 400, 'invalid_tool_arguments');
    await expect(api(gw.url, 'POST', path(bad.id, 'v1/chat/completions'), { messages: [{ role: 'user', content: 'word '.repeat(5000) }] }), 400, 'context_length_exceeded');
    await expect(api(gw.url, 'POST', path('nope', 'v1/chat/completions'), { messages: msgs }), 404, 'unknown_rollout');
    await expect(api(gw.url, 'POST', path(bad.id, 'reward'), { reward: 'high' }), 400, 'invalid_body');
    assert.equal((await api(gw.url, 'POST', path(bad.id, 'reward'), { reward: 0.5 })).status, 200);
    await expect(api(gw.url, 'POST', path(bad.id, 'reward'), { reward: 1 }), 409, 'reward_already_posted');
    await expect(api(gw.url, 'GET', path(bad.id, 'v1/chat/completions')), 405, 'method_not_allowed');
    // The other rollout is unaffected.
    const r = await api(gw.url, 'POST', path(good.id, 'v1/chat/completions'), { messages: msgs, tools });
    assert.equal(r.status, 200);
    assert.equal(r.body.choices[0].finish_reason, 'tool_calls');
    const rb = await gw.finishRollout(bad.id);
    assert.equal(rb.rows.length, 0);
    assert.deepEqual(rb.reward, { value: 0.5 });
    assert.equal(rb.truncated, 'context_length');
    assert.deepEqual(rb.errors.map((e) => e.code), ['invalid_body', 'malformed_json', 'invalid_body', 'unsupported_parameter', 'invalid_tool_arguments', 'context_length_exceeded', 'invalid_body', 'reward_already_posted']);
    await expect(api(gw.url, 'POST', path(bad.id, 'v1/chat/completions'), { messages: msgs }), 409, 'rollout_ended');
    await expect(api(gw.url, 'POST', path(bad.id, 'reward'), { reward: 1 }), 409, 'rollout_ended');
    assert.equal((await gw.finishRollout(good.id)).rows.length, 1);
  });

  it('refuses a conversation past the response budget and marks the rollout truncated', async () => {
    const small = await startGateway({ engine, format, contextLength: 4096, maxResponseTokens: 100 });
    try {
      const { id, baseUrl } = small.openRollout({ seed: 1 });
      await assert.rejects(shopAgent(client(baseUrl)), /response budget/);
      const record = await small.finishRollout(id);
      assert.equal(record.truncated, 'max_response_tokens');
      assert.equal(record.rows.length, 1);
      assert.ok(record.rows[0]!.responseIds.length <= 100);
    } finally {
      await small.close();
    }
  });

  it('opens, inspects and finishes rollouts over HTTP', async () => {
    const o = await api(gw.url, 'POST', '/rollouts', { task_id: 't1', seed: 4 });
    assert.equal(o.status, 200);
    assert.match(o.body.base_url, /\/rollouts\/[^/]+\/v1$/);
    await shopAgent(client(o.body.base_url));
    const s = await api(gw.url, 'GET', `/rollouts/${o.body.rollout_id}`);
    assert.equal(s.body.calls, 4);
    assert.equal((await api(gw.url, 'GET', `/rollouts/${o.body.rollout_id}/v1/models`)).body.data.length, 1);
    const f = await api(gw.url, 'POST', `/rollouts/${o.body.rollout_id}/finish`);
    assert.equal(f.status, 200);
    assert.equal(f.body.rows.length, 1);
    assert.equal(f.body.task_id ?? f.body.taskId, 't1');
    assert.equal((await api(gw.url, 'POST', '/rollouts', { bogus: 1 })).status, 400);
  });
});

describe('gateway (qwen3: hermes tool calls, <think> blocks)', () => {
  const format = new Qwen3Format(qwen3Tokenizer());
  const engine = scriptedAgentEngine(format);
  let gw: GatewayHandle;
  before(async () => {
    gw = await startGateway({ engine, format, contextLength: 8192 });
  });
  after(async () => gw.close());

  it('parses tool calls and reasoning, continues one row, and splits when the think block is dropped', async () => {
    const a = gw.openRollout({ seed: 1 });
    const b = gw.openRollout({ seed: 1 });
    const ca = new OpenAI({ baseURL: a.baseUrl, apiKey: 'x', maxRetries: 0 });
    const cb = new OpenAI({ baseURL: b.baseUrl, apiKey: 'x', maxRetries: 0 });
    assert.equal(await shopAgent(ca), 'The total is 1.75 euros.');
    // The Qwen3 template's own behaviour: earlier reasoning is not sent back (NVIDIA-NeMo/RL#2821).
    const dropThink = (messages: Msg[]) => messages.map((m) => (m.role === 'assistant' ? (({ reasoning_content: _r, ...rest }: any) => rest)(m) : m));
    assert.equal(await shopAgent(cb, { edit: dropThink }), 'The total is 1.75 euros.');
    const [ra, rb] = [await gw.finishRollout(a.id), await gw.finishRollout(b.id)];
    assert.equal(ra.rows.length, 1);
    assert.deepEqual(rb.splits.map((s) => s.reason), ['reasoning_removed', 'reasoning_removed']);
    assertRowsExact(format, engine, ra);
    assertRowsExact(format, engine, rb);
  });
});
