import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { replayGoldActions } from '../../src/tooluse/evaluator.ts';
import { loadRetailTaskSet } from '../../src/domains/retail/register.ts';
import { startEnvServer, type EnvServerHandle } from '../../src/serve/env-server.ts';
import { goldTurns } from '../../src/serve/gold-turns.ts';
import { TAU2_RETAIL_DIR } from '../helpers/paths.ts';
import { api } from './helpers.ts';

describe('env server: API', () => {
  let h: EnvServerHandle;
  before(async () => {
    h = await startEnvServer({ port: 0, dataDir: TAU2_RETAIL_DIR });
  });
  after(async () => h.close());

  it('reports health and the registered envs', async () => {
    const health = await api(h.url, 'GET', '/health');
    assert.equal(health.status, 200);
    assert.equal(health.body.status, 'ok');
    const envs = await api(h.url, 'GET', '/envs');
    assert.ok(envs.body.envs.includes('longrun/retail-v0'));
    assert.ok(envs.body.envs.includes('GuessNumber-v0'));
  });

  it('creates a retail session with JSON spaces, tools and metadata, and closes it', async () => {
    const c = await api(h.url, 'POST', '/sessions', { env_id: 'longrun/retail-v1' });
    assert.equal(c.status, 201);
    assert.match(c.body.session_id, /^[0-9a-f]{24}$/);
    assert.equal(c.body.action_space.type, 'AgentTurn');
    assert.equal(c.body.observation_space.type, 'ToolUseObservation');
    assert.deepEqual(c.body.metadata.renderModes, ['ansi']);
    const tools = await api(h.url, 'GET', `/sessions/${c.body.session_id}/tools`);
    assert.equal(tools.status, 200);
    const names = tools.body.tools.map((t: { function: { name: string } }) => t.function.name);
    assert.equal(names.length, 17); // 16 retail tools + done
    assert.equal(names.at(-1), 'done');
    const del = await api(h.url, 'DELETE', `/sessions/${c.body.session_id}`);
    assert.deepEqual(del.body, { closed: true, session_id: c.body.session_id });
    assert.equal((await api(h.url, 'GET', `/sessions/${c.body.session_id}/tools`)).status, 404);
  });

  it('plays a τ² gold trajectory to reward 1 with the DB hash of the gold replay', async () => {
    const { domain, tasks } = loadRetailTaskSet({ dataDir: TAU2_RETAIL_DIR, version: 'v0' });
    const task = tasks.find((t) => t.id === '5')!;
    const goldHash = domain.hashDb(replayGoldActions(domain, task).db);
    const c = await api(h.url, 'POST', '/sessions', { env_id: 'longrun/retail-v0', compact_info: true });
    const id = c.body.session_id;
    const r = await api(h.url, 'POST', `/sessions/${id}/reset`, { seed: 3, options: { taskId: '5' } });
    assert.equal(r.status, 200);
    assert.equal(r.body.info.taskId, '5');
    assert.equal(r.body.observation.messages[0].role, 'user');
    assert.ok(Array.isArray(r.body.info.tools), 'reset info keeps the tools');
    let last: any = null;
    const turns = goldTurns(task);
    for (const turn of turns) {
      last = await api(h.url, 'POST', `/sessions/${id}/step`, { action: turn });
      assert.equal(last.status, 200, JSON.stringify(last.body));
      assert.equal(last.body.info.tools, undefined, 'compact step infos leave the tools out');
      if (last.body.terminated || last.body.truncated) break;
    }
    assert.equal(last.body.terminated, true);
    assert.equal(last.body.truncated, false);
    assert.equal(last.body.reward, 1);
    assert.equal(last.body.info.rewardInfo.dbCheck.dbReward, 1);
    assert.equal(last.body.info.rewardInfo.dbCheck.predictedHash, goldHash);
    assert.equal(last.body.info.terminationReason, 'user_stop'); // the ticket user stops after the closing text
    const again = await api(h.url, 'POST', `/sessions/${id}/step`, { action: 'hello' });
    assert.equal(again.status, 409);
    assert.equal(again.body.error.code, 'episode_over');
    // A new episode on the same session works.
    const r2 = await api(h.url, 'POST', `/sessions/${id}/reset`, { options: { taskId: '0' } });
    assert.equal(r2.body.info.taskId, '0');
  });

  it('accepts τ² gym action strings (functional tool calls) and answers tool errors as observations', async () => {
    const c = await api(h.url, 'POST', '/sessions', { env_id: 'longrun/retail-v0' });
    const id = c.body.session_id;
    await api(h.url, 'POST', `/sessions/${id}/reset`, { options: { taskId: '1' } });
    const s = await api(h.url, 'POST', `/sessions/${id}/step`, { action: "find_user_id_by_email(email='nobody@example.com')" });
    assert.equal(s.status, 200);
    assert.equal(s.body.observation.text, 'tool: Error: User not found');
    assert.equal(s.body.reward, 0);
    assert.equal(s.body.info.numErrors, 1);
  });

  it('seeds the first reset from the creation seed (same seed, same task draw)', async () => {
    const draw = async (seed: number) => {
      const c = await api(h.url, 'POST', '/sessions', { env_id: 'longrun/retail-v0', seed });
      const r = await api(h.url, 'POST', `/sessions/${c.body.session_id}/reset`, {});
      await api(h.url, 'DELETE', `/sessions/${c.body.session_id}`);
      return r.body.info.taskId as string;
    };
    const a = await draw(11);
    assert.equal(await draw(11), a);
    const others = new Set([await draw(12), await draw(13), await draw(14)]);
    assert.ok(others.size > 1 || !others.has(a), 'different seeds draw different tasks');
  });

  it('keeps concurrent sessions isolated (each ends on its own gold DB hash)', async () => {
    const { domain, tasks } = loadRetailTaskSet({ dataDir: TAU2_RETAIL_DIR, version: 'v0' });
    const picked = tasks.filter((t) => ['3', '20', '36', '64', '100', '105'].includes(t.id));
    const results = await Promise.all(
      picked.map(async (task) => {
        const c = await api(h.url, 'POST', '/sessions', { env_id: 'longrun/retail-v0', compact_info: true });
        const id = c.body.session_id;
        await api(h.url, 'POST', `/sessions/${id}/reset`, { options: { taskId: task.id } });
        let last: any = null;
        for (const turn of goldTurns(task)) {
          last = await api(h.url, 'POST', `/sessions/${id}/step`, { action: turn });
          if (last.body.terminated || last.body.truncated) break;
        }
        await api(h.url, 'DELETE', `/sessions/${id}`);
        return { task, info: last.body.info.rewardInfo, reward: last.body.reward };
      }),
    );
    for (const { task, info, reward } of results) {
      assert.equal(info.dbCheck.predictedHash, domain.hashDb(replayGoldActions(domain, task).db), `task ${task.id}`);
      assert.equal(reward, 1, `task ${task.id}`);
    }
  });

  it('runs a toy env (GuessNumber) reproducibly from a seed', async () => {
    const run = async () => {
      const c = await api(h.url, 'POST', '/sessions', { env_id: 'GuessNumber-v0' });
      assert.equal(c.body.action_space.type, 'Discrete');
      assert.equal(c.body.spec.max_episode_steps, 10);
      const id = c.body.session_id;
      const r = await api(h.url, 'POST', `/sessions/${id}/reset`, { seed: 42 });
      const steps = [];
      for (let a = 0; a < 3; a++) steps.push((await api(h.url, 'POST', `/sessions/${id}/step`, { action: a })).body);
      return { r: r.body, steps };
    };
    assert.deepEqual(await run(), await run());
  });
});

describe('env server: server-side LLM user and judge', () => {
  it('refuses v1 NL tasks without a judge and client-chosen LLM users, then serves both when configured', async () => {
    const { serverLlmConfig } = await import('../../src/serve/env-judges.ts');
    const { startFakeOpenAI, completion } = await import('./fake-openai.ts');
    const v1 = loadRetailTaskSet({ dataDir: TAU2_RETAIL_DIR, version: 'v1' }).tasks;
    const task = v1.find((t) => (t.evaluation_criteria?.nl_assertions?.length ?? 0) > 0 && (t.evaluation_criteria?.communicate_info?.length ?? 0) > 0)!;
    const plain = await startEnvServer({ port: 0, dataDir: TAU2_RETAIL_DIR });
    try {
      const c = await api(plain.url, 'POST', '/sessions', { env_id: 'longrun/retail-v1' });
      const r = await api(plain.url, 'POST', `/sessions/${c.body.session_id}/reset`, { options: { taskId: task.id } });
      assert.equal(r.status, 400);
      assert.equal(r.body.error.code, 'reset_failed');
      assert.match(r.body.error.message, /judge/);
      const u = await api(plain.url, 'POST', '/sessions', { env_id: 'longrun/retail-v1', kwargs: { user: 'llm' } });
      assert.equal(u.status, 400);
      assert.match(u.body.error.message, /--user-base-url/);
    } finally {
      await plain.close();
    }
    const fake = await startFakeOpenAI((req) => {
      const mine = req.body.messages.filter((m: any) => m.role === 'assistant').length;
      return { body: completion({ content: mine === 0 ? 'Hello, I need help.' : '###STOP###' }) };
    });
    const h = await startEnvServer({ port: 0, dataDir: TAU2_RETAIL_DIR, ...serverLlmConfig({ dataDir: TAU2_RETAIL_DIR, user: { baseUrl: fake.url, model: 'u' }, judge: 'communicate-fallback' }) });
    try {
      const c = await api(h.url, 'POST', '/sessions', { env_id: 'longrun/retail-v1', kwargs: { user: 'llm' }, compact_info: true });
      const id = c.body.session_id;
      const r = await api(h.url, 'POST', `/sessions/${id}/reset`, { options: { taskId: task.id } });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.observation.text, 'user: Hello, I need help.');
      let last: any = null;
      for (const turn of goldTurns(task)) {
        last = await api(h.url, 'POST', `/sessions/${id}/step`, { action: turn });
        if (last.body.terminated || last.body.truncated) break;
      }
      assert.equal(last.body.info.terminationReason, 'user_stop');
      assert.equal(last.body.info.rewardInfo.rewardBreakdown.NL_ASSERTION, 1);
      assert.match(last.body.info.rewardInfo.nlAssertions[0].justification, /communicate-fallback/);
      assert.equal(last.body.reward, 1);
    } finally {
      await h.close();
      await fake.close();
    }
  });
});
