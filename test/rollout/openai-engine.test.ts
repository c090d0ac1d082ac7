import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { OpenAICompatibleEngine, parseCompletionChoice } from '../../src/rollout/openai-engine.ts';
import type { GenerationRequest } from '../../src/rollout/inference.ts';

interface Seen {
  path: string;
  body: Record<string, unknown>;
}

/** A fake completion server on 127.0.0.1: behaviour chosen by the first prompt token. */
function fakeServer() {
  const seen: Seen[] = [];
  const attemptsByKey = new Map<number, number>();
  let inFlight = 0;
  let maxInFlight = 0;
  const server = createServer((req, res) => {
    let raw = '';
    req.on('data', (c) => (raw += c));
    req.on('end', () => {
      const body = JSON.parse(raw) as Record<string, unknown>;
      seen.push({ path: req.url ?? '', body });
      const prompt = body.prompt as number[];
      const key = prompt[0];
      const attempt = (attemptsByKey.get(key) ?? 0) + 1;
      attemptsByKey.set(key, attempt);
      const counted = key === 8;
      if (counted) {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
      }
      const reply = (status: number, payload: unknown, delay = 5) => setTimeout(() => {
        if (counted) inFlight--;
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(typeof payload === 'string' ? payload : JSON.stringify(payload));
      }, delay);
      const n = body.max_tokens as number;
      const ids = Array.from({ length: n }, (_, i) => key * 100 + i);
      const lps = ids.map((_, i) => -0.25 * (i + 1));
      if (key === 1) return reply(200, { choices: [{ text: 'x', token_ids: ids, logprobs: { token_logprobs: lps }, finish_reason: 'length' }] });
      if (key === 2) return reply(200, { choices: [{ text: 'x', logprobs: { tokens: ids.map((t) => `token_id:${t}`), token_logprobs: lps }, finish_reason: 'length' }] });
      if (key === 3) return attempt === 1 ? reply(500, 'boom') : reply(200, { choices: [{ token_ids: [7, 9], logprobs: { token_logprobs: [-1, -2] }, finish_reason: 'stop', stop_reason: 9 }] });
      if (key === 4) return reply(400, { error: { message: 'prompt too long' } });
      if (key === 5) return reply(500, 'always down');
      if (key === 6) return attempt === 1 ? reply(200, {}, 300) : reply(200, { choices: [{ token_ids: [1], logprobs: null, finish_reason: 'stop', stop_reason: 42 }] });
      if (key === 7) return reply(200, { choices: [{ text: 'only text', finish_reason: 'stop' }] });
      if (key === 8) return reply(200, { choices: [{ token_ids: [5], logprobs: { token_logprobs: [-0.1] }, finish_reason: 'stop', stop_reason: 42 }] });
      return reply(404, 'no');
    });
  });
  return { server, seen, attemptsByKey, get maxInFlight() { return maxInFlight; } };
}

const req = (first: number, extra: Partial<GenerationRequest> = {}): GenerationRequest => ({ tokens: [first, 11, 12], maxNewTokens: 3, temperature: 0.7, topP: 0.9, stop: [42], seed: 5, ...extra });

describe('OpenAICompatibleEngine against a local fake server', () => {
  const fake = fakeServer();
  let url = '';
  before(async () => {
    await new Promise<void>((r) => fake.server.listen(0, '127.0.0.1', () => r()));
    url = `http://127.0.0.1:${(fake.server.address() as AddressInfo).port}`;
  });
  after(() => new Promise<void>((r) => fake.server.close(() => r())));

  const engine = (o: Partial<ConstructorParameters<typeof OpenAICompatibleEngine>[0]> = {}) => new OpenAICompatibleEngine({ baseUrl: `${url}/v1/`, model: 'tiny', backoffMs: 5, maxRetries: 2, timeoutMs: 2000, ...o });

  it('sends token ids and reads token_ids + token_logprobs, or "token_id:N" tokens', async () => {
    const [a, b] = await engine().generate([req(1), req(2)]);
    assert.deepEqual(a, { tokens: [100, 101, 102], logprobs: [-0.25, -0.5, -0.75], finishReason: 'length' });
    assert.deepEqual(b.tokens, [200, 201, 202]);
    const sent = fake.seen.find((s) => (s.body.prompt as number[])[0] === 1)!;
    assert.equal(sent.path, '/v1/completions');
    assert.deepEqual(sent.body.prompt, [1, 11, 12]);
    assert.equal(sent.body.max_tokens, 3);
    assert.equal(sent.body.temperature, 0.7);
    assert.equal(sent.body.top_p, 0.9);
    assert.deepEqual(sent.body.stop_token_ids, [42]);
    assert.equal(sent.body.return_tokens_as_token_ids, true);
    assert.equal(sent.body.logprobs, 1);
    assert.equal(sent.body.seed, 5);
  });
  it('retries a 500 with backoff', async () => {
    const e = engine();
    const [r] = await e.generate([req(3)]);
    assert.deepEqual(r, { tokens: [7, 9], logprobs: [-1, -2], finishReason: 'stop' });
    assert.equal(fake.attemptsByKey.get(3), 2);
  });
  it('fails at once on a 400 with the server message, and after the retries on a persistent 500', async () => {
    await assert.rejects(engine().generate([req(4)]), /HTTP 400: .*prompt too long/);
    assert.equal(fake.attemptsByKey.get(4), 1);
    await assert.rejects(engine().generate([req(5)]), /failed after 3 attempts: completion server answered HTTP 500: always down/);
    assert.equal(fake.attemptsByKey.get(5), 3);
  });
  it('times out a slow attempt and retries; appends a stop id the server left out', async () => {
    const [r] = await engine({ timeoutMs: 100 }).generate([req(6)]);
    assert.deepEqual(r.tokens, [1, 42]);
    assert.deepEqual(r.logprobs, [0, 0]);
    assert.equal(fake.attemptsByKey.get(6), 2);
  });
  it('rejects responses without token ids (no re-tokenizing)', async () => {
    await assert.rejects(engine().generate([req(7)]), /carries no token ids/);
  });
  it('limits concurrency', async () => {
    const e = engine({ concurrency: 2 });
    const out = await e.generate(Array.from({ length: 6 }, () => req(8)));
    assert.equal(out.length, 6);
    assert.equal(fake.attemptsByKey.get(8), 6);
    assert.equal(fake.maxInFlight, 2);
  });
  it('parses choices and reports bad shapes', () => {
    assert.throws(() => parseCompletionChoice({}, req(1)), /no choices\[0\]/);
    assert.throws(() => parseCompletionChoice({ choices: [{ logprobs: { tokens: ['abc'] } }] }, req(1)), /expected "token_id:N"/);
    assert.throws(() => parseCompletionChoice({ choices: [{ token_ids: [1, 2], logprobs: { token_logprobs: [0] } }] }, req(1)), /2 token ids but 1 log-probs/);
    assert.equal(parseCompletionChoice({ choices: [{ token_ids: [1], finish_reason: 'abort' }] }, req(1)).finishReason, 'aborted');
    assert.throws(() => new OpenAICompatibleEngine({ baseUrl: 'localhost:8000', model: 'x' }), /must start with http/);
  });
});
