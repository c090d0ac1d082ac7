import { strict as assert } from 'node:assert';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Command } from 'commander';
import { register as registerGen } from '../../../src/cli/gen.ts';
import { register as registerRollout } from '../../../src/cli/rollout.ts';
import { loadRetailTaskSet } from '../../../src/domains/retail/register.ts';
import { loadRetailDb } from '../../../src/domains/retail/load.ts';
import { readTaskSet } from '../../../src/domains/retail/synth/taskset.ts';
import { EpisodeRunner } from '../../../src/domains/retail/synth/episode.ts';
import { makeSynthRetailEnv } from '../../../src/domains/retail/synth/env.ts';
import { ExpertAgent } from '../../../src/domains/retail/synth/expert.ts';
import { ScriptedRetailUser } from '../../../src/domains/retail/synth/user-sim.ts';
import { TAU2_RETAIL_DIR } from '../../helpers/paths.ts';

const tmp = mkdtempSync(join(tmpdir(), 'longrun-synth-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

async function longrun(args: string[]): Promise<string[]> {
  const program = new Command().exitOverride();
  registerGen(program);
  registerRollout(program);
  const lines: string[] = [];
  const log = console.log;
  console.log = (...xs: unknown[]) => lines.push(xs.join(' '));
  try {
    await program.parseAsync(['node', 'longrun', ...args]);
  } finally {
    console.log = log;
  }
  return lines;
}

const SMALL = ['--products', '30', '--users', '80', '--orders', '200', '--policy', join(TAU2_RETAIL_DIR, 'policy.md')];

describe('longrun gen / rollout', () => {
  const dir = join(tmp, 'set');

  it('gen tasks writes a τ²-style folder that both the synthetic and the τ² env loaders read', async () => {
    await longrun(['gen', 'tasks', '--seed', '4', '--count', '22', '--out', dir, ...SMALL]);
    for (const f of ['db.json', 'tasks.json', 'split_tasks.json', 'policy.md', 'synth.json']) assert.ok(existsSync(join(dir, f)), f);
    const set = readTaskSet(dir);
    assert.equal(set.tasks.length, 22);
    assert.equal(set.scenarios.size, 22);
    assert.equal(set.meta?.worldSeed, 4);
    const tau2 = loadRetailTaskSet({ dataDir: dir, version: 'v1', split: 'train' });
    assert.equal(tau2.tasks.length, 22);
    // Through the τ² loader the tasks lose their `longrun` field; the scripted user takes the scenarios as a side map.
    const runner = new EpisodeRunner({ domain: tau2.domain, tasks: tau2.tasks, user: new ScriptedRetailUser(set.scenarios) });
    for (const task of tau2.tasks.slice(0, 11)) assert.equal((await runner.run(new ExpertAgent(), task.id, 1)).reward, 1, task.id);
    const again = join(tmp, 'again');
    await longrun(['gen', 'tasks', '--seed', '4', '--count', '22', '--out', again, ...SMALL]);
    for (const f of ['db.json', 'tasks.json']) assert.equal(readFileSync(join(again, f), 'utf8'), readFileSync(join(dir, f), 'utf8'), `${f} is byte-identical`);
  });

  it('makeSynthRetailEnv serves the folder as a gym env with the scripted user', async () => {
    const env = makeSynthRetailEnv(dir);
    const [obs, info] = await env.reset({ seed: 1, options: { taskId: 'train_0' } });
    assert.equal(info.taskId, 'train_0');
    assert.equal(obs.messages[0]!.role, 'user');
    const [, reward, terminated] = await env.step({ content: 'I am sorry, I cannot help. Goodbye. ###STOP###' });
    assert.equal(terminated, true);
    assert.equal(typeof reward, 'number');
    await env.close();
  });

  it('rollout writes one trajectory per episode and a summary with pass^k', async () => {
    const out = join(tmp, 'expert.jsonl');
    const lines = await longrun(['rollout', '--agent', 'expert', '--user', 'scripted', '--tasks', join(dir, 'tasks.json'), '--out', out, '--trials', '2', '--no-progress']);
    const text = lines.join('\n');
    assert.match(text, /mean reward 1\.0000/);
    assert.match(text, /pass\^2=1\.0000/);
    const rows = readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
    assert.equal(rows.length, 44);
    for (const r of rows) {
      assert.equal(r.reward, 1);
      assert.deepEqual(r.rewardBreakdown, { DB: 1, COMMUNICATE: 1 });
      const messages = r.messages as { role: string; toolCalls?: unknown }[];
      assert.ok(messages.some((m) => m.role === 'tool') || (r.family === 'failed_auth'));
      assert.ok(messages.some((m) => m.role === 'user'));
    }
  });

  it('gen splits uses a different world seed per split; bad arguments give clear errors', async () => {
    const out = join(tmp, 'splits');
    await longrun(['gen', 'splits', '--seed', '3', '--train', '4', '--validation', '2', '--test', '2', '--out', out, ...SMALL]);
    const worldFile = join(tmp, 'world.json');
    await longrun(['gen', 'world', '--seed', '9', '--out', worldFile, '--products', '12', '--users', '30', '--orders', '50']);
    assert.equal(loadRetailDb(worldFile).orders.size, 50);
    const seeds = ['train', 'validation', 'test'].map((s) => (JSON.parse(readFileSync(join(out, s, 'synth.json'), 'utf8')) as { worldSeed: number }).worldSeed);
    assert.equal(new Set(seeds).size, 3);
    await assert.rejects(longrun(['gen', 'tasks', '--seed', 'x', '--count', '1', '--out', out]), /--seed must be an integer/);
    await assert.rejects(longrun(['gen', 'tasks', '--seed', '1', '--count', '1', '--out', out, '--families', 'bogus']), /Unknown task family/);
    await assert.rejects(longrun(['rollout', '--agent', 'oracle', '--tasks', dir, '--out', join(tmp, 'x.jsonl')]), /Unknown agent/);
    await assert.rejects(longrun(['rollout', '--tasks', TAU2_RETAIL_DIR, '--out', join(tmp, 'x.jsonl')]), /longrun' scenario/);
  });
});
