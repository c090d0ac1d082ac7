import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Autoreset, captureWarnings, Discrete, Env, OrderEnforcing, PassiveEnvChecker, RecordEpisodeStatistics, ResetNeeded, TimeLimit, type ResetResult, type StepResult } from '../../src/gym/index.ts';
import { CounterEnv } from './toy-envs.ts';

test('TimeLimit sets truncated (not terminated) at maxEpisodeSteps and resets its count', async () => {
  const env = new TimeLimit(new CounterEnv({ length: 100 }), 3);
  await env.reset();
  const flags: [boolean, boolean][] = [];
  for (let i = 0; i < 3; i++) {
    const [, , term, trunc] = await env.step(0);
    flags.push([term, trunc]);
  }
  assert.deepEqual(flags, [[false, false], [false, false], [false, true]]);
  assert.equal(env.elapsedSteps, 3);
  await env.reset();
  assert.equal(env.elapsedSteps, 0);
  const [, , , trunc] = await env.step(0);
  assert.equal(trunc, false);
  const both = new TimeLimit(new CounterEnv({ length: 2 }), 2);
  await both.reset();
  await both.step(0);
  const [, , term2, trunc2] = await both.step(0);
  assert.deepEqual([term2, trunc2], [true, true], 'terminated passes through alongside the limit');
  assert.throws(() => new TimeLimit(new CounterEnv(), 0), /positive integer/);
});

test('OrderEnforcing: step or render before reset raises ResetNeeded', async () => {
  const env = new OrderEnforcing(new CounterEnv({ renderMode: 'ansi' }));
  assert.equal(env.hasReset, false);
  await assert.rejects(() => env.step(0), (e: unknown) => e instanceof ResetNeeded && /before calling env.reset\(\)/.test((e as Error).message));
  await assert.rejects(() => env.render(), ResetNeeded);
  await env.reset();
  assert.equal(env.hasReset, true);
  await env.step(0);
  assert.equal(await env.render(), 't=1');
  const lax = new OrderEnforcing(new CounterEnv({ renderMode: 'ansi' }), { disableRenderOrderEnforcing: true });
  assert.equal(await lax.render(), 't=0');
});

test('RecordEpisodeStatistics adds episode {r, l, t} at episode end and fills the queues', async () => {
  const env = new RecordEpisodeStatistics(new CounterEnv({ length: 3 }), { bufferLength: 2 });
  for (let ep = 0; ep < 3; ep++) {
    await env.reset();
    let info: Record<string, unknown> = {};
    for (let i = 0; i < 3; i++) {
      const r = await env.step(ep + 1);
      info = r[4];
      if (i < 2) assert.equal('episode' in info, false);
    }
    const stats = info.episode as { r: number; l: number; t: number };
    assert.deepEqual(Object.keys(stats), ['r', 'l', 't']);
    assert.equal(stats.r, 3 * (ep + 1));
    assert.equal(stats.l, 3);
    assert.ok(stats.t >= 0);
    assert.equal(info.t, 3, 'the env’s own info is kept');
  }
  assert.deepEqual(env.returnQueue.toArray(), [6, 9], 'buffer keeps the last bufferLength returns');
  assert.deepEqual(env.lengthQueue.toArray(), [3, 3]);
  assert.equal(env.timeQueue.length, 2);
  assert.equal(env.episodeCount, 3);

  class Clash extends CounterEnv {
    override async step(a: number): Promise<StepResult<number>> {
      return [1, a, true, false, { episode: 1 }];
    }
  }
  const clash = new RecordEpisodeStatistics(new Clash());
  await clash.reset();
  await assert.rejects(() => clash.step(0), /already exist/);
});

test('Autoreset resets on the step after the episode ends, with reward 0 and no final obs', async () => {
  const env = new Autoreset(new CounterEnv({ length: 2 }));
  await env.reset();
  assert.deepEqual(await env.step(5), [1, 5, false, false, { t: 1 }]);
  assert.deepEqual(await env.step(5), [2, 5, true, false, { t: 2 }]);
  assert.deepEqual(await env.step(5), [0, 0, false, false, { reset: true }], 'action ignored, reset obs/info returned');
  assert.deepEqual(await env.step(5), [1, 5, false, false, { t: 1 }]);
});

test('PassiveEnvChecker warns on the first reset/step only and never alters data', async () => {
  class Sloppy extends Env<number, number> {
    readonly observationSpace = new Discrete(3);
    readonly actionSpace = new Discrete(2);
    override async reset(o = {}): Promise<ResetResult<number>> {
      await super.reset(o);
      return [7, {}];
    }
    async step(): Promise<StepResult<number>> {
      return [7, NaN, 0 as unknown as boolean, false, { k: 1 }];
    }
  }
  const env = new PassiveEnvChecker(new Sloppy());
  const { result, warnings } = await captureWarnings(async () => [await env.reset(), await env.step(0)]);
  assert.deepEqual(result[0], [7, {}]);
  assert.deepEqual(result[1], [7, NaN, 0, false, { k: 1 }], 'data passes through unchanged');
  assert.ok(warnings.some((w) => /reset\(\)` method is not within the observation space/.test(w)));
  assert.ok(warnings.some((w) => /step\(\)` method is not within the observation space/.test(w)));
  assert.ok(warnings.some((w) => /reward is a NaN/.test(w)));
  assert.ok(warnings.some((w) => /`terminated` signal to be a boolean/.test(w)));
  const again = await captureWarnings(async () => [await env.reset(), await env.step(0)]);
  assert.deepEqual(again.warnings, [], 'only the first reset and step are checked');

  class BadInfo extends Sloppy {
    override async reset(o = {}): Promise<ResetResult<number>> {
      await super.reset(o);
      return [0, null as unknown as Record<string, unknown>];
    }
  }
  await assert.rejects(() => new PassiveEnvChecker(new BadInfo()).reset(), /was not an object/);
  class NoSpace extends Sloppy {
    override readonly observationSpace = 3 as unknown as Discrete;
  }
  assert.throws(() => new PassiveEnvChecker(new NoSpace()), /does not inherit from Space/);
});
