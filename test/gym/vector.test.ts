import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  AlreadyPendingCallError,
  AsyncVectorEnv,
  batchSpace,
  Box,
  ClosedEnvironmentError,
  concatenate,
  Dict,
  Discrete,
  MultiDiscrete,
  NoAsyncCallError,
  SyncVectorEnv,
  Text,
  Tuple,
  unbatch,
  type AutoresetMode,
  type Env,
} from '../../src/gym/index.ts';
import { CounterEnv, RandomStartEnv } from './toy-envs.ts';

type Ctor = typeof SyncVectorEnv | typeof AsyncVectorEnv;
const KINDS: [string, Ctor][] = [
  ['sync', SyncVectorEnv],
  ['async', AsyncVectorEnv],
];

/** Two counters whose episodes last 1 and 2 steps; reward = action, obs = steps so far. */
function counters(Kind: Ctor, mode: AutoresetMode): SyncVectorEnv | AsyncVectorEnv {
  return new Kind([() => new CounterEnv({ length: 1 }), () => new CounterEnv({ length: 2 })], { autoresetMode: mode });
}

const step = (obs: number[], rew: number[], term: boolean[], trunc: boolean[], info: Record<string, unknown>) => [Int32Array.from(obs), Float64Array.from(rew), term, trunc, info];

for (const [kind, Kind] of KINDS) {
  test(`${kind}: next-step autoreset (hand-traced)`, async () => {
    const v = counters(Kind, 'next-step');
    assert.equal(v.metadata.autoresetMode, 'next-step');
    assert.deepEqual(await v.reset(), [Int32Array.from([0, 0]), { reset: [true, true], _reset: [true, true] }]);
    // env0 ends at t=1; env1 continues
    assert.deepEqual(await v.step([1, 2]), step([1, 1], [1, 2], [true, false], [false, false], { t: [1, 1], _t: [true, true] }));
    // env0 is reset (action ignored, reward 0, flags false); env1 ends at t=2
    assert.deepEqual(await v.step([1, 2]), step([0, 2], [0, 2], [false, true], [false, false], { reset: [true, false], _reset: [true, false], t: [0, 2], _t: [false, true] }));
    // env0 ends again; env1 is reset
    assert.deepEqual(await v.step([3, 4]), step([1, 0], [3, 0], [true, false], [false, false], { t: [1, 0], _t: [true, false], reset: [false, true], _reset: [false, true] }));
    await v.close();
  });

  test(`${kind}: same-step autoreset with final_obs/final_info (hand-traced)`, async () => {
    const v = counters(Kind, 'same-step');
    await v.reset();
    // env0 ends and is reset in the same step: its obs is the new episode's 0, final_obs holds 1
    assert.deepEqual(
      await v.step([1, 2]),
      step([0, 1], [1, 2], [true, false], [false, false], {
        final_obs: [1, null],
        _final_obs: [true, false],
        final_info: { t: [1, 0], _t: [true, false] },
        _final_info: [true, false],
        reset: [true, false],
        _reset: [true, false],
        t: [0, 1],
        _t: [false, true],
      }),
    );
    assert.deepEqual(
      await v.step([3, 4]),
      step([0, 0], [3, 4], [true, true], [false, false], {
        final_obs: [1, 2],
        _final_obs: [true, true],
        final_info: { t: [1, 2], _t: [true, true] },
        _final_info: [true, true],
        reset: [true, true],
        _reset: [true, true],
      }),
    );
    await v.close();
  });

  test(`${kind}: disabled autoreset with reset_mask (hand-traced)`, async () => {
    const v = counters(Kind, 'disabled');
    await v.reset();
    assert.deepEqual(await v.step([1, 2]), step([1, 1], [1, 2], [true, false], [false, false], { t: [1, 1], _t: [true, true] }));
    await assert.rejects(() => v.step([1, 2]), /Sub-envs \[0\] have ended.*reset_mask/);
    // only env0 is reset; env1 keeps its observation
    assert.deepEqual(await v.reset({ options: { reset_mask: [true, false] } }), [Int32Array.from([0, 1]), { reset: [true, false], _reset: [true, false] }]);
    assert.deepEqual(await v.step([5, 6]), step([1, 2], [5, 6], [true, true], [false, false], { t: [1, 2], _t: [true, true] }));
    await assert.rejects(() => v.reset({ options: { reset_mask: [false, false] } }), /at least one true/);
    await assert.rejects(() => v.reset({ options: { reset_mask: [true] } }), /length numEnvs=2/);
    await assert.rejects(() => v.reset({ options: { reset_mask: [1, 0] as unknown as boolean[] } }), /booleans/);
    assert.deepEqual((await v.reset())[0], Int32Array.from([0, 0]), 'a reset without a mask resets all');
    await v.close();
  });
}

test('seeding: one seed gives seed+i per sub-env; a list gives one seed each', async () => {
  const v = new SyncVectorEnv([() => new RandomStartEnv(), () => new RandomStartEnv(), () => new RandomStartEnv()]);
  const [obs] = await v.reset({ seed: 40 });
  const single = await Promise.all([40, 41, 42].map(async (s) => (await new RandomStartEnv().reset({ seed: s }))[0]));
  assert.deepEqual(Array.from(obs as Int32Array), single);
  const [obs2] = await v.reset({ seed: [42, null, 40] });
  assert.equal((obs2 as Int32Array)[0], single[2]);
  assert.equal((obs2 as Int32Array)[2], single[0]);
  assert.deepEqual(v.envs.map((e) => e.npRandomSeed), [42, 41, 40], 'a null seed keeps the sub-env generator');
  await assert.rejects(() => v.reset({ seed: [1, 2] }), /length must match numEnvs=3/);
  await assert.rejects(() => v.reset({ seed: -1 }), /non-negative/);
});

test('async and sync give identical seeded batches', async () => {
  const run = async (Kind: Ctor) => {
    const v = new Kind([0, 1, 2, 3].map(() => () => new RandomStartEnv()), { autoresetMode: 'same-step' });
    const out: unknown[] = [await v.reset({ seed: 3 })];
    for (let i = 0; i < 5; i++) out.push(await v.step([i % 2, 1, 0, 1]));
    await v.close();
    return out;
  };
  assert.deepEqual(await run(AsyncVectorEnv), await run(SyncVectorEnv));
});

test('AsyncVectorEnv steps sub-envs concurrently; SyncVectorEnv one at a time', async () => {
  for (const [Kind, expected] of [
    [AsyncVectorEnv, 4],
    [SyncVectorEnv, 1],
  ] as const) {
    const tracker = { inFlight: 0, maxInFlight: 0 };
    const v = new Kind([0, 1, 2, 3].map(() => () => new CounterEnv({ length: 5, delayMs: 5, tracker })));
    await v.reset();
    await v.step([0, 0, 0, 0]);
    assert.equal(tracker.maxInFlight, expected, Kind.name);
    await v.close();
  }
});

test('AsyncVectorEnv split API: pending and missing calls, timeouts, errors', async () => {
  const v = new AsyncVectorEnv([() => new CounterEnv({ length: 3, delayMs: 30 }), () => new CounterEnv({ length: 3 })]);
  await assert.rejects(() => v.stepWait(), NoAsyncCallError);
  v.resetAsync({ seed: 1 });
  assert.throws(() => v.stepAsync([0, 0]), AlreadyPendingCallError);
  await v.resetWait();
  v.stepAsync([1, 1]);
  await assert.rejects(() => v.stepWait({ timeoutMs: 1 }), /timed out/);
  v.stepAsync([1, 1]);
  const [, rewards] = await v.stepWait();
  assert.deepEqual(Array.from(rewards), [1, 1]);

  class Boom extends CounterEnv {
    override async step(): Promise<never> {
      throw new Error(`boom ${this.length}`);
    }
  }
  const bad = new AsyncVectorEnv([() => new CounterEnv(), () => new Boom({ length: 1 }), () => new Boom({ length: 2 })]);
  await bad.reset();
  await assert.rejects(() => bad.step([0, 0, 0]), /boom 1/, 'the lowest-index failure is reported');
  await v.close();
});

test('vector spaces are batched; close is idempotent and later calls fail', async () => {
  const v = new SyncVectorEnv([() => new CounterEnv(), () => new CounterEnv(), () => new CounterEnv()]);
  assert.ok(v.singleObservationSpace.equals(new Discrete(10)));
  assert.ok(v.observationSpace.equals(new MultiDiscrete([10, 10, 10])));
  assert.ok(v.actionSpace.contains(v.actionSpace.sample()));
  assert.deepEqual(v.getAttr('length'), [3, 3, 3]);
  v.setAttr('t', [1, 2, 3]);
  assert.deepEqual(await v.call('render'), [null, null, null]);
  assert.deepEqual(v.getAttr('t'), [1, 2, 3]);
  await v.close();
  await v.close();
  assert.deepEqual(v.envs.map((e) => (e as CounterEnv).closeCount), [1, 1, 1]);
  await assert.rejects(() => v.step([0, 0, 0]), ClosedEnvironmentError);
  assert.throws(() => new SyncVectorEnv([() => new CounterEnv(), () => new RandomStartEnv() as unknown as Env]), /observation space different/);
  assert.throws(() => new SyncVectorEnv([]), /at least one/);
  assert.throws(() => new SyncVectorEnv([() => new CounterEnv()], { autoresetMode: 'sometimes' as AutoresetMode }), /autoresetMode/);
});

test('batchSpace / concatenate / unbatch follow Gymnasium batching', () => {
  const box = new Box(0, 1, { shape: [2] });
  const bb = batchSpace(box, 3);
  assert.ok(bb.equals(new Box(0, 1, { shape: [3, 2] })));
  const items = [Float32Array.from([0, 0.5]), Float32Array.from([1, 1]), Float32Array.from([0.25, 0])];
  const stacked = concatenate(box, items);
  assert.deepEqual(stacked, Float32Array.from([0, 0.5, 1, 1, 0.25, 0]));
  assert.ok(bb.contains(stacked));
  assert.deepEqual(unbatch(box, stacked, 3), items);
  assert.deepEqual(unbatch(box, [[0, 0.5], [1, 1], [0.25, 0]], 3), items, 'nested plain arrays are accepted');

  const text = new Text(4);
  const bt = batchSpace(text, 2);
  assert.ok(bt.equals(new Tuple([new Text(4), new Text(4)])), 'Text batches to a Tuple of copies, as in Gymnasium');
  assert.deepEqual(concatenate(text, ['ab', 'c']), ['ab', 'c']);

  const dict = new Dict({ pos: box, id: new Discrete(5) });
  const bd = batchSpace(dict, 2) as Dict;
  assert.ok(bd.spaces.id!.equals(new MultiDiscrete([5, 5])) && bd.spaces.pos!.equals(new Box(0, 1, { shape: [2, 2] })));
  const dv = [
    { id: 1, pos: Float32Array.from([0, 1]) },
    { id: 4, pos: Float32Array.from([1, 0]) },
  ];
  const ds = concatenate(dict, dv);
  assert.deepEqual(ds, { id: Int32Array.from([1, 4]), pos: Float32Array.from([0, 1, 1, 0]) });
  assert.ok(bd.contains(ds));
  assert.deepEqual(unbatch(dict, ds, 2), dv);
  assert.throws(() => unbatch(new Discrete(3), [0, 1], 3), /expected 3 Discrete values/);

  const bs = batchSpace(new Discrete(3), 4);
  bs.seed(1);
  assert.ok(bs.contains(bs.sample()));
});

test('custom spaces batch as a Tuple and can be registered for JSON', async () => {
  const { Space, registerSpaceType, spaceFromJSON } = await import('../../src/gym/index.ts');
  class Even extends Space<number> {
    readonly type = 'Even';
    sample(): number {
      return 2 * this.npRandom.integers(10);
    }
    contains(x: unknown): x is number {
      return typeof x === 'number' && x % 2 === 0;
    }
    equals(o: unknown): boolean {
      return o instanceof Even;
    }
    toJSON() {
      return { type: this.type };
    }
  }
  const batched = batchSpace(new Even(), 3) as Tuple;
  assert.equal(batched.length, 3);
  assert.ok(batched.contains([0, 2, 4]) && !batched.contains([0, 1, 4]));
  assert.throws(() => spaceFromJSON({ type: 'Even' }), /registerSpaceType/);
  registerSpaceType('Even', () => new Even());
  assert.ok(spaceFromJSON({ type: 'Even' }).equals(new Even()));
  const again = batchSpace(new Even(), 2) as Tuple;
  assert.notEqual(again.spaces[0], again.spaces[1], 'registered types are copied');
});

test('VectorRecordEpisodeStatistics: per-mode episode stats (hand-traced)', async () => {
  const { VectorRecordEpisodeStatistics } = await import('../../src/gym/index.ts');
  /** Four steps of the length-1/length-2 counters with rewards [k, 10k]; `disabled` resets ended envs before each step. */
  const run = async (mode: AutoresetMode) => {
    const v = new VectorRecordEpisodeStatistics(counters(SyncVectorEnv, mode));
    await v.reset();
    let ended = [false, false];
    const out: unknown[] = [];
    for (let k = 1; k <= 4; k++) {
      if (mode === 'disabled' && ended.some((e) => e)) await v.reset({ options: { reset_mask: ended } });
      const [, , term, trunc, info] = await v.step([k, 10 * k]);
      ended = term.map((t, i) => t || trunc[i]!);
      const ep = info.episode as { r: Float64Array; l: Int32Array; t: Float64Array } | undefined;
      out.push(ep ? { r: Array.from(ep.r), l: Array.from(ep.l), mask: info._episode } : null);
    }
    return { out, returns: v.returnQueue.toArray(), lengths: v.lengthQueue.toArray(), count: v.episodeCount };
  };
  assert.deepEqual(await run('next-step'), {
    out: [
      { r: [1, 0], l: [1, 0], mask: [true, false] },
      { r: [0, 30], l: [0, 2], mask: [false, true] }, // env0's step is its reset and is not counted
      { r: [3, 0], l: [1, 0], mask: [true, false] },
      null, // env0 resets, env1 is mid-episode
    ],
    returns: [1, 30, 3],
    lengths: [1, 2, 1],
    count: 3,
  });
  const sameStep = {
    out: [
      { r: [1, 0], l: [1, 0], mask: [true, false] },
      { r: [2, 30], l: [1, 2], mask: [true, true] },
      { r: [3, 0], l: [1, 0], mask: [true, false] },
      { r: [4, 70], l: [1, 2], mask: [true, true] },
    ],
    returns: [1, 2, 30, 3, 4, 70],
    lengths: [1, 1, 2, 1, 1, 2],
    count: 6,
  };
  assert.deepEqual(await run('same-step'), sameStep);
  assert.deepEqual(await run('disabled'), sameStep, 'resetting ended envs each step gives the same episodes as same-step');
});
