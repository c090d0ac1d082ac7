import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Env } from '../../src/gym/env.ts';
import type { ResetOptions, ResetResult, StepResult } from '../../src/gym/types.ts';
import { Discrete } from '../../src/gym/spaces/index.ts';
import { register, registry } from '../../src/gym/registry/registry.ts';
import { startEnvServer, type EnvServerHandle } from '../../src/serve/env-server.ts';
import { TAU2_RETAIL_DIR } from '../helpers/paths.ts';
import { api, rawRequest, sleep } from './helpers.ts';

/** A slow env that records how many of its steps overlap, to observe per-session serialisation. */
class SlowEnv extends Env<number, number> {
  static active = 0;
  static maxActive = 0;
  static closed = 0;
  /** While set, steps wait for it (tests release it), so overlap does not depend on timing. */
  static gate: Promise<void> | null = null;
  readonly observationSpace = new Discrete(100);
  readonly actionSpace = new Discrete(2);
  private t = 0;
  override async reset(o: ResetOptions = {}): Promise<ResetResult<number>> {
    await super.reset(o);
    this.t = 0;
    return [0, { fn: () => 1, big: 10n, map: new Map([['a', 1]]), nan: Number.NaN }];
  }
  async step(a: number): Promise<StepResult<number>> {
    SlowEnv.active++;
    SlowEnv.maxActive = Math.max(SlowEnv.maxActive, SlowEnv.active);
    await (SlowEnv.gate ?? sleep(60));
    SlowEnv.active--;
    this.t++;
    if (a === 1) throw new Error('boom');
    return [this.t, 0, this.t >= 50, false, {}];
  }
  override async close(): Promise<void> {
    SlowEnv.closed++;
  }
}

function registerSlow(): void {
  if (!registry.has('test/Slow-v0')) register({ id: 'test/Slow-v0', entryPoint: () => new SlowEnv() });
}

describe('env server: bad input', () => {
  let h: EnvServerHandle;
  const TOKEN = 'correct-horse-battery-staple';
  const auth = { authorization: `Bearer ${TOKEN}` };
  before(async () => {
    registerSlow();
    h = await startEnvServer({ port: 0, dataDir: TAU2_RETAIL_DIR, token: TOKEN, maxSessions: 6, maxBodyBytes: 4096, maxWaitingPerSession: 2, idleTimeoutS: 0 });
  });
  after(async () => h.close());

  const newSession = async (envId = 'test/Slow-v0') => {
    const c = await api(h.url, 'POST', '/sessions', { env_id: envId }, auth);
    assert.equal(c.status, 201, JSON.stringify(c.body));
    return c.body.session_id as string;
  };

  it('401 without a token and with a wrong one; /health stays open', async () => {
    const none = await api(h.url, 'GET', '/envs');
    assert.equal(none.status, 401);
    assert.equal(none.body.error.code, 'unauthorized');
    assert.match(none.headers.get('www-authenticate') ?? '', /Bearer/);
    const wrong = await api(h.url, 'GET', '/envs', undefined, { authorization: 'Bearer nope' });
    assert.equal(wrong.status, 401);
    assert.match(wrong.body.error.message, /wrong/);
    const prefix = await api(h.url, 'GET', '/envs', undefined, { authorization: `Bearer ${TOKEN.slice(0, -1)}` });
    assert.equal(prefix.status, 401);
    assert.equal((await api(h.url, 'GET', '/health')).status, 200);
    assert.equal((await api(h.url, 'GET', '/envs', undefined, auth)).status, 200);
  });

  it('400 on malformed JSON and on bodies that fail validation', async () => {
    const bad = await api(h.url, 'POST', '/sessions', '{"env_id": ', auth);
    assert.equal(bad.status, 400);
    assert.equal(bad.body.error.code, 'malformed_json');
    const missing = await api(h.url, 'POST', '/sessions', {}, auth);
    assert.equal(missing.status, 400);
    assert.equal(missing.body.error.code, 'invalid_body');
    assert.match(missing.body.error.message, /env_id/);
    const extra = await api(h.url, 'POST', '/sessions', { env_id: 'GuessNumber-v0', colour: 'red' }, auth);
    assert.equal(extra.status, 400);
    assert.match(extra.body.error.message, /colour/);
    const seed = await api(h.url, 'POST', '/sessions', { env_id: 'GuessNumber-v0', seed: -1 }, auth);
    assert.equal(seed.status, 400);
    const id = await newSession();
    const noAction = await api(h.url, 'POST', `/sessions/${id}/step`, {}, auth);
    assert.equal(noAction.status, 400);
    assert.match(noAction.body.error.message, /action/);
    const arr = await api(h.url, 'POST', `/sessions/${id}/reset`, [1, 2], auth);
    assert.equal(arr.status, 400);
    await api(h.url, 'DELETE', `/sessions/${id}`, undefined, auth);
  });

  it('400 on client-chosen data folders or unknown kwargs, 404 on unknown envs with the registered list', async () => {
    const dir = await api(h.url, 'POST', '/sessions', { env_id: 'longrun/retail-v0', kwargs: { dataDir: '/etc' } }, auth);
    assert.equal(dir.status, 400);
    assert.match(dir.body.error.message, /--data/);
    const kw = await api(h.url, 'POST', '/sessions', { env_id: 'longrun/retail-v0', kwargs: { flavour: 1 } }, auth);
    assert.equal(kw.status, 400);
    assert.match(kw.body.error.message, /Unknown retail env kwargs: flavour/);
    const user = await api(h.url, 'POST', '/sessions', { env_id: 'longrun/retail-v0', kwargs: { user: 'gpt' } }, auth);
    assert.equal(user.status, 400);
    assert.match(user.body.error.message, /ticket/);
    const unknown = await api(h.url, 'POST', '/sessions', { env_id: 'longrun/retail-v9' }, auth);
    assert.equal(unknown.status, 404);
    assert.equal(unknown.body.error.code, 'unknown_env');
    assert.match(unknown.body.error.message, /longrun\/retail-v1/);
  });

  it('404 on unknown sessions and routes, 405 on wrong methods', async () => {
    const s = await api(h.url, 'POST', '/sessions/deadbeef/step', { action: 0 }, auth);
    assert.equal(s.status, 404);
    assert.equal(s.body.error.code, 'unknown_session');
    assert.equal((await api(h.url, 'DELETE', '/sessions/deadbeef', undefined, auth)).status, 404);
    const route = await api(h.url, 'GET', '/nope', undefined, auth);
    assert.equal(route.status, 404);
    assert.equal(route.body.error.code, 'not_found');
    const m = await api(h.url, 'PUT', '/sessions', {}, auth);
    assert.equal(m.status, 405);
    assert.equal(m.headers.get('allow'), 'POST');
  });

  it('409 on a step before reset, 422 on an action outside the space, 500 (and still serving) when the env throws', async () => {
    const id = await newSession();
    const early = await api(h.url, 'POST', `/sessions/${id}/step`, { action: 0 }, auth);
    assert.equal(early.status, 409);
    assert.equal(early.body.error.code, 'reset_needed');
    const r = await api(h.url, 'POST', `/sessions/${id}/reset`, { seed: 1 }, auth);
    assert.equal(r.status, 200);
    // Functions, bigints, Maps and NaN in info become JSON.
    assert.deepEqual(r.body.info, { big: '10', map: { a: 1 }, nan: null });
    const bad = await api(h.url, 'POST', `/sessions/${id}/step`, { action: 7 }, auth);
    assert.equal(bad.status, 422);
    assert.equal(bad.body.error.code, 'invalid_action');
    const boom = await api(h.url, 'POST', `/sessions/${id}/step`, { action: 1 }, auth);
    assert.equal(boom.status, 500);
    assert.equal(boom.body.error.code, 'env_error');
    assert.match(boom.body.error.message, /boom/);
    const fine = await api(h.url, 'POST', `/sessions/${id}/step`, { action: 0 }, auth);
    assert.equal(fine.status, 200);
    await api(h.url, 'DELETE', `/sessions/${id}`, undefined, auth);
  });

  it('413 on bodies over the limit (declared or streamed), then keeps serving', async () => {
    const big = JSON.stringify({ env_id: 'GuessNumber-v0', kwargs: { pad: 'x'.repeat(10_000) } });
    const declared = await api(h.url, 'POST', '/sessions', big, auth);
    assert.equal(declared.status, 413);
    assert.equal(declared.body.error.code, 'body_too_large');
    // Chunked: no content-length, so the limit is enforced while streaming.
    const chunk = 'x'.repeat(3000);
    const raw = [
      'POST /sessions HTTP/1.1',
      'Host: 127.0.0.1',
      `Authorization: Bearer ${TOKEN}`,
      'Content-Type: application/json',
      'Transfer-Encoding: chunked',
      '',
      `${chunk.length.toString(16)}\r\n${chunk}\r\n${chunk.length.toString(16)}\r\n${chunk}\r\n0\r\n\r\n`,
    ].join('\r\n');
    const reply = await rawRequest(h.port, raw);
    assert.match(reply, /^HTTP\/1\.1 413/);
    assert.match(reply, /body_too_large/);
    assert.equal((await api(h.url, 'GET', '/health')).status, 200);
  });

  it('survives clients that disconnect mid-body and mid-step', async () => {
    const partial = ['POST /sessions HTTP/1.1', 'Host: x', `Authorization: Bearer ${TOKEN}`, 'Content-Length: 500', '', '{"env_id": "Gue'].join('\r\n');
    await rawRequest(h.port, partial, { destroyAfterWrite: true });
    const id = await newSession();
    await api(h.url, 'POST', `/sessions/${id}/reset`, {}, auth);
    const body = JSON.stringify({ action: 0 });
    const step = ['POST /sessions/' + id + '/step HTTP/1.1', 'Host: x', `Authorization: Bearer ${TOKEN}`, `Content-Length: ${body.length}`, '', body].join('\r\n');
    await rawRequest(h.port, step, { destroyAfterWrite: true });
    await sleep(100);
    // The abandoned step still ran, in order; the session keeps working.
    const next = await api(h.url, 'POST', `/sessions/${id}/step`, { action: 0 }, auth);
    assert.equal(next.status, 200);
    assert.equal(next.body.observation, 2);
    const garbage = await rawRequest(h.port, 'NOT HTTP AT ALL\r\n\r\n');
    assert.match(garbage, /400/);
    assert.equal((await api(h.url, 'GET', '/health')).status, 200);
    await api(h.url, 'DELETE', `/sessions/${id}`, undefined, auth);
  });

  it('serialises concurrent steps on one session and refuses a queue over the limit with 409', async () => {
    const id = await newSession();
    await api(h.url, 'POST', `/sessions/${id}/reset`, {}, auth);
    SlowEnv.maxActive = 0;
    let release!: () => void;
    SlowEnv.gate = new Promise<void>((r) => (release = r));
    try {
      // While the first step is held: 1 running + 2 waiting are accepted; the 4th and 5th are refused at once.
      const replies: (Awaited<ReturnType<typeof api>> | null)[] = [null, null, null, null, null];
      const all = [0, 1, 2, 3, 4].map(async (i) => {
        if (i > 0) for (let k = 0; k < 400 && SlowEnv.active === 0; k++) await sleep(5);
        replies[i] = await api(h.url, 'POST', `/sessions/${id}/step`, { action: 0 }, auth);
      });
      for (let k = 0; k < 1000 && replies.filter((r) => r?.status === 409).length < 2; k++) await sleep(5);
      release();
      await Promise.all(all);
      const ok = replies.filter((r) => r!.status === 200);
      const busy = replies.filter((r) => r!.status === 409);
      assert.equal(SlowEnv.maxActive, 1, 'steps of one session never overlap');
      assert.equal(ok.length, 3);
      assert.equal(busy.length, 2);
      assert.equal(busy[0]!.body.error.code, 'session_busy');
      assert.deepEqual(ok.map((r) => r!.body.observation).sort(), [1, 2, 3]);
      // Different sessions do run concurrently.
      const a = await newSession();
      const b = await newSession();
      await api(h.url, 'POST', `/sessions/${a}/reset`, {}, auth);
      await api(h.url, 'POST', `/sessions/${b}/reset`, {}, auth);
      SlowEnv.maxActive = 0;
      SlowEnv.gate = new Promise<void>((r) => (release = r));
      const both = Promise.all([a, b].map((s) => api(h.url, 'POST', `/sessions/${s}/step`, { action: 0 }, auth)));
      for (let k = 0; k < 1000 && SlowEnv.active < 2; k++) await sleep(5);
      release();
      await both;
      assert.equal(SlowEnv.maxActive, 2);
      for (const s of [id, a, b]) await api(h.url, 'DELETE', `/sessions/${s}`, undefined, auth);
    } finally {
      SlowEnv.gate = null;
      release?.();
    }
  });

  it('429 past --max-sessions with a clear body, and room again after a close', async () => {
    const ids: string[] = [];
    for (let i = 0; i < 6; i++) ids.push(await newSession());
    const over = await api(h.url, 'POST', '/sessions', { env_id: 'test/Slow-v0' }, auth);
    assert.equal(over.status, 429);
    assert.equal(over.body.error.code, 'too_many_sessions');
    assert.match(over.body.error.message, /maximum of 6/);
    await api(h.url, 'DELETE', `/sessions/${ids.pop()}`, undefined, auth);
    ids.push(await newSession());
    for (const id of ids) await api(h.url, 'DELETE', `/sessions/${id}`, undefined, auth);
  });
});

describe('env server: lifecycle', () => {
  it('reaps idle sessions (404 that says so) and closes their envs', async () => {
    registerSlow();
    const h = await startEnvServer({ port: 0, idleTimeoutS: 0.2 });
    try {
      const c = await api(h.url, 'POST', '/sessions', { env_id: 'test/Slow-v0' });
      const closedBefore = SlowEnv.closed;
      for (let k = 0; k < 200 && h.sessions.size > 0; k++) await sleep(25);
      const r = await api(h.url, 'POST', `/sessions/${c.body.session_id}/reset`, {});
      assert.equal(r.status, 404);
      assert.match(r.body.error.message, /idle/);
      assert.equal(SlowEnv.closed, closedBefore + 1);
      assert.equal(h.sessions.reapedCount, 1);
    } finally {
      await h.close();
    }
  });

  it('close() waits for in-flight steps, closes every session and refuses new connections', async () => {
    registerSlow();
    const h = await startEnvServer({ port: 0 });
    const ids = [];
    for (let i = 0; i < 3; i++) ids.push((await api(h.url, 'POST', '/sessions', { env_id: 'test/Slow-v0' })).body.session_id);
    await api(h.url, 'POST', `/sessions/${ids[0]}/reset`, {});
    const closedBefore = SlowEnv.closed;
    const inflight = api(h.url, 'POST', `/sessions/${ids[0]}/step`, { action: 0 });
    // Close only once the step is running inside the env (bounded wait).
    for (let i = 0; i < 500 && SlowEnv.active === 0; i++) await sleep(5);
    assert.equal(SlowEnv.active, 1);
    await h.close();
    assert.equal((await inflight).status, 200);
    assert.equal(SlowEnv.closed, closedBefore + 3);
    await assert.rejects(fetch(h.url + '/health'));
  });
});
