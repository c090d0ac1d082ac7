import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  ActionWrapper,
  Box,
  Discrete,
  Env,
  ObservationWrapper,
  RewardWrapper,
  XoshiroRng,
  Wrapper,
  type ResetResult,
  type StepResult,
} from '../../src/gym/index.ts';
import { CounterEnv, RandomStartEnv } from './toy-envs.ts';

async function trajectory(env: Env<number, number>, seed: number, actions: number[]): Promise<unknown[]> {
  const out: unknown[] = [await env.reset({ seed })];
  for (const a of actions) out.push(await env.step(a));
  return out;
}

test('same seed gives the same trajectory; a different seed a different one', async () => {
  const actions = [1, 0, 1, 1, 0, 1];
  const a = await trajectory(new RandomStartEnv(), 5, actions);
  const b = await trajectory(new RandomStartEnv(), 5, actions);
  const c = await trajectory(new RandomStartEnv(), 6, actions);
  assert.deepEqual(a, b);
  assert.notDeepEqual(a, c);
});

test('reseeding rules: seed reseeds, no seed keeps the generator, first use seeds from entropy', async () => {
  const env = new RandomStartEnv();
  assert.equal(env.hasRng, false);
  const [o1] = await env.reset({ seed: 10 });
  assert.equal(env.npRandomSeed, 10);
  const [o2] = await env.reset();
  assert.equal(env.npRandomSeed, 10, 'reset without a seed keeps the seed and the generator');
  const ref = new XoshiroRng(10);
  assert.equal(o1, ref.integers(1000));
  assert.equal(o2, ref.integers(1000), 'the second reset continues the same stream');
  const [o3] = await env.reset({ seed: 10 });
  assert.equal(o3, o1);

  const fresh = new RandomStartEnv();
  const seed = fresh.npRandomSeed;
  assert.ok(Number.isSafeInteger(seed) && seed >= 0, 'never seeded → seeded from entropy on first use');
  assert.ok(fresh.npRandom.sameState(new XoshiroRng(seed)));

  fresh.npRandom = new XoshiroRng(3);
  assert.equal(fresh.npRandomSeed, -1, 'assigning a generator makes the seed unknown (-1)');
  assert.equal(fresh.rng, fresh.npRandom);
  await assert.rejects(() => fresh.reset({ seed: -2 }), /non-negative integer/);
});

test('renderMode is fixed at construction and validated against metadata', async () => {
  assert.equal(new CounterEnv().renderMode, null);
  const env = new CounterEnv({ renderMode: 'ansi' });
  await env.reset();
  assert.equal(await env.render(), 't=0');
  assert.throws(() => new CounterEnv({ renderMode: 'human' }), /Invalid renderMode "human".*"ansi"/);
  assert.throws(() => new RandomStartEnv({ renderMode: 'ansi' }), /supports no render modes/);
  assert.deepEqual(env.metadata.renderModes, ['ansi']);
  env.metadata = { renderModes: ['ansi'], renderFps: 30 };
  assert.equal(env.metadata.renderFps, 30, 'per-instance metadata override');
  assert.equal(new CounterEnv().metadata.renderFps, 1, 'the class metadata is unchanged');
});

test('close is idempotent, unwrapped and toString', async () => {
  const env = new CounterEnv();
  await env.close();
  await env.close();
  assert.equal(env.unwrapped, env);
  assert.equal(String(env), '<CounterEnv instance>');
});

class Double extends ObservationWrapper<number, number, number> {
  constructor(env: Env<number, number>) {
    super(env);
    this.observationSpace = new Discrete(20);
  }
  observation(obs: number): number {
    return obs * 2;
  }
}
class PlusOne extends ActionWrapper<number, number, number> {
  action(a: number): number {
    return a + 1;
  }
}
class Neg extends RewardWrapper<number, number> {
  reward(r: number): number {
    return -r;
  }
}

test('Observation/Action/Reward wrappers transform and forward', async () => {
  const base = new CounterEnv({ length: 5 });
  const env = new Neg(new PlusOne(new Double(base)));
  const [obs] = (await env.reset({ seed: 1 })) as ResetResult<number>;
  assert.equal(obs, 0);
  const [o, r, term, trunc, info] = (await env.step(2)) as StepResult<number>;
  assert.deepEqual([o, r, term, trunc, info], [2, -3, false, false, { t: 1 }]);
  assert.ok(env.observationSpace.equals(new Discrete(20)), 'overridden space');
  assert.ok(env.actionSpace.equals(new Discrete(10)), 'forwarded space');
  assert.equal(env.unwrapped, base);
  assert.equal(env.npRandomSeed, 1, 'npRandom is the wrapped env’s');
  assert.equal(String(env), '<Neg<PlusOne<Double<CounterEnv instance>>>>');
});

test('wrapper attribute forwarding: get/set/has', async () => {
  const base = new CounterEnv({ length: 4 });
  const env = new Wrapper(new Wrapper(base));
  assert.equal(env.getWrapperAttr('length'), 4);
  assert.ok(env.hasWrapperAttr('length') && !env.hasWrapperAttr('missing'));
  assert.throws(() => env.getWrapperAttr('missing'), /no attribute "missing"/);
  env.setWrapperAttr('t', 7);
  assert.equal(base.t, 7, 'set on the env that has the attribute');
  env.setWrapperAttr('newAttr', 1);
  assert.equal((env as unknown as Record<string, unknown>).newAttr, 1, 'force sets it on the outermost wrapper');
  assert.equal(env.setWrapperAttr('other', 1, { force: false }), false);
  assert.throws(() => new Wrapper(5 as unknown as Env), /expected an Env/);
});

test('a Box-observation env works through the same API', async () => {
  class Pos extends Env<Float32Array, number> {
    readonly observationSpace = new Box(-1, 1, { shape: [2] });
    readonly actionSpace = new Discrete(2);
    override async reset(o = {}): Promise<ResetResult<Float32Array>> {
      await super.reset(o);
      return [this.observationSpace.sample(), {}];
    }
    async step(): Promise<StepResult<Float32Array>> {
      return [new Float32Array(2), 0, true, false, {}];
    }
  }
  const env = new Pos();
  const [obs] = await env.reset({ seed: 0 });
  assert.ok(env.observationSpace.contains(obs));
});
