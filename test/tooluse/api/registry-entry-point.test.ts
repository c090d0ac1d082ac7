/**
 * `registerEnv(def, { entryPoint: 'keep' })`: a definition registered for `getEnvDefinition` lookups only, beside a gym
 * entry point of the id's own (whose kwargs are not the definition's); and lazy definitions (`{ id, load(options) }`),
 * made on first lookup from the options a run file gives.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { make, register as gymRegister, registry as gymRegistry, unregister as gymUnregister } from '../../../src/gym/registry/registry.ts';
import { GuessNumberEnv } from '../../../src/gym/envs/guess-number.ts';
import { defineEnv, DefinedToolEnv } from '../../../src/tooluse/api/index.ts';
import { definedEnvIds, getEnvDefinition, registerEnv, unregisterEnv } from '../../../src/tooluse/api/registry.ts';
import { notesSpec } from './notes-env.ts';

describe('registerEnv entry points and lazy definitions', () => {
  it("'keep' leaves the gym entry point and answers lookups; unregistering leaves the gym entry too", async () => {
    const id = 'test/kept-v0';
    gymRegister({ id, entryPoint: (kw) => new GuessNumberEnv(kw) });
    try {
      const def = defineEnv({ ...notesSpec(), id });
      assert.throws(() => registerEnv(def), /the id test\/kept-v0 is taken by a built-in env/);
      registerEnv(def, { entryPoint: 'keep' });
      assert.equal(getEnvDefinition(id), def);
      assert.ok(definedEnvIds({ all: true }).includes(id) && !definedEnvIds().includes(id));
      const env = make(id, { n: 5 });
      assert.ok(env.unwrapped instanceof GuessNumberEnv, 'make() builds the own entry point with its own kwargs');
      assert.throws(() => getEnvDefinition(id, { x: 1 }), /env test\/kept-v0: options were given \(x\) but it is registered as a definition/);
      assert.equal(unregisterEnv(id), true);
      assert.ok(gymRegistry.has(id));
      assert.throws(() => getEnvDefinition(id), /no env defined with id test\/kept-v0/);
    } finally {
      unregisterEnv(id);
      gymUnregister(id);
    }
    assert.throws(() => registerEnv(defineEnv({ ...notesSpec(), id: 'test/nowhere-v0' }), { entryPoint: 'keep' }), /entryPoint 'keep' needs the id registered with the gym registry first/);
  });

  it('a lazy definition is made on first lookup, once per distinct options, and checked', () => {
    const id = 'test/lazy-v0';
    const calls: Record<string, unknown>[] = [];
    registerEnv({ id, load: (o) => {
      calls.push(o);
      if ('bad' in o) throw new Error('unknown option bad');
      return defineEnv({ ...notesSpec(), id: 'wrong' in o ? 'test/other-v0' : id, maxTurns: (o.maxTurns as number | undefined) ?? 5 });
    } });
    try {
      assert.deepEqual(calls, [], 'nothing is made at registration');
      const a = getEnvDefinition(id, { maxTurns: 3, x: 1 });
      assert.equal(a.maxTurns, 3);
      assert.equal(getEnvDefinition(id, { x: 1, maxTurns: 3 }), a);
      assert.equal(getEnvDefinition(id).maxTurns, 5);
      assert.equal(calls.length, 2);
      assert.throws(() => getEnvDefinition(id, { bad: 1 }), /^Error: env test\/lazy-v0: unknown option bad$/);
      assert.throws(() => getEnvDefinition(id, { wrong: 1 }), /load\(options\) returned the env test\/other-v0/);
      // The default entry point: the gym makes the definition's env (made from no options).
      assert.ok(make(id, { split: 'train' }).unwrapped instanceof DefinedToolEnv);
    } finally {
      unregisterEnv(id);
    }
    assert.ok(!gymRegistry.has(id));
  });
});
