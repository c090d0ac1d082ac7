/**
 * The stepping and autoreset logic shared by SyncVectorEnv and AsyncVectorEnv; they differ only in whether
 * sub-env calls run one after another or concurrently (`runAll`). Autoreset modes follow Gymnasium 1.x:
 *
 * - `next-step` (default): the step after a sub-env's episode ends resets it instead of stepping; its action is
 *   ignored and it reports reward 0, terminated false, truncated false, and the reset's obs and info.
 * - `same-step`: a sub-env whose episode ends in this step is reset at once; the batch carries the new episode's
 *   first obs, and `info.final_obs` / `info.final_info` (with `_final_obs` / `_final_info` masks) carry the
 *   last obs and info of the finished episode.
 * - `disabled`: nothing is reset automatically; `reset({options: {reset_mask}})` resets the chosen sub-envs, and
 *   stepping a sub-env whose episode has ended is an error.
 */
import { Env } from '../env.ts';
import { ClosedEnvironmentError, GymError } from '../errors.ts';
import { assertValidSeed } from '../rng.ts';
import { batchSpace, concatenate, unbatch } from '../spaces/batch.ts';
import type { Space } from '../spaces/space.ts';
import { AutoresetMode, type EnvMetadata, type Info } from '../types.ts';
import { addInfo } from './info.ts';
import { VectorEnv, type VectorResetOptions, type VectorStepResult } from './vector-env.ts';

export interface VectorEnvOptions {
  autoresetMode?: AutoresetMode;
}

interface SubStep {
  obs: unknown;
  reward: number;
  terminated: boolean;
  truncated: boolean;
  info: Info;
  final?: { obs: unknown; info: Info };
}

const MODES: readonly AutoresetMode[] = Object.values(AutoresetMode);

export abstract class BatchedVectorEnv<BObs = unknown, BAct = unknown> extends VectorEnv<BObs, BAct> {
  readonly envs: readonly Env[];
  readonly numEnvs: number;
  readonly singleObservationSpace: Space;
  readonly singleActionSpace: Space;
  readonly observationSpace: Space;
  readonly actionSpace: Space;
  readonly metadata: EnvMetadata & { autoresetMode: AutoresetMode };
  readonly renderMode: string | null;
  private readonly envObs: unknown[];
  private readonly terminations: boolean[];
  private readonly truncations: boolean[];
  private readonly needsReset: boolean[];

  constructor(envFns: readonly (() => Env)[], options: VectorEnvOptions = {}) {
    super();
    if (!Array.isArray(envFns) || envFns.length === 0) throw new RangeError(`${new.target.name}: needs at least one env factory`);
    const mode = options.autoresetMode ?? AutoresetMode.NEXT_STEP;
    if (!MODES.includes(mode)) throw new RangeError(`${new.target.name}: autoresetMode must be one of ${MODES.join(', ')}, got ${String(mode)}`);
    this.envs = envFns.map((fn, i) => {
      const env = fn();
      if (!(env instanceof Env)) throw new TypeError(`${new.target.name}: env factory ${i} did not return an Env`);
      return env;
    });
    this.numEnvs = this.envs.length;
    const first = this.envs[0]!;
    this.singleObservationSpace = first.observationSpace;
    this.singleActionSpace = first.actionSpace;
    this.envs.forEach((env, i) => {
      if (!env.observationSpace.equals(this.singleObservationSpace)) {
        throw new GymError(`Sub-env ${i} has an observation space different from sub-env 0: ${env.observationSpace} vs ${this.singleObservationSpace}`);
      }
      if (!env.actionSpace.equals(this.singleActionSpace)) {
        throw new GymError(`Sub-env ${i} has an action space different from sub-env 0: ${env.actionSpace} vs ${this.singleActionSpace}`);
      }
    });
    this.observationSpace = batchSpace(this.singleObservationSpace, this.numEnvs);
    this.actionSpace = batchSpace(this.singleActionSpace, this.numEnvs);
    this.metadata = { ...first.metadata, autoresetMode: mode };
    this.renderMode = first.renderMode;
    this.spec = first.spec;
    this.envObs = new Array<unknown>(this.numEnvs).fill(null);
    this.terminations = new Array<boolean>(this.numEnvs).fill(false);
    this.truncations = new Array<boolean>(this.numEnvs).fill(false);
    this.needsReset = new Array<boolean>(this.numEnvs).fill(false);
  }

  /** Runs one task per sub-env and returns results in env order. */
  protected abstract runAll<T>(tasks: readonly (() => Promise<T>)[]): Promise<T[]>;

  protected assertOpen(): void {
    if (this.closed) throw new ClosedEnvironmentError(`Trying to operate on ${this.constructor.name} after it has been closed.`);
  }

  private seedsFor(seed: VectorResetOptions['seed']): (number | null)[] {
    if (seed === undefined || seed === null) return new Array<number | null>(this.numEnvs).fill(null);
    if (typeof seed === 'number') {
      assertValidSeed(seed);
      return Array.from({ length: this.numEnvs }, (_, i) => seed + i);
    }
    if (!Array.isArray(seed) || seed.length !== this.numEnvs) {
      throw new RangeError(`If seeds are passed as a list, the length must match numEnvs=${this.numEnvs} but got length=${(seed as unknown[]).length}.`);
    }
    return [...seed];
  }

  private checkResetMask(mask: unknown): boolean[] {
    if (!Array.isArray(mask)) throw new TypeError(`options.reset_mask must be a boolean array, got ${typeof mask}`);
    if (mask.length !== this.numEnvs) throw new RangeError(`options.reset_mask must have length numEnvs=${this.numEnvs}, got ${mask.length}`);
    if (!mask.every((m) => typeof m === 'boolean')) throw new TypeError('options.reset_mask must contain only booleans');
    if (!mask.some((m) => m)) throw new RangeError(`options.reset_mask must contain at least one true value, got ${JSON.stringify(mask)}`);
    return mask as boolean[];
  }

  async reset(resetOptions: VectorResetOptions = {}): Promise<[BObs, Info]> {
    this.assertOpen();
    const seeds = this.seedsFor(resetOptions.seed);
    let options = resetOptions.options ?? null;
    let mask: boolean[] = new Array<boolean>(this.numEnvs).fill(true);
    if (this.autoresetMode === AutoresetMode.DISABLED && options !== null && 'reset_mask' in options) {
      const { reset_mask, ...rest } = options;
      mask = this.checkResetMask(reset_mask);
      options = rest;
    }
    const indices = mask.flatMap((m, i) => (m ? [i] : []));
    const results = await this.runAll(indices.map((i) => () => this.envs[i]!.reset({ seed: seeds[i], options })));
    let info: Info = {};
    indices.forEach((i, k) => {
      const [obs, envInfo] = results[k]!;
      this.envObs[i] = obs;
      this.terminations[i] = false;
      this.truncations[i] = false;
      this.needsReset[i] = false;
      info = addInfo(info, envInfo, i, this.numEnvs);
    });
    return [concatenate(this.singleObservationSpace, this.envObs) as BObs, info];
  }

  async step(actions: BAct): Promise<VectorStepResult<BObs>> {
    this.assertOpen();
    const acts = unbatch(this.singleActionSpace, actions, this.numEnvs);
    const mode = this.autoresetMode;
    if (mode === AutoresetMode.DISABLED) {
      const ended = this.needsReset.flatMap((r, i) => (r ? [i] : []));
      if (ended.length > 0) {
        throw new GymError(`Sub-envs [${ended.join(', ')}] have ended their episodes; with autoresetMode "disabled" reset them with reset({options: {reset_mask}}) before stepping.`);
      }
    }
    const results = await this.runAll(
      this.envs.map((env, i) => async (): Promise<SubStep> => {
        if (mode === AutoresetMode.NEXT_STEP && this.needsReset[i]) {
          const [obs, info] = await env.reset();
          return { obs, reward: 0, terminated: false, truncated: false, info };
        }
        const [obs, reward, terminated, truncated, info] = await env.step(acts[i]);
        if (mode === AutoresetMode.SAME_STEP && (terminated || truncated)) {
          const [newObs, newInfo] = await env.reset();
          return { obs: newObs, reward, terminated, truncated, info: newInfo, final: { obs, info } };
        }
        return { obs, reward, terminated, truncated, info };
      }),
    );
    const rewards = new Float64Array(this.numEnvs);
    let info: Info = {};
    results.forEach((r, i) => {
      this.envObs[i] = r.obs;
      rewards[i] = r.reward;
      this.terminations[i] = r.terminated;
      this.truncations[i] = r.truncated;
      if (r.final) info = addInfo(info, { final_obs: r.final.obs, final_info: r.final.info }, i, this.numEnvs);
      info = addInfo(info, r.info, i, this.numEnvs);
    });
    for (let i = 0; i < this.numEnvs; i++) this.needsReset[i] = this.terminations[i]! || this.truncations[i]!;
    return [concatenate(this.singleObservationSpace, this.envObs) as BObs, rewards, [...this.terminations], [...this.truncations], info];
  }

  async render(): Promise<unknown[] | null> {
    this.assertOpen();
    return this.runAll(this.envs.map((env) => () => env.render()));
  }

  /** Calls method `name` (or reads attribute `name`) on every sub-env (Gymnasium's `call`). */
  async call(name: string, ...args: unknown[]): Promise<unknown[]> {
    this.assertOpen();
    return this.runAll(
      this.envs.map((env) => async () => {
        const v = env.getWrapperAttr(name);
        return typeof v === 'function' ? await (v as (...a: unknown[]) => unknown).apply(env, args) : v;
      }),
    );
  }

  /** Attribute `name` of every sub-env. */
  getAttr(name: string): unknown[] {
    return this.envs.map((env) => env.getWrapperAttr(name));
  }

  /** Sets attribute `name` on every sub-env; `values` is one value for all or one per sub-env. */
  setAttr(name: string, values: unknown): void {
    const list = Array.isArray(values) ? values : new Array<unknown>(this.numEnvs).fill(values);
    if (list.length !== this.numEnvs) throw new RangeError(`setAttr: expected ${this.numEnvs} values, got ${list.length}`);
    this.envs.forEach((env, i) => env.setWrapperAttr(name, list[i]));
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.runAll(this.envs.map((env) => () => env.close()));
  }
}
