/**
 * Gymnasium's `VectorEnv`: `numEnvs` copies of an env stepped as a batch. Observations and actions are batched
 * with `batchSpace`/`concatenate` (Box → one flat typed array with a leading `numEnvs` dimension, Discrete →
 * Int32Array, Text and other non-numeric spaces → an array of `numEnvs` values, i.e. a Tuple space). Rewards are a
 * `Float64Array`, terminations/truncations `boolean[]`, and infos are merged with `_key` masks (see info.ts).
 */
import type { Env } from '../env.ts';
import type { EnvSpec } from '../registry/spec.ts';
import type { Space } from '../spaces/space.ts';
import type { AutoresetMode, EnvMetadata, Info } from '../types.ts';

export interface VectorResetOptions {
  /** One seed for all (sub-env i gets seed + i), or one seed (or null) per sub-env. */
  seed?: number | readonly (number | null)[] | null;
  /** Passed to every sub-env's reset; in `disabled` mode `reset_mask` (boolean[numEnvs]) picks the sub-envs to reset. */
  options?: (Record<string, unknown> & { reset_mask?: readonly boolean[] }) | null;
}

export type VectorStepResult<BObs> = [obs: BObs, rewards: Float64Array, terminations: boolean[], truncations: boolean[], info: Info];

export abstract class VectorEnv<BObs = unknown, BAct = unknown> {
  abstract readonly numEnvs: number;
  abstract readonly singleObservationSpace: Space;
  abstract readonly singleActionSpace: Space;
  abstract readonly observationSpace: Space;
  abstract readonly actionSpace: Space;
  abstract readonly metadata: EnvMetadata & { autoresetMode: AutoresetMode };
  abstract readonly renderMode: string | null;
  spec: EnvSpec | null = null;
  closed = false;

  abstract reset(options?: VectorResetOptions): Promise<[BObs, Info]>;
  abstract step(actions: BAct): Promise<VectorStepResult<BObs>>;
  abstract render(): Promise<unknown[] | null>;
  abstract close(): Promise<void>;
  /** The sub-envs (in-process for both Sync and Async vector envs). */
  abstract readonly envs: readonly Env[];

  /** The autoreset mode stored in metadata. */
  get autoresetMode(): AutoresetMode {
    return this.metadata.autoresetMode;
  }

  get unwrapped(): VectorEnv<BObs, BAct> {
    return this;
  }

  toString(): string {
    return this.spec === null ? `${this.constructor.name}(num_envs=${this.numEnvs})` : `${this.constructor.name}(${this.spec.id}, num_envs=${this.numEnvs})`;
  }
}
