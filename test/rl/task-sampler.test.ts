import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { XoshiroRng } from '../../src/gym/rng.ts';
import { parseTrainerConfig, type TrainerConfigInput } from '../../src/rl/config.ts';
import { LearnableTaskSampler } from '../../src/rl/task-sampler.ts';
import { GrpoTrainer } from '../../src/rl/trainer.ts';
import { createToySetup } from '../../src/recipes/toy/toy-task.ts';

const CONFIG = { floor: 0.1, decay: 0.8, prior: 2 };
// 30 tasks of kind "never" (always all-0 groups), 30 "mixed", 40 "always" (always all-1).
const tasks = [...Array.from({ length: 30 }, (_, i) => `never-${i}`), ...Array.from({ length: 30 }, (_, i) => `mixed-${i}`), ...Array.from({ length: 40 }, (_, i) => `always-${i}`)];
const kind = (id: string) => id.split('-')[0];

function counts(ids: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const id of ids) out[kind(id)] = (out[kind(id)] ?? 0) + 1;
  return out;
}

describe('learnable task sampler', () => {
  it('with no evidence it samples kinds by their share of the tasks, and a kind\'s tasks come without repeats until all were drawn', () => {
    const s = new LearnableTaskSampler(tasks, kind, CONFIG);
    const rng = new XoshiroRng(5);
    const c = counts(s.next(10_000, rng));
    assert.ok(Math.abs(c.never / 10_000 - 0.3) < 0.02 && Math.abs(c.mixed / 10_000 - 0.3) < 0.02 && Math.abs(c.always / 10_000 - 0.4) < 0.02, JSON.stringify(c));

    const one = new LearnableTaskSampler(tasks, () => undefined, CONFIG); // no kinds: one key, a shuffled pass
    const pass = one.next(100, new XoshiroRng(1));
    assert.deepEqual([...pass].sort(), [...tasks].sort());
    assert.notDeepEqual(pass, tasks);
  });

  it('moves the draws to the kind whose groups are informative, and keeps drawing the others at the floor', () => {
    const s = new LearnableTaskSampler(tasks, kind, CONFIG);
    const rng = new XoshiroRng(7);
    for (let step = 0; step < 10; step++) {
      const drawn = s.next(16, rng);
      s.update(drawn.map((taskId) => ({ taskId, informative: kind(taskId) === 'mixed' })));
    }
    const e = s.estimates();
    assert.ok(e.mixed > 0.85 && e.never < 0.25 && e.always < 0.25, JSON.stringify(e));
    const c = counts(s.next(5_000, rng));
    assert.ok(c.mixed / 5_000 > 0.55, JSON.stringify(c));
    assert.ok(c.never > 0 && c.always > 0, 'every kind stays in play');
    // An unknown task id (not a training task) is ignored.
    s.update([{ taskId: 'elsewhere-1', informative: true }]);
  });

  it('power sharpens the preference for the informative kind', () => {
    const share = (config: typeof CONFIG & { power?: number }) => {
      const s = new LearnableTaskSampler(tasks, kind, config);
      const rng = new XoshiroRng(7);
      for (let step = 0; step < 10; step++) {
        const drawn = s.next(16, rng);
        s.update(drawn.map((taskId) => ({ taskId, informative: kind(taskId) === 'mixed' })));
      }
      return counts(s.next(5_000, rng)).mixed / 5_000;
    };
    const linear = share(CONFIG), squared = share({ ...CONFIG, floor: 0.02, power: 2 });
    assert.ok(squared > linear + 0.15, `power 2, floor 0.02: ${squared}; power 1, floor 0.1: ${linear}`);
    assert.throws(() => new LearnableTaskSampler(tasks, kind, { ...CONFIG, power: 0 }), /power must be in \(0, 8\]/);
  });

  it('cost divides a kind\'s weight by its relative tokens per group: equally informative kinds, the cheaper drawn more', () => {
    // "never" and "mixed" both informative half the time; "mixed" groups cost three times the tokens of "never".
    const draw = (cost: number) => {
      const s = new LearnableTaskSampler(tasks, kind, { ...CONFIG, cost });
      const rng = new XoshiroRng(3);
      for (let step = 0; step < 12; step++) {
        const drawn = s.next(16, rng);
        s.update(drawn.map((taskId, i) => ({ taskId, informative: kind(taskId) !== 'always' && (i + step) % 2 === 0, tokens: kind(taskId) === 'mixed' ? 3000 : 1000 })));
      }
      return { c: counts(s.next(5_000, rng)), rel: s.relativeCosts() };
    };
    const plain = draw(0), per = draw(1);
    assert.ok(Math.abs(plain.c.never / plain.c.mixed - 1) < 0.2, `cost 0 ignores length: ${JSON.stringify(plain.c)}`);
    assert.ok(per.c.never / per.c.mixed > 2.3 && per.c.never / per.c.mixed < 3.9, `cost 1: about 3 to 1, ${JSON.stringify(per.c)}`);
    assert.ok(Math.abs(per.rel.mixed / per.rel.never - 3) < 1e-9, JSON.stringify(per.rel));
    // Before any tokens are counted every kind costs 1; older states without token counts load and go on.
    assert.deepEqual(new LearnableTaskSampler(tasks, kind, { ...CONFIG, cost: 1 }).relativeCosts(), { always: 1, mixed: 1, never: 1 });
    const s = new LearnableTaskSampler(tasks, kind, { ...CONFIG, cost: 1 });
    const { tokens: _dropped, ...old } = s.saveState();
    s.loadState(old);
    s.update([{ taskId: 'never-1', informative: true, tokens: 500 }]);
    assert.equal(s.relativeCosts().never, 1);
    assert.throws(() => new LearnableTaskSampler(tasks, kind, { ...CONFIG, cost: -1 }), /cost must be in \[0, 4\]/);
  });

  it('is seeded, and its saved state continues the same draws', () => {
    const run = (split?: number) => {
      let s = new LearnableTaskSampler(tasks, kind, CONFIG);
      const rng = new XoshiroRng(11);
      const out: string[] = [];
      for (let step = 0; step < 6; step++) {
        if (step === split) {
          const saved = JSON.parse(JSON.stringify(s.saveState()));
          s = new LearnableTaskSampler(tasks, kind, CONFIG);
          s.loadState(saved);
        }
        const drawn = s.next(8, rng);
        out.push(...drawn);
        s.update(drawn.map((taskId, i) => ({ taskId, informative: (i + step) % 3 === 0 })));
      }
      return out;
    };
    assert.deepEqual(run(3), run());
    assert.deepEqual(run(), run());
  });

  it('refuses bad settings and a state from another task set', () => {
    assert.throws(() => new LearnableTaskSampler(tasks, kind, { ...CONFIG, floor: 0 }), /floor must be > 0/);
    assert.throws(() => new LearnableTaskSampler(tasks, kind, { ...CONFIG, decay: 1.5 }), /decay must be in \(0, 1\]/);
    assert.throws(() => new LearnableTaskSampler(tasks, kind, { ...CONFIG, prior: -1 }), /prior must be > 0/);
    const saved = new LearnableTaskSampler(tasks, kind, CONFIG).saveState();
    const other = new LearnableTaskSampler(tasks.slice(0, 60), kind, CONFIG);
    assert.throws(() => other.loadState(saved), /the task set changed/);
    const s = new LearnableTaskSampler(tasks, kind, CONFIG);
    assert.throws(() => s.loadState({ ...saved, cursors: [0] }), /malformed/);
    assert.throws(() => s.loadState({ ...saved, orders: [[1, 2], [], []] }), /malformed/);
  });
});

describe('data.sampling.mode: learnable in the GRPO trainer', () => {
  const raw = (steps: number, dir?: string): TrainerConfigInput => ({
    data: { trainBatchSize: 2, sampling: { mode: 'learnable' } },
    rollout: { n: 4, maxTurns: 3, maxResponseTokens: 40, concurrency: 4 },
    trainer: { totalSteps: steps, seed: 4, testFreq: 0, saveFreq: 2, checkpointDir: dir, metricsFile: dir ? join(dir, 'metrics.jsonl') : undefined },
  });
  const make = (config: TrainerConfigInput) => {
    const s = createToySetup();
    const family = (id: string) => (Number(id.split('-')[1]) % 2 === 0 ? 'even' : 'odd');
    return new GrpoTrainer({ config: parseTrainerConfig(config), policy: s.policy, engine: s.engine, format: s.format, makeEnv: s.makeEnv, trainTasks: s.taskIds, padId: s.padId, taskFamily: family });
  };
  const strip = (m: Record<string, number>) => Object.fromEntries(Object.entries(m).filter(([k]) => !k.startsWith('timing/') && !k.startsWith('perf/')));

  it('logs its estimates per kind and resumes exactly from a checkpoint', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-sampler-'));
    try {
      const straight = make(raw(4));
      await straight.fit();
      assert.ok(straight.history.every((m) => typeof m['sampler/informative/even'] === 'number' && typeof m['sampler/informative/odd'] === 'number'));
      await make(raw(2, dir)).fit();
      const resumed = make(raw(4, dir));
      await resumed.fit();
      assert.equal(resumed.step, 4);
      assert.deepEqual(resumed.history.map(strip), straight.history.map(strip));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('with cost, logs each kind\'s relative tokens per group from the step\'s episodes', async () => {
    const t = make({ ...raw(2), data: { trainBatchSize: 2, sampling: { mode: 'learnable', cost: 1 } } });
    await t.fit();
    const last = t.history[1];
    const costs = ['even', 'odd'].map((k) => last[`sampler/cost/${k}`]).filter((v) => v !== undefined);
    assert.ok(costs.length >= 1 && costs.every((v) => v > 0 && Number.isFinite(v)), JSON.stringify(last));
    assert.equal(parseTrainerConfig(raw(1)).data.sampling.cost, 0, 'length ignored by default');
  });

  it('the default stays the shuffled passes (no sampler metrics)', async () => {
    const t = make({ ...raw(1), data: { trainBatchSize: 2 } });
    await t.fit();
    assert.ok(!Object.keys(t.history[0]).some((k) => k.startsWith('sampler/')));
    assert.throws(() => parseTrainerConfig({ ...raw(1), data: { trainBatchSize: 2, sampling: { mode: 'hardest' } } }), /sampling/);
  });
});
