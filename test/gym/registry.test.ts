import assert from 'node:assert/strict';
import { test } from 'node:test';
import {
  captureWarnings,
  DeprecatedEnv,
  EnvSpec,
  GymError,
  make,
  makeVec,
  NameNotFound,
  NamespaceNotFound,
  OrderEnforcing,
  parseEnvId,
  pprintRegistry,
  RecordEpisodeStatistics,
  register,
  registeredIds,
  RegistrationError,
  registry,
  spec,
  SyncVectorEnv,
  AsyncVectorEnv,
  TimeLimit,
  VersionNotFound,
  type Env,
} from '../../src/gym/index.ts';
import { CounterEnv } from './toy-envs.ts';

const counter = (kw: Record<string, unknown>): Env => new CounterEnv(kw);

register({ id: 'Counter-v0', entryPoint: counter, maxEpisodeSteps: 5 });
register({ id: 'Counter-v1', entryPoint: counter, maxEpisodeSteps: 5, kwargs: { length: 4 } });
register({ id: 'toys/Blocks-v2', entryPoint: counter });
register({ id: 'toys/Plain', entryPoint: counter });
register({ id: 'Unversioned', entryPoint: counter });

test('id grammar: [namespace/]name[-vN]', () => {
  assert.deepEqual(parseEnvId('CartPole-v1'), { namespace: null, name: 'CartPole', version: 1 });
  assert.deepEqual(parseEnvId('ns/My.Env-v10'), { namespace: 'ns', name: 'My.Env', version: 10 });
  assert.deepEqual(parseEnvId('ALE/Pong-v5'), { namespace: 'ALE', name: 'Pong', version: 5 });
  assert.deepEqual(parseEnvId('Plain'), { namespace: null, name: 'Plain', version: null });
  assert.deepEqual(parseEnvId('tau2:retail/Retail-Env-v0'), { namespace: 'tau2:retail', name: 'Retail-Env', version: 0 });
  assert.deepEqual(parseEnvId('Name-vx'), { namespace: null, name: 'Name-vx', version: null });
  for (const bad of ['a/b/c-v0', '', 'bad id', 'ns/', '/x']) assert.throws(() => parseEnvId(bad), /Malformed environment ID/, bad);
});

test('make errors: unknown name with suggestion, namespace, versions', () => {
  assert.throws(() => make('Countr-v0'), (e: unknown) => e instanceof NameNotFound && /`Countr` doesn't exist\. Did you mean: `Counter`\?/.test((e as Error).message));
  assert.throws(() => make('Zebra-v0'), (e: unknown) => e instanceof NameNotFound && !/Did you mean/.test((e as Error).message));
  assert.throws(() => make('toy/Blocks-v2'), (e: unknown) => e instanceof NamespaceNotFound && /Namespace toy not found\. Did you mean: `toys`\?/.test((e as Error).message));
  assert.throws(() => make('toys/Block-v2'), /`Block` doesn't exist in namespace toys\. Did you mean: `Blocks`\?/);
  assert.throws(() => make('Counter-v7'), (e: unknown) => e instanceof VersionNotFound && /version `v7` for environment `Counter` doesn't exist\. It provides versioned environments: \[ `v0`, `v1` \]/.test((e as Error).message));
  assert.throws(() => make('toys/Blocks-v1'), (e: unknown) => e instanceof DeprecatedEnv && /v1 for `toys\/Blocks` is deprecated\. Please use `toys\/Blocks-v2` instead/.test((e as Error).message));
  assert.throws(() => make('Unversioned-v0'), (e: unknown) => e instanceof DeprecatedEnv && /It provides the default version `Unversioned`/.test((e as Error).message));
  assert.throws(() => make('bad id'), /Malformed/);
});

test('unversioned ids fall back to the latest version with a warning; old versions warn', async () => {
  const { result, warnings } = await captureWarnings(() => spec('Counter'));
  assert.equal(result.id, 'Counter-v1');
  assert.ok(warnings.some((w) => /Using the latest versioned environment `Counter-v1` instead of the unversioned environment `Counter`/.test(w)));
  const old = await captureWarnings(() => spec('Counter-v0'));
  assert.ok(old.warnings.some((w) => /Counter-v0 is out of date.*`v1`/.test(w)));
});

test('register: versioned/unversioned clashes and overriding', async () => {
  assert.throws(() => register({ id: 'Counter', entryPoint: counter }), (e: unknown) => e instanceof RegistrationError && /Can't register the unversioned environment `Counter`/.test((e as Error).message));
  assert.throws(() => register({ id: 'Unversioned-v3', entryPoint: counter }), /Can't register the versioned environment `Unversioned-v3`/);
  const { warnings } = await captureWarnings(() => register({ id: 'Unversioned', entryPoint: counter }));
  assert.ok(warnings.some((w) => /Overriding environment Unversioned/.test(w)), 're-registering warns but does not throw');
  assert.throws(() => register({ id: 'X-v0', entryPoint: counter, maxEpisodeSteps: 0 }), /maxEpisodeSteps/);
});

test('make applies PassiveEnvChecker → OrderEnforcing → TimeLimit (innermost first)', async () => {
  const env = make('Counter-v1');
  assert.equal(String(env), '<TimeLimit<OrderEnforcing<PassiveEnvChecker<CounterEnv<Counter-v1>>>>>');
  assert.ok(env instanceof TimeLimit && env.maxEpisodeSteps === 5);
  assert.equal(String(make('Counter-v1', { disableEnvChecker: true })), '<TimeLimit<OrderEnforcing<CounterEnv<Counter-v1>>>>');
  assert.equal(String(make('Counter-v1', { maxEpisodeSteps: -1 })), '<OrderEnforcing<PassiveEnvChecker<CounterEnv<Counter-v1>>>>');
  const stats = make('Counter-v1', { recordEpisodeStatistics: true });
  assert.ok(stats instanceof RecordEpisodeStatistics);
  assert.equal(String(stats), '<RecordEpisodeStatistics<TimeLimit<OrderEnforcing<PassiveEnvChecker<CounterEnv<Counter-v1>>>>>>');
  assert.ok(make('toys/Plain') instanceof OrderEnforcing, 'no TimeLimit without maxEpisodeSteps');
});

test('make passes kwargs, renderMode and maxEpisodeSteps; the env spec records them', async () => {
  const env = make('Counter-v1', { length: 2, renderMode: 'ansi', maxEpisodeSteps: 9 });
  const inner = env.unwrapped as CounterEnv;
  assert.equal(inner.length, 2, 'make kwargs override spec kwargs');
  assert.equal(env.renderMode, 'ansi');
  assert.equal(inner.spec!.maxEpisodeSteps, 9);
  assert.deepEqual(inner.spec!.kwargs, { length: 2, renderMode: 'ansi' });
  assert.equal(registry.get('Counter-v1')!.kwargs.length, 4, 'the registered spec is not modified');
  assert.equal((make('Counter-v1').unwrapped as CounterEnv).length, 4);
  assert.throws(() => make('Counter-v1', { renderMode: 'human' }), /make\(Counter-v1\): Invalid renderMode "human"/);
  await assert.rejects(() => make('Counter-v1').step(0), /before calling env.reset/);
  const limited = make('Counter-v0', { length: 100 });
  await limited.reset();
  let truncated = false;
  for (let i = 0; i < 5; i++) truncated = (await limited.step(0))[3];
  assert.equal(truncated, true, 'the spec’s maxEpisodeSteps (5) truncates');
});

test('EnvSpec JSON round trip and pprint', () => {
  const s = spec('Counter-v1');
  const back = EnvSpec.fromJSON(s.toJSONString());
  assert.deepEqual(back.toJSON(), s.toJSON());
  assert.equal(typeof back.entryPoint, 'string', 'function entry points are stored by registered name');
  assert.equal(back.resolveEntryPoint(), counter);
  const env = make(back);
  assert.equal((env.unwrapped as CounterEnv).length, 4, 'a spec read back from JSON can be made');
  const made = make('Counter-v1', { length: 3 }).unwrapped.spec!;
  assert.deepEqual(EnvSpec.fromJSON(JSON.parse(JSON.stringify(made))).kwargs, { length: 3 });
  assert.throws(() => new EnvSpec({ id: 'Anon-v0', entryPoint: () => new CounterEnv() }).toJSON(), /unnamed function/);
  assert.throws(() => make(new EnvSpec({ id: 'Missing-v0', entryPoint: 'nowhere' })), /not known/);
  const text = s.pprint({ disablePrint: true });
  assert.equal(text, 'id=Counter-v1\nmaxEpisodeSteps=5\nkwargs={"length":4}');
  const all = s.pprint({ disablePrint: true, printAll: true, includeEntryPoints: true });
  assert.match(all, /entryPoint=Counter-v1\nrewardThreshold=null\nnondeterministic=false/);
});

test('additional wrappers from the spec are applied after TimeLimit', () => {
  register({ id: 'Wrapped-v0', entryPoint: counter, maxEpisodeSteps: 3, additionalWrappers: [{ name: 'RecordEpisodeStatistics', entryPoint: 'RecordEpisodeStatistics', kwargs: { bufferLength: 5 } }] });
  const env = make('Wrapped-v0');
  assert.equal(String(env), '<RecordEpisodeStatistics<TimeLimit<OrderEnforcing<PassiveEnvChecker<CounterEnv<Wrapped-v0>>>>>>');
  assert.equal((env as RecordEpisodeStatistics).returnQueue.maxLength, 5);
});

test('registry listing and pprintRegistry', () => {
  const ids = registeredIds();
  assert.ok(ids.includes('Counter-v0') && ids.includes('toys/Blocks-v2'));
  const text = pprintRegistry({ disablePrint: true });
  assert.match(text, /===== default =====/);
  assert.match(text, /===== toys =====\ntoys\/Blocks-v2\s+toys\/Plain/);
});

test('makeVec builds sync or async vector envs of made sub-envs', async () => {
  const v = makeVec('Counter-v1', 3);
  assert.ok(v instanceof SyncVectorEnv && v.numEnvs === 3);
  assert.equal(String(v.envs[0]), '<TimeLimit<OrderEnforcing<PassiveEnvChecker<CounterEnv<Counter-v1>>>>>');
  const a = makeVec('Counter-v1', 2, { vectorizationMode: 'async', vectorKwargs: { autoresetMode: 'same-step' }, length: 2 });
  assert.ok(a instanceof AsyncVectorEnv);
  assert.equal(a.metadata.autoresetMode, 'same-step');
  assert.equal((a.envs[0]!.unwrapped as CounterEnv).length, 2);
  const w = makeVec('Counter-v1', 2, { wrappers: [(e) => new RecordEpisodeStatistics(e)] });
  assert.ok(w.envs[1] instanceof RecordEpisodeStatistics);
  assert.throws(() => makeVec('Counter-v1', 0), /positive integer/);
  assert.throws(() => makeVec('Counter-v1', 2, { vectorizationMode: 'threads' as 'sync' }), /vectorizationMode/);
  await v.close();
  await a.close();
});

test('make rejects factories that do not return an Env', () => {
  register({ id: 'NotAnEnv-v0', entryPoint: () => ({}) as unknown as Env });
  assert.throws(() => make('NotAnEnv-v0'), (e: unknown) => e instanceof GymError && /must return an Env/.test((e as Error).message));
});
