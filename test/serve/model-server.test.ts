import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import { BpeTokenizer } from '../../src/llm/bpe.ts';
import { createChatFormat } from '../../src/llm/formats.ts';
import { OpenAIAgent } from '../../src/llm/openai/agent.ts';
import { ChatClient } from '../../src/llm/openai/chat-client.ts';
import { presetConfig } from '../../src/model/config.ts';
import { loadModel, saveModel } from '../../src/model/checkpoint/model-io.ts';
import { GptOssModel } from '../../src/model/model.ts';
import { ScriptedEngine } from '../../src/rollout/inference.ts';
import { createModelEngine } from '../../src/rollout/model-engine.ts';
import { OpenAICompatibleEngine } from '../../src/rollout/openai-engine.ts';
import { serveCheckpoint } from '../../src/serve/model-serve.ts';
import { startModelServer, type ModelServerHandle } from '../../src/serve/model-server.ts';
import { api } from './helpers.ts';

const corpus = 'please find the order of the user and cancel it {"name": "x", "arguments": {"order_id": "#W1"}} thanks\n'.repeat(30);
const bpe = BpeTokenizer.train(corpus, { vocabSize: 320 });

describe('model server over a real tiny checkpoint (/v1/completions)', () => {
  let dir: string;
  let h: ModelServerHandle;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'longrun-model-'));
    const model = new GptOssModel(presetConfig('tiny-1m', { vocab_size: bpe.vocabSize }), { seed: 5, grads: false });
    saveModel(join(dir, 'ckpt'), model);
    model.dispose();
    bpe.save(join(dir, 'ckpt', 'tokenizer.json'));
    h = await serveCheckpoint({ checkpoint: join(dir, 'ckpt'), port: 0, modelName: 'tiny', token: 'mtok' });
  });
  after(async () => {
    await h.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('returns the same token ids and log-probs as the in-process engine, also through the rollout OpenAI engine', async () => {
    const prompt = bpe.encode('please find the order');
    const request = { tokens: prompt, maxNewTokens: 6, temperature: 1, seed: 11, stop: [] as number[] };
    const local = loadModel(join(dir, 'ckpt'));
    const engine = createModelEngine(local);
    try {
      const [expected] = await engine.generate([request]);
      const r = await api(h.url, 'POST', '/v1/completions', { model: 'tiny', prompt, max_tokens: 6, temperature: 1, seed: 11, stop_token_ids: [], logprobs: 1 }, { authorization: 'Bearer mtok' });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      const c = r.body.choices[0];
      assert.deepEqual(c.token_ids, expected!.tokens);
      assert.deepEqual(c.logprobs.tokens, expected!.tokens.map((t) => `token_id:${t}`));
      for (const [i, lp] of c.logprobs.token_logprobs.entries()) assert.ok(Math.abs(lp - expected!.logprobs[i]!) < 1e-6);
      assert.equal(c.finish_reason, 'length');
      assert.equal(c.text, bpe.decode(expected!.tokens));
      assert.deepEqual(r.body.usage, { prompt_tokens: prompt.length, completion_tokens: 6, total_tokens: prompt.length + 6 });
      // The rollout layer's client for vLLM-style servers reads our replies unchanged.
      const remote = new OpenAICompatibleEngine({ baseUrl: h.url, model: 'tiny', apiKey: 'mtok', maxRetries: 0 });
      const [viaHttp] = await remote.generate([request]);
      assert.deepEqual(viaHttp!.tokens, expected!.tokens);
      assert.equal(viaHttp!.finishReason, expected!.finishReason);
    } finally {
      await engine.close?.();
      local.dispose();
    }
  });

  it('serves text prompts through the official openai client, and lists the model', async () => {
    const client = new OpenAI({ baseURL: `${h.url}/v1`, apiKey: 'mtok', maxRetries: 0 });
    const models = await client.models.list();
    assert.equal(models.data[0]!.id, 'tiny');
    const c = await client.completions.create({ model: 'tiny', prompt: 'please cancel', max_tokens: 4, temperature: 0, seed: 1 });
    assert.equal(typeof c.choices[0]!.text, 'string');
    assert.equal((c.choices[0] as unknown as { token_ids: number[] }).token_ids.length, 4);
  });

  it('refuses what it does not support with OpenAI-shaped 4xx errors', async () => {
    const auth = { authorization: 'Bearer mtok' };
    const cases: [unknown, number, RegExp][] = [
      [{ prompt: [1, 2], n: 2 }, 400, /n > 1 is not supported/],
      [{ prompt: [1, 2], stream: true }, 400, /streaming is not supported/],
      [{ prompt: [1, 2], stop: ['\n'] }, 400, /stop_token_ids/],
      [{ prompt: [1, 2], model: 'gpt-4' }, 404, /does not exist/],
      [{ prompt: [] }, 400, /prompt/],
      [{ prompt: [1, 2], max_tokens: 10_000_000 }, 400, /context/],
      [{ prompt: [999_999] }, 400, /vocabulary/],
    ];
    for (const [body, status, re] of cases) {
      const r = await api(h.url, 'POST', '/v1/completions', body, auth);
      assert.equal(r.status, status, JSON.stringify(body));
      assert.match(r.body.error.message, re);
      assert.equal(r.body.error.type, 'invalid_request_error');
    }
    assert.equal((await api(h.url, 'POST', '/v1/completions', { prompt: [1] })).status, 401);
    assert.equal((await api(h.url, 'POST', '/v1/completions', '{bad', auth)).status, 400);
    assert.equal((await api(h.url, 'POST', '/v1/chat/completions', { messages: [{ role: 'user', content: 'hi' }] }, auth)).status, 404, 'no chat format configured');
    assert.equal((await api(h.url, 'GET', '/health')).status, 200);
  });
});

describe('model server chat completions (harmony, scripted engine)', () => {
  const format = createChatFormat('harmony', bpe);
  const tools = [{ type: 'function' as const, function: { name: 'cancel_order', description: 'Cancel an order', parameters: { type: 'object', properties: { order_id: { type: 'string' } }, required: ['order_id'] } } }];
  let replies: number[][] = [];
  const engine = new ScriptedEngine((_r, i) => ({ tokens: replies[i]!, logprobs: replies[i]!.map(() => -0.5) }));
  let h: ModelServerHandle;
  before(async () => {
    h = await startModelServer({ engine, modelName: 'm', contextLength: 4096, tokenizer: bpe, chatFormat: format, port: 0 });
  });
  after(async () => h.close());

  it('renders messages + tools with the chat format and parses tool calls, text and garbage back', async () => {
    replies = [
      format.renderCompletion({ role: 'assistant', content: '', toolCalls: [{ name: 'cancel_order', arguments: { order_id: '#W1' } }] }),
      format.renderCompletion({ role: 'assistant', content: 'Your order is cancelled.' }),
      bpe.encode('thanks thanks'),
    ];
    const messages = [
      { role: 'system', content: 'You are an agent.' },
      { role: 'user', content: 'please cancel #W1' },
    ];
    const r1 = await api(h.url, 'POST', '/v1/chat/completions', { model: 'm', messages, tools, logprobs: true });
    assert.equal(r1.status, 200, JSON.stringify(r1.body));
    const c1 = r1.body.choices[0];
    assert.equal(c1.finish_reason, 'tool_calls');
    assert.equal(c1.message.tool_calls[0].function.name, 'cancel_order');
    assert.deepEqual(JSON.parse(c1.message.tool_calls[0].function.arguments), { order_id: '#W1' });
    assert.deepEqual(c1.token_ids, replies[0]);
    assert.equal(c1.logprobs.content.length, replies[0]!.length);
    assert.deepEqual(r1.body.prompt_token_ids, format.render({ messages: [{ role: 'system', content: 'You are an agent.' }, { role: 'user', content: 'please cancel #W1' }], tools }, { addGenerationPrompt: true }));
    assert.deepEqual(engine.requests[0]!.stop, [...format.stopTokenIds]);

    // History with the tool call and its result renders; a text reply comes back as content.
    const history = [...messages, c1.message, { role: 'tool', tool_call_id: c1.message.tool_calls[0].id, content: 'cancelled' }];
    const r2 = await api(h.url, 'POST', '/v1/chat/completions', { model: 'm', messages: history, tools });
    assert.equal(r2.body.choices[0].message.content, 'Your order is cancelled.');
    assert.equal(r2.body.choices[0].finish_reason, 'stop');

    // Garbage is returned as text with the parse error, never dropped.
    const r3 = await api(h.url, 'POST', '/v1/chat/completions', { model: 'm', messages, tools });
    assert.equal(r3.status, 200);
    assert.equal(typeof r3.body.choices[0].message.content, 'string');
    assert.ok(r3.body.choices[0].longrun.parse_error.kind);

    const bad = await api(h.url, 'POST', '/v1/chat/completions', { messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'a', type: 'function', function: { name: 'x', arguments: '{oops' } }] }] });
    assert.equal(bad.status, 400);
    assert.match(bad.body.error.message, /not valid JSON/);
  });

  it("longrun's OpenAIAgent drives the model server (tool calls come back as agent turns)", async () => {
    replies = [format.renderCompletion({ role: 'assistant', content: '', toolCalls: [{ name: 'cancel_order', arguments: { order_id: '#W2' } }] })];
    engine.requests.length = 0;
    const agent = new OpenAIAgent(new ChatClient({ baseUrl: `${h.url}/v1`, model: 'm', retry: { maxRetries: 0 } }));
    const session = agent.start({ systemPrompt: 'You are an agent.', tools: tools as never, seed: 3 });
    const turn = await session.act([
      { role: 'assistant', content: 'Hi! How can I help you today?', toolCalls: null },
      { role: 'user', content: 'cancel #W2 please', toolCalls: null },
    ]);
    assert.equal(turn.toolCalls?.[0]?.name, 'cancel_order');
    assert.deepEqual(JSON.parse(turn.toolCalls![0]!.arguments as string), { order_id: '#W2' });
    assert.equal(engine.requests[0]!.seed, 3);
  });
});
