import { describe, it, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { canonicalJson, defineEnv, EpisodeError, llmUser, rewards, stateHash } from '../../../src/tooluse/api/index.ts';
import { notesSpec, type Notes, type NoteTask } from './notes-env.ts';

/** A fake OpenAI-compatible chat endpoint on 127.0.0.1: each request gets the next scripted reply. */
class FakeOpenAI {
  readonly requests: { messages: { role: string; content: string }[]; model: string }[] = [];
  replies: (string | { status: number })[] = [];
  private server!: Server;
  url = '';

  async start(): Promise<void> {
    this.server = createServer((req: IncomingMessage, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        this.requests.push(JSON.parse(body));
        const next = this.replies.shift() ?? 'no reply scripted';
        if (typeof next !== 'string') {
          res.writeHead(next.status, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { message: 'server exploded' } }));
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({
          id: 'x', object: 'chat.completion', created: 0, model: 'judge',
          choices: [{ index: 0, finish_reason: 'stop', message: { role: 'assistant', content: next } }],
          usage: { prompt_tokens: 120, completion_tokens: 15, total_tokens: 135 },
        }));
      });
    });
    await new Promise<void>((r) => this.server.listen(0, '127.0.0.1', r));
    this.url = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}/v1`;
  }

  stop(): Promise<void> {
    return new Promise((r) => this.server.close(() => r()));
  }
}

async function play(spec: Parameters<typeof defineEnv<Notes, NoteTask>>[0], turns: { content?: string; toolCalls?: { name: string; arguments: Record<string, unknown> }[] }[]) {
  const env = defineEnv(spec).makeEnv();
  await env.reset({ seed: 1, options: { taskId: 'a' } });
  for (const t of turns) {
    const [, r, term, trunc, info] = await env.step(t);
    if (term || trunc) return { reward: r, info: (info.rewardInfo as { info: Record<string, unknown> }).info };
  }
  throw new Error('episode did not end');
}

const save = { toolCalls: [{ name: 'add_note', arguments: { key: 'a', text: 'hello' } }] };

describe('rewards.checks', () => {
  it('scores the fraction of checks passed and lists each', async () => {
    const reward = rewards.checks<Notes, NoteTask>([
      { name: 'saved', check: (ep) => ep.state.notes[ep.task.key] === ep.task.text },
      { name: 'polite', check: (ep) => ep.messages.some((m) => m.role === 'assistant' && /thanks/i.test(m.content ?? '')) },
      { name: 'one call', check: async (ep) => ep.toolCalls.length === 1 },
    ]);
    const r = await play(notesSpec({ reward }), [save, { content: 'Saved.' }]);
    assert.equal(r.reward, 2 / 3);
    assert.deepEqual(r.info.checks, [{ name: 'saved', passed: true }, { name: 'polite', passed: false }, { name: 'one call', passed: true }]);
  });
  it('a check that throws is an EpisodeError naming the check and the env', async () => {
    const reward = rewards.checks<Notes, NoteTask>([{ name: 'fragile', check: () => { throw new Error('oops'); } }]);
    await assert.rejects(play(notesSpec({ reward }), [{ content: 'x' }]), (e: unknown) => e instanceof EpisodeError && /env test\/notes-v0: .*check fragile threw on task a: oops/.test(e.message));
    assert.throws(() => rewards.checks([]), /at least one/);
    assert.throws(() => rewards.checks([{ name: 'a', check: () => true }, { name: 'a', check: () => true }]), /two checks are named a/);
  });
});

describe('rewards.finalState', () => {
  it('compares the final state hash with an expected hash or the gold actions replayed', async () => {
    const expected = stateHash({ a: 'hello' });
    const byHash = rewards.finalState<Notes, NoteTask>({ expectedHash: () => expected, hash: (s) => stateHash(s.notes) });
    assert.equal((await play(notesSpec({ reward: byHash }), [save, { content: 'ok' }])).reward, 1);
    assert.equal((await play(notesSpec({ reward: byHash }), [{ content: 'ok' }])).reward, 0);
    const byGold = rewards.finalState<Notes, NoteTask>({ gold: () => [{ name: 'add_note', arguments: { key: 'a', text: 'hello' } }], hash: (s) => stateHash(s.notes) });
    const r = await play(notesSpec({ reward: byGold }), [save, { content: 'ok' }]);
    assert.deepEqual(r.info, { finalHash: expected, expectedHash: expected, match: true, terminationReason: 'agent_stop' });
    const badGold = rewards.finalState<Notes, NoteTask>({ gold: () => [{ name: 'get_note', arguments: { key: 'missing' } }] });
    await assert.rejects(play(notesSpec({ reward: badGold }), [{ content: 'ok' }]), /gold action 0 \(get_note\) of task a failed on replay: Error: no note missing/);
    assert.throws(() => rewards.finalState({}), /exactly one of gold/);
  });
  it('canonical JSON does not depend on key order', () => {
    assert.equal(canonicalJson({ b: 1, a: { d: [1, 2], c: new Map([['y', 1], ['x', 2]]) } }), canonicalJson({ a: { c: new Map([['x', 2], ['y', 1]]), d: [1, 2] }, b: 1 }));
    assert.notEqual(stateHash({ a: 1 }), stateHash({ a: 2 }));
  });
});

describe('rewards.rubric and llmUser against a local OpenAI-compatible server', () => {
  const server = new FakeOpenAI();
  before(() => server.start());
  after(() => server.stop());

  it('the judge\'s score is the reward; its reasoning and token usage are in the info', async () => {
    server.replies = ['Sure. ```json\n{"score": 0.75, "reasoning": "saved, but terse"}\n```'];
    const reward = rewards.rubric<Notes, NoteTask>({ baseUrl: server.url, model: 'judge-1', rubric: (t) => `The note ${t.key} is saved and the user is told.`, maxRetries: 0 });
    const r = await play(notesSpec({ reward }), [save, { content: 'Saved.' }]);
    assert.equal(r.reward, 0.75);
    assert.deepEqual(r.info, { judge: 'judge-1', reasoning: 'saved, but terse', usage: { promptTokens: 120, completionTokens: 15 }, terminationReason: 'agent_stop' });
    const sent = server.requests.at(-1)!;
    assert.equal(sent.model, 'judge-1');
    assert.match(sent.messages[1]!.content, /The note a is saved and the user is told\.[\s\S]*assistant: add_note\(key='a', text='hello'\)[\s\S]*assistant: Saved\./);
  });

  for (const [what, reply, pattern] of [
    ['a failed request', { status: 500 }, /rubric judge judge-1 on task a: the request failed: 500/],
    ['a reply without JSON', 'I think it is fine.', /no JSON object in the judge's reply/],
    ['a score out of range', '{"score": 7}', /the judge's score must be a number in \[0, 1\], got 7 \(usage 120\+15 tokens\)/],
  ] as const) {
    it(`${what} is an EpisodeError naming the env, never a silent 0`, async () => {
      server.replies = [reply];
      const reward = rewards.rubric<Notes, NoteTask>({ baseUrl: server.url, model: 'judge-1', rubric: 'anything', maxRetries: 0 });
      await assert.rejects(play(notesSpec({ reward }), [{ content: 'x' }]), (e: unknown) => {
        assert.ok(e instanceof EpisodeError, String(e));
        assert.match(e.message, /^env test\/notes-v0: /);
        assert.match(e.message, pattern);
        return true;
      });
    });
  }

  it('llmUser plays the user (roles swapped) and leaves with ###STOP###', async () => {
    server.replies = ['Hi, please save a = hello.', 'Thanks! ###STOP###'];
    const user = llmUser<Notes, NoteTask>({ baseUrl: server.url, model: 'user-1', instructions: (t) => `You want note ${t.key} saved.`, maxRetries: 0 });
    const env = defineEnv(notesSpec({ user })).makeEnv();
    const from = server.requests.length;
    const [obs] = await env.reset({ seed: 3, options: { taskId: 'a' } });
    assert.equal(obs.messages[0]!.content, 'Hi, please save a = hello.');
    await env.step(save);
    const [, r, terminated, , info] = await env.step({ content: 'Done, a = hello.' });
    assert.deepEqual([r, terminated, info.terminationReason], [1, true, 'user_stop']);
    const second = server.requests[from + 1]!;
    assert.match(second.messages[0]!.content, /^You want note a saved\./);
    assert.deepEqual(second.messages.slice(1).map((m) => [m.role, m.content]), [['assistant', 'Hi, please save a = hello.'], ['user', 'Done, a = hello.']]);
  });
});
