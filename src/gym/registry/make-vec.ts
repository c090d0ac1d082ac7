import type { Env } from '../env.ts';
import { AsyncVectorEnv } from '../vector/async.ts';
import type { VectorEnvOptions } from '../vector/batched-vector-env.ts';
import { SyncVectorEnv } from '../vector/sync.ts';
import type { VectorEnv } from '../vector/vector-env.ts';
import { make, spec as findSpec, type MakeOptions } from './registry.ts';
import type { EnvSpec } from './spec.ts';

export interface MakeVecOptions extends MakeOptions {
  /** 'sync' (default) or 'async' (concurrent in-process stepping; see AsyncVectorEnv). */
  vectorizationMode?: 'sync' | 'async';
  /** Options of the vector env itself, e.g. `{ autoresetMode: 'same-step' }`. */
  vectorKwargs?: VectorEnvOptions;
  /** Wrappers applied to each sub-env after `make`'s default stack. */
  wrappers?: readonly ((env: Env) => Env)[];
}

/** Builds `numEnvs` copies of a registered env in a vector env (Gymnasium's `make_vec`). */
export function makeVec(id: string | EnvSpec, numEnvs = 1, options: MakeVecOptions = {}): VectorEnv {
  const { vectorizationMode = 'sync', vectorKwargs = {}, wrappers = [], ...makeOptions } = options;
  if (!Number.isSafeInteger(numEnvs) || numEnvs < 1) throw new RangeError(`makeVec: numEnvs must be a positive integer, got ${numEnvs}`);
  const envSpec = typeof id === 'string' ? findSpec(id) : id;
  const createEnv = (): Env => wrappers.reduce((env, wrap) => wrap(env), make(envSpec, makeOptions));
  const fns = Array.from({ length: numEnvs }, () => createEnv);
  let venv: VectorEnv;
  if (vectorizationMode === 'sync') venv = new SyncVectorEnv(fns, vectorKwargs);
  else if (vectorizationMode === 'async') venv = new AsyncVectorEnv(fns, vectorKwargs);
  else throw new RangeError(`makeVec: vectorizationMode must be 'sync' or 'async', got ${String(vectorizationMode)}`);
  venv.spec = envSpec;
  return venv;
}
