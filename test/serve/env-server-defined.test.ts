/**
 * The env server on an env defined with defineEnv (test/fixtures/envs/counter.ts): sessions over it like any
 * registered env, its task list per split (`GET /envs/{id}/tasks`), its tools before and after a reset, the episode's
 * messages (`GET /sessions/{id}/messages`), its own reward scale, and the kwargs a client may not set. Then the same
 * through `longrun serve env --env MODULE`.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadRetailTaskSet } from '../../src/domains/retail/register.ts';
import { startEnvServer, type EnvServerHandle } from '../../src/serve/env-server.ts';
import { loadEnvModule, unregisterEnv } from '../../src/tooluse/api/index.ts';
import { REPO_ROOT, TAU2_RETAIL_DIR } from '../helpers/paths.ts';
import { api } from './helpers.ts';

const ID = 'fixture/counter-v0';
const MODULE = join(REPO_ROOT, 'test', 'fixtures', 'envs', 'counter.ts');

describe('env server: an env defined with defineEnv', () => {
  let h: EnvServerHandle;
  before(async () => {
    await loadEnvModule(MODULE);
    h = await startEnvServer({ port: 0, dataDir: TAU2_RETAIL_DIR });
  });
  after(async () => {
    await h.close();
    unregisterEnv(ID);
  });

  it('lists it, and its task ids per split; the retail envs list the splits of the data folder', async () => {
    assert.ok((await api(h.url, 'GET', '/envs')).body.envs.includes(ID));
    const all = await api(h.url, 'GET', `/envs/${encodeURIComponent(ID)}/tasks`);
    assert.equal(all.status, 200);
    assert.deepEqual(all.body, { env_id: ID, splits: { train: ['t1', 't2', 't3'], test: ['h4', 'h7'] } });
    assert.deepEqual((await api(h.url, 'GET', `/envs/${ID}/tasks?split=test`)).body.splits, { test: ['h4', 'h7'] });
    const bad = await api(h.url, 'GET', `/envs/${ID}/tasks?split=nope`);
    assert.equal(bad.status, 404);
    assert.match(bad.body.error.message, /no split "nope"; its splits: train, test/);
    const retail = await api(h.url, 'GET', '/envs/longrun%2Fretail-v0/tasks?split=base');
    assert.equal(retail.status, 200);
    assert.deepEqual(retail.body.splits.base, loadRetailTaskSet({ dataDir: TAU2_RETAIL_DIR, version: 'v0', split: 'base' }).tasks.map((t) => t.id));
    assert.equal((await api(h.url, 'GET', '/envs/GuessNumber-v0/tasks')).body.error.code, 'no_tasks');
    assert.equal((await api(h.url, 'GET', '/envs/nothing-v0/tasks')).status, 404);
  });

  it('plays episodes: tools before and after reset, the env-recorded messages, its reward on its own scale', async () => {
    const c = await api(h.url, 'POST', '/sessions', { env_id: ID, kwargs: { split: 'test' }, compact_info: true });
    assert.equal(c.status, 201, JSON.stringify(c.body));
    const sid = c.body.session_id as string;
    const names = async () => (await api(h.url, 'GET', `/sessions/${sid}/tools`)).body.tools.map((t: { function: { name: string } }) => t.function.name);
    assert.deepEqual(await names(), ['add', 'read'], "the definition's tools before any reset");
    const r = await api(h.url, 'POST', `/sessions/${sid}/reset`, { seed: 1, options: { taskId: 'h7' } });
    assert.equal(r.status, 200);
    assert.equal(r.body.info.taskId, 'h7');
    assert.equal(r.body.observation.text, 'user: Bring the counter to 7 with add, then tell me its value.');
    assert.deepEqual(await names(), ['add', 'read']);
    const s1 = await api(h.url, 'POST', `/sessions/${sid}/step`, { action: { content: null, toolCalls: [{ id: 'a1', name: 'add', arguments: '{"n": 5}' }] } });
    assert.deepEqual([s1.body.observation.text, s1.body.reward, s1.body.terminated], ['tool: 5', 0, false]);
    assert.equal(s1.body.info.tools, undefined, 'compact_info leaves the tools out of step infos');
    const bad = await api(h.url, 'POST', `/sessions/${sid}/step`, { action: { toolCalls: [{ name: 'add', arguments: { n: 'two' } }] } });
    assert.equal(bad.status, 200);
    assert.match(bad.body.observation.messages[0].content, /^Error: /, 'arguments that fail the schema are a tool error the agent sees');
    const end = await api(h.url, 'POST', `/sessions/${sid}/step`, { action: 'The counter is at 5.' });
    assert.deepEqual([end.body.reward, end.body.terminated, end.body.truncated, end.body.info.terminationReason], [-2, true, false, 'agent_stop']);
    const m = await api(h.url, 'GET', `/sessions/${sid}/messages`);
    assert.deepEqual(m.body.messages.map((x: { role: string }) => x.role), ['user', 'assistant', 'tool', 'assistant', 'tool', 'assistant']);
    assert.deepEqual(m.body.messages[1].toolCalls, [{ id: 'a1', name: 'add', arguments: { n: 5 }, requestor: 'assistant' }]);
    assert.equal((await api(h.url, 'POST', `/sessions/${sid}/step`, { action: 'again' })).body.error.code, 'episode_over');
    // A second episode on the same session reaches the target: reward 2.
    await api(h.url, 'POST', `/sessions/${sid}/reset`, { options: { taskId: 'h4' } });
    await api(h.url, 'POST', `/sessions/${sid}/step`, { action: { toolCalls: [{ name: 'add', arguments: { n: 4 } }] } });
    assert.equal((await api(h.url, 'POST', `/sessions/${sid}/step`, { action: 'Done: 4.' })).body.reward, 2);
    assert.equal((await api(h.url, 'DELETE', `/sessions/${sid}`)).status, 200);
  });

  it('refuses kwargs a client may not set and what the env does not have', async () => {
    const tasks = await api(h.url, 'POST', '/sessions', { env_id: ID, kwargs: { tasks: [{ id: 'x', prompt: 'p', target: 1 }] } });
    assert.equal(tasks.status, 400);
    assert.match(tasks.body.error.message, /kwargs\.tasks is not an option of fixture\/counter-v0 .*the tasks come from the env's module/);
    const split = await api(h.url, 'POST', '/sessions', { env_id: ID, kwargs: { split: 7 } });
    assert.equal(split.status, 400);
    assert.match(split.body.error.message, /kwargs\.split must be a string/);
    const c = await api(h.url, 'POST', '/sessions', { env_id: ID, kwargs: { split: 'nope' } });
    const r = await api(h.url, 'POST', `/sessions/${c.body.session_id}/reset`, {});
    assert.equal(r.status, 400);
    assert.match(r.body.error.message, /env fixture\/counter-v0, split 'nope': no such split/);
    const guess = await api(h.url, 'POST', '/sessions', { env_id: 'GuessNumber-v0' });
    assert.equal((await api(h.url, 'GET', `/sessions/${guess.body.session_id}/messages`)).body.error.code, 'no_messages');
  });
});

describe('longrun serve env --env MODULE', () => {
  it('loads the module, serves its env beside the built-in ones, and refuses an argument that is neither a module nor an id', { timeout: 90_000 }, async () => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve', 'env', '--env', 'test/fixtures/envs/counter.ts', '--env', 'GuessNumber-v0', '--port', '0'], { cwd: REPO_ROOT, env: { ...process.env, LONGRUN_SERVE_TOKEN: '' } });
    let log = '';
    child.stderr.on('data', (d) => (log += d));
    const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
    try {
      const url = await new Promise<string>((resolve, reject) => {
        const t = setTimeout(() => reject(new Error(`no start in 60 s: ${log}`)), 60_000);
        child.stderr.on('data', () => {
          const m = /listening on (http:\/\/\S+)/.exec(log);
          if (m) {
            clearTimeout(t);
            resolve(m[1]!);
          }
        });
      });
      assert.match(log, /serving env fixture\/counter-v0 \(from test\/fixtures\/envs\/counter\.ts\)/);
      assert.match(log, /serving env GuessNumber-v0\n/);
      assert.deepEqual((await api(url, 'GET', `/envs/${ID}/tasks?split=train`)).body.splits, { train: ['t1', 't2', 't3'] });
      const c = await api(url, 'POST', '/sessions', { env_id: ID });
      const r = await api(url, 'POST', `/sessions/${c.body.session_id}/reset`, { options: { taskId: 't2' } });
      assert.equal(r.body.info.systemPrompt, 'You operate a counter that starts at 0. Use the tools to change and read it.');
    } finally {
      child.kill('SIGTERM');
    }
    assert.equal(await exited, 0);
    const bad = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'serve', 'env', '--env', 'no-such-env-v0', '--port', '0'], { cwd: REPO_ROOT });
    let err = '';
    bad.stderr.on('data', (d) => (err += d));
    assert.equal(await new Promise((r) => bad.on('exit', r)), 1);
    assert.match(err, /--env no-such-env-v0: neither an env module .* nor a registered env id/);
  });
});
