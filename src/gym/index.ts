/** Public API of the Gymnasium-compatible core (see README-level docs in env.ts and the files below). */
export { Env, Wrapper, ObservationWrapper, ActionWrapper, RewardWrapper, type EnvOptions } from './env.ts';
export { AutoresetMode, type EnvMetadata, type Info, type ResetOptions, type ResetResult, type StepResult } from './types.ts';
export { XoshiroRng, makeRng, deriveSeeds, entropySeed, type RngState } from './rng.ts';
export * from './errors.ts';
export { warn, captureWarnings } from './logger.ts';
export { dataEquivalence } from './equivalence.ts';
export * from './spaces/index.ts';
export * from './wrappers/index.ts';
export { EnvSpec, registerEntryPoint, registerWrapperEntryPoint, type EnvCreator, type EnvSpecInit, type WrapperCreator, type WrapperSpec } from './registry/spec.ts';
export { register, make, spec, registry, registeredIds, unregister, pprintRegistry, type MakeOptions } from './registry/registry.ts';
export { parseEnvId, getEnvId, type ParsedEnvId } from './registry/env-id.ts';
export { expectKwargs } from './registry/kwargs.ts';
export { makeVec, type MakeVecOptions } from './registry/make-vec.ts';
export * from './vector/index.ts';
export * from './checker/index.ts';
