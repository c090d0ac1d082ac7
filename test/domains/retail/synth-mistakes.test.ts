import { strict as assert } from 'node:assert';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { Command } from 'commander';
import { register as registerRollout } from '../../../src/cli/rollout.ts';
import { createRetailDomain } from '../../../src/domains/retail/domain.ts';
import { EpisodeRunner, type Trajectory } from '../../../src/domains/retail/synth/episode.ts';
import { ExpertAgent } from '../../../src/domains/retail/synth/expert.ts';
import { MISTAKE_KINDS, type MistakeKind } from '../../../src/domains/retail/synth/expert-mistakes.ts';
import { makeAgent, runRollouts } from '../../../src/domains/retail/synth/rollouts.ts';
import type { TaskFamily } from '../../../src/domains/retail/synth/scenario.ts';
import { generateTasks, type SynthTask } from '../../../src/domains/retail/synth/task-gen.ts';
import { generateTaskSet, writeTaskSet } from '../../../src/domains/retail/synth/taskset.ts';
import { ScriptedRetailUser } from '../../../src/domains/retail/synth/user-sim.ts';
import { generateWorld } from '../../../src/domains/retail/synth/world.ts';

const world = generateWorld(31);
const domain = createRetailDomain({ db: world, policy: 'policy' });

/** Tasks of some families on the shared world, each run in its own runner (the runner's task list is fixed). */
function tasksOf(seed: number, count: number, families?: readonly TaskFamily[]): { tasks: SynthTask[]; runner: EpisodeRunner } {
  const tasks = generateTasks(world, seed, { count, ...(families ? { families } : {}) }).tasks;
  return { tasks, runner: new EpisodeRunner({ domain, tasks, user: new ScriptedRetailUser() }) };
}

const withoutNotes = (t: Trajectory) => {
  const { mistakes: _m, mistakeOpportunities: _o, ...rest } = t;
  return rest;
};

describe('the expert mistake knob', () => {
  it('rate 0 reproduces the perfect expert exactly (200 tasks, difficulty 1–3, every family: all reward 1)', async () => {
    const { tasks, runner } = tasksOf(101, 200);
    const perfect = new ExpertAgent();
    const rate0 = new ExpertAgent({ mistakes: { rate: 0 } });
    let opportunities = 0;
    for (const [i, task] of tasks.entries()) {
      const a = await runner.run(perfect, task.id, 1000 + i);
      const b = await runner.run(rate0, task.id, 1000 + i);
      assert.equal(a.reward, 1, `${task.id} (${task.longrun.family})`);
      assert.equal('mistakes' in a, false, 'the perfect expert keeps no notes');
      assert.deepEqual(b.mistakes, []);
      assert.deepEqual(withoutNotes(b), a, task.id);
      opportunities += b.mistakeOpportunities!;
    }
    assert.ok(opportunities > 100, `rate 0 still passes decision points (${opportunities}), it just never errs`);
    await runner.close();
  });

  /** Where each kind applies: families whose tasks give it a decision point. */
  const WHERE: Record<MistakeKind, TaskFamily[]> = {
    cancel_reason: ['cancel'],
    wrong_order: ['cancel', 'modify_address', 'modify_payment'],
    payment_method: ['modify_payment', 'modify_items', 'exchange'],
    refund_method: ['return'],
    item_variant: ['modify_items', 'exchange'],
    return_item: ['return'],
    address_target: ['modify_address', 'multi'],
    forbidden_act: ['forbidden'],
    withhold_info: ['info', 'forbidden'],
  };

  for (const kind of MISTAKE_KINDS) {
    it(`${kind}: at rate 1 every episode with the mistake recorded scores below 1, the others score 1`, async () => {
      const { tasks, runner } = tasksOf(200 + MISTAKE_KINDS.indexOf(kind), 120, WHERE[kind]);
      const agent = new ExpertAgent({ mistakes: { rate: 1, kinds: [kind] } });
      const details: string[] = [];
      const clean: number[] = [];
      for (const [i, task] of tasks.entries()) {
        const t = await runner.run(agent, task.id, i);
        const made = t.mistakes!;
        assert.ok(made.length <= t.mistakeOpportunities!);
        if (made.length === 0) {
          assert.equal(t.mistakeOpportunities, 0, 'at rate 1 every decision point errs');
          clean.push(t.reward);
          continue;
        }
        for (const m of made) assert.equal(m.kind, kind);
        assert.ok(t.reward < 1, `${task.id} (${task.longrun.family}): ${JSON.stringify(made)} kept reward ${t.reward}`);
        details.push(...made.map((m) => m.detail));
      }
      assert.ok(details.length >= 10, `${kind} applied in only ${details.length} of ${tasks.length} tasks`);
      assert.ok(clean.every((r) => r === 1), 'episodes without a mistake keep reward 1');
      if (kind === 'forbidden_act') {
        assert.ok(details.some((d) => /another user/.test(d)), 'acts on another user\'s order');
        assert.ok(details.some((d) => /recorded as 'no longer needed'/.test(d)), 'cancels for an invalid reason');
      }
      if (kind === 'withhold_info') {
        assert.ok(details.some((d) => d.startsWith('answered without')), 'withholds an answer');
        assert.ok(details.some((d) => d.startsWith('refused without')), 'refuses without the blocking fact');
      }
      if (kind === 'address_target') assert.ok(details.some((d) => /user's default address instead/.test(d)));
      await runner.close();
    });
  }

  it('the same seed gives the same trajectory, mistakes included; another seed other mistakes', async () => {
    const { tasks, runner } = tasksOf(300, 80);
    const differs: boolean[] = [];
    for (const [i, task] of tasks.entries()) {
      const a = await runner.run(new ExpertAgent({ mistakes: { rate: 0.5 } }), task.id, 7 + i);
      const b = await runner.run(new ExpertAgent({ mistakes: { rate: 0.5 } }), task.id, 7 + i);
      assert.deepEqual(b, a, task.id);
      const c = await runner.run(new ExpertAgent({ mistakes: { rate: 0.5 } }), task.id, 70_000 + i);
      differs.push(JSON.stringify(c.mistakes) !== JSON.stringify(a.mistakes));
    }
    assert.ok(differs.filter(Boolean).length >= 10, 'the seed drives the mistakes');
    await runner.close();
  });

  it('over many decision points the mistake frequency is near the rate', async () => {
    const { tasks } = tasksOf(400, 700);
    for (const rate of [0.3, 0.7]) {
      const summary = await runRollouts({ domain, tasks, agent: makeAgent('expert', { mistakeRate: rate }), user: new ScriptedRetailUser(), seed: 9 });
      const m = summary.mistakes!;
      assert.ok(m.opportunities >= 500, `${m.opportunities} decision points`);
      const freq = m.count / m.opportunities;
      const se = Math.sqrt((rate * (1 - rate)) / m.opportunities); // binomial standard error, ≈ 0.02 here
      assert.ok(Math.abs(freq - rate) < 4 * se, `rate ${rate}: ${m.count}/${m.opportunities} = ${freq.toFixed(3)}`);
      assert.deepEqual(Object.keys(m.byKind).sort(), [...MISTAKE_KINDS].sort(), 'every kind occurs over all families');
      assert.ok(summary.metrics.avgReward < 1 - rate / 2, `mean reward ${summary.metrics.avgReward} at rate ${rate}`);
    }
  });

  it('refuses bad options with clear errors', () => {
    for (const rate of [-0.1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) assert.throws(() => new ExpertAgent({ mistakes: { rate } }), /mistake rate must be a number in \[0, 1\]/);
    assert.throws(() => new ExpertAgent({ mistakes: { rate: 0.2, kinds: ['nope' as MistakeKind] } }), /Unknown mistake kind 'nope' \(known: cancel_reason, /);
    assert.throws(() => new ExpertAgent({ mistakes: { rate: 0.2, kinds: [] } }), /at least one kind/);
    assert.throws(() => makeAgent('expert', { mistakeRate: 0.2, mistakeKinds: ['cancel_reason', 'typo'] }), /Unknown mistake kind 'typo'/);
    assert.throws(() => makeAgent('expert', { mistakeKinds: ['cancel_reason'] }), /mistakeKinds needs a mistakeRate/);
    assert.throws(() => makeAgent('random', { mistakeRate: 0.2 }), /knob of the 'expert' agent/);
    assert.ok(makeAgent('expert', { mistakeRate: 0.2, mistakeKinds: ['cancel_reason', 'cancel_reason'] }) instanceof ExpertAgent);
  });
});

describe('longrun rollout --mistake-rate', () => {
  const tmp = mkdtempSync(join(tmpdir(), 'longrun-mistakes-'));
  after(() => rmSync(tmp, { recursive: true, force: true }));
  const dir = join(tmp, 'set');
  writeTaskSet(dir, generateTaskSet({ worldSeed: 5, taskSeed: 6, count: 30, families: ['cancel'], sizes: { products: 30, users: 80, orders: 200 } }), 'policy');

  async function longrun(args: string[]): Promise<string[]> {
    const program = new Command().exitOverride();
    registerRollout(program);
    const lines: string[] = [];
    const log = console.log;
    console.log = (...xs: unknown[]) => lines.push(xs.join(' '));
    try {
      await program.parseAsync(['node', 'longrun', 'rollout', '--tasks', dir, '--no-progress', ...args]);
    } finally {
      console.log = log;
    }
    return lines;
  }

  it('writes the mistakes into each trajectory and summarises them', async () => {
    const out = join(tmp, 'weak.jsonl');
    const text = (await longrun(['--agent', 'expert', '--out', out, '--mistake-rate', '1', '--mistake-kinds', 'cancel_reason'])).join('\n');
    assert.match(text, /expert mistakes 30 at 30 decision points \(100\.0%\): cancel_reason=30/);
    assert.match(text, /mean reward 0\.0000/);
    const rows = readFileSync(out, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Trajectory);
    assert.equal(rows.length, 30);
    for (const r of rows) {
      assert.equal(r.mistakes!.length, 1);
      assert.equal(r.mistakes![0]!.kind, 'cancel_reason');
      assert.equal(r.reward, 0);
    }
  });

  it('rejects bad values with the option named', async () => {
    const out = join(tmp, 'x.jsonl');
    await assert.rejects(longrun(['--out', out, '--mistake-rate', '1.5']), /--mistake-rate must be a number in \[0, 1\], got '1.5'/);
    await assert.rejects(longrun(['--out', out, '--mistake-rate', 'abc']), /--mistake-rate must be a number in \[0, 1\]/);
    await assert.rejects(longrun(['--out', out, '--mistake-rate', '0.2', '--mistake-kinds', 'cancel_reason,typo']), /--mistake-kinds: Unknown mistake kind 'typo' \(known: /);
    await assert.rejects(longrun(['--out', out, '--mistake-kinds', 'cancel_reason']), /--mistake-kinds needs --mistake-rate/);
    await assert.rejects(longrun(['--out', out, '--agent', 'random', '--mistake-rate', '0.2']), /--mistake-rate applies to --agent expert only/);
  });
});
