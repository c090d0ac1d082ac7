/**
 * Gymnasium's `Env` and wrapper bases in TypeScript.
 *
 * Deviation (the only one): `reset`, `step`, `render` and `close` are async, because tool-use envs do I/O.
 * Everything else follows Gymnasium 1.x: `reset({seed, options}) → [obs, info]`,
 * `step(a) → [obs, reward, terminated, truncated, info]`, render mode fixed at construction and validated against
 * `metadata.renderModes`, idempotent `close`, a lazily created seeded generator `npRandom` with Gymnasium's
 * reseeding rules.
 *
 * Writing an env:
 * ```ts
 * class Coin extends Env<number, number> {
 *   static override metadata = { renderModes: ['ansi'], renderFps: null };
 *   readonly observationSpace = new Discrete(2);
 *   readonly actionSpace = new Discrete(2);
 *   override async reset(opts: ResetOptions = {}): Promise<ResetResult<number>> {
 *     await super.reset(opts); // reseeds npRandom when opts.seed is given
 *     return [this.npRandom.integers(2), {}];
 *   }
 *   async step(a: number): Promise<StepResult<number>> { ... }
 * }
 * ```
 * `metadata` is static (a class attribute, as in Python) so the base constructor can validate `renderMode`;
 * assign `env.metadata = {...}` to override it per instance.
 */
import { makeRng, type XoshiroRng } from './rng.ts';
import type { Space } from './spaces/space.ts';
import type { EnvSpec } from './registry/spec.ts';
import type { EnvMetadata, ResetOptions, ResetResult, StepResult } from './types.ts';

export interface EnvOptions {
  /** One of the class's `metadata.renderModes`, or null (the default) for no rendering. */
  renderMode?: string | null;
}

export abstract class Env<Obs = unknown, Act = unknown, RenderFrame = unknown> {
  /** Class-level metadata; subclasses override with `static override metadata = {...}`. */
  static metadata: EnvMetadata = { renderModes: [], renderFps: null };

  abstract readonly actionSpace: Space<Act>;
  abstract readonly observationSpace: Space<Obs>;

  private renderModeValue: string | null;
  private metadataOverride: EnvMetadata | null = null;
  private specValue: EnvSpec | null = null;
  private rngInstance: XoshiroRng | null = null;
  private rngSeedValue: number | null = null;

  constructor(options: EnvOptions = {}) {
    const mode = options.renderMode ?? null;
    const metadata = (new.target as unknown as { metadata?: EnvMetadata }).metadata ?? Env.metadata;
    if (mode !== null && !metadata.renderModes.includes(mode)) {
      throw new RangeError(
        `Invalid renderMode "${mode}" for ${new.target.name}; it supports ${metadata.renderModes.length ? metadata.renderModes.map((m) => `"${m}"`).join(', ') : 'no render modes'} (or null).`,
      );
    }
    this.renderModeValue = mode;
  }

  /** The render mode chosen at construction (null = none). */
  get renderMode(): string | null {
    return this.renderModeValue;
  }

  get metadata(): EnvMetadata {
    return this.metadataOverride ?? (this.constructor as unknown as { metadata: EnvMetadata }).metadata;
  }

  set metadata(value: EnvMetadata) {
    this.metadataOverride = value;
  }

  /** The `EnvSpec` the env was made from (set by `make`), or null. */
  get spec(): EnvSpec | null {
    return this.specValue;
  }

  set spec(value: EnvSpec | null) {
    this.specValue = value;
  }

  /** The env's generator; created from OS entropy on first use if `reset` was never given a seed. */
  get npRandom(): XoshiroRng {
    if (this.rngInstance === null) [this.rngInstance, this.rngSeedValue] = makeRng();
    return this.rngInstance;
  }

  /** Replaces the generator; `npRandomSeed` becomes -1 as the seed is then unknown (as in Gymnasium). */
  set npRandom(rng: XoshiroRng) {
    this.rngInstance = rng;
    this.rngSeedValue = -1;
  }

  /** Alias of `npRandom`. */
  get rng(): XoshiroRng {
    return this.npRandom;
  }

  /** The seed of `npRandom` (-1 if the generator was assigned directly); creates the generator if needed. */
  get npRandomSeed(): number {
    if (this.rngInstance === null) [this.rngInstance, this.rngSeedValue] = makeRng();
    return this.rngSeedValue!;
  }

  /** True once a generator exists (seeded or from entropy); used by `checkEnv`. */
  get hasRng(): boolean {
    return this.rngInstance !== null;
  }

  /**
   * Base behaviour of `reset`: re-seeds `npRandom` when `seed` is given and otherwise keeps the generator.
   * Subclasses override `reset`, call `await super.reset(options)` first and return `[obs, info]`; the base
   * implementation's own return value is meaningless.
   */
  async reset(options: ResetOptions = {}): Promise<ResetResult<Obs>> {
    const seed = options?.seed;
    if (seed !== undefined && seed !== null) [this.rngInstance, this.rngSeedValue] = makeRng(seed);
    return [undefined as Obs, {}];
  }

  abstract step(action: Act): Promise<StepResult<Obs>>;

  /** Renders per `renderMode` ("ansi" → a string). The default renders nothing when the mode is null. */
  async render(): Promise<RenderFrame | null> {
    if (this.renderMode === null) return null;
    throw new Error(`${this.constructor.name} declares render mode "${this.renderMode}" but does not implement render()`);
  }

  /** Releases resources. Must be safe to call more than once. */
  async close(): Promise<void> {}

  /** The innermost env (this env when it is not a wrapper). */
  get unwrapped(): Env {
    return this as Env;
  }

  /** Whether `name` is an attribute of this env or (for wrappers) of any wrapped env. */
  hasWrapperAttr(name: string): boolean {
    return name in this;
  }

  /** The attribute `name` from the outermost env or wrapper that has it. */
  getWrapperAttr(name: string): unknown {
    if (name in this) return (this as unknown as Record<string, unknown>)[name];
    throw new Error(`${this.constructor.name} has no attribute "${name}"`);
  }

  /** Sets `name` on the outermost env or wrapper that has it; with `force` (default) sets it here if none does. */
  setWrapperAttr(name: string, value: unknown, options: { force?: boolean } = {}): boolean {
    if (name in this || (options.force ?? true)) {
      (this as unknown as Record<string, unknown>)[name] = value;
      return true;
    }
    return false;
  }

  toString(): string {
    return this.spec === null ? `<${this.constructor.name} instance>` : `<${this.constructor.name}<${this.spec.id}>>`;
  }
}

/**
 * Wraps an env and forwards everything to it (Gymnasium's `Wrapper[WrapperObs, WrapperAct, Obs, Act]`).
 * Assigning `actionSpace`, `observationSpace` or `metadata` on a wrapper overrides them for this layer only.
 */
export class Wrapper<WObs = unknown, WAct = unknown, Obs = WObs, Act = WAct, RenderFrame = unknown> extends Env<WObs, WAct, RenderFrame> {
  readonly env: Env<Obs, Act, RenderFrame>;
  private actionSpaceOverride: Space<WAct> | null = null;
  private observationSpaceOverride: Space<WObs> | null = null;
  private wrapperSpecOverride: EnvSpec | null = null;
  private wrapperMetadata: EnvMetadata | null = null;

  constructor(env: Env<Obs, Act, RenderFrame>) {
    super();
    if (!(env instanceof Env)) throw new TypeError(`${new.target.name} expected an Env to wrap, got ${String(env)}`);
    this.env = env;
  }

  get actionSpace(): Space<WAct> {
    return this.actionSpaceOverride ?? (this.env.actionSpace as unknown as Space<WAct>);
  }

  set actionSpace(space: Space<WAct>) {
    this.actionSpaceOverride = space;
  }

  get observationSpace(): Space<WObs> {
    return this.observationSpaceOverride ?? (this.env.observationSpace as unknown as Space<WObs>);
  }

  set observationSpace(space: Space<WObs>) {
    this.observationSpaceOverride = space;
  }

  override get metadata(): EnvMetadata {
    return this.wrapperMetadata ?? this.env.metadata;
  }

  override set metadata(value: EnvMetadata) {
    this.wrapperMetadata = value;
  }

  override get spec(): EnvSpec | null {
    return this.wrapperSpecOverride ?? this.env.spec;
  }

  override set spec(value: EnvSpec | null) {
    this.wrapperSpecOverride = value;
  }

  override get renderMode(): string | null {
    return this.env.renderMode;
  }

  override get npRandom(): XoshiroRng {
    return this.env.npRandom;
  }

  override set npRandom(rng: XoshiroRng) {
    this.env.npRandom = rng;
  }

  override get npRandomSeed(): number {
    return this.env.npRandomSeed;
  }

  override get hasRng(): boolean {
    return this.env.hasRng;
  }

  override reset(options: ResetOptions = {}): Promise<ResetResult<WObs>> {
    return this.env.reset(options) as unknown as Promise<ResetResult<WObs>>;
  }

  step(action: WAct): Promise<StepResult<WObs>> {
    return this.env.step(action as unknown as Act) as unknown as Promise<StepResult<WObs>>;
  }

  override render(): Promise<RenderFrame | null> {
    return this.env.render();
  }

  override close(): Promise<void> {
    return this.env.close();
  }

  override get unwrapped(): Env {
    return this.env.unwrapped;
  }

  override hasWrapperAttr(name: string): boolean {
    return name in this || this.env.hasWrapperAttr(name);
  }

  override getWrapperAttr(name: string): unknown {
    if (name in this) return (this as unknown as Record<string, unknown>)[name];
    return this.env.getWrapperAttr(name);
  }

  override setWrapperAttr(name: string, value: unknown, options: { force?: boolean } = {}): boolean {
    if (name in this) {
      (this as unknown as Record<string, unknown>)[name] = value;
      return true;
    }
    if (this.env.setWrapperAttr(name, value, { force: false })) return true;
    if (options.force ?? true) {
      (this as unknown as Record<string, unknown>)[name] = value;
      return true;
    }
    return false;
  }

  override toString(): string {
    return `<${this.constructor.name}${this.env.toString()}>`;
  }
}

/** Transforms observations with `observation(obs)` (Gymnasium's `ObservationWrapper`). */
export abstract class ObservationWrapper<WObs, Act, Obs> extends Wrapper<WObs, Act, Obs, Act> {
  abstract observation(obs: Obs): WObs;

  override async reset(options: ResetOptions = {}): Promise<ResetResult<WObs>> {
    const [obs, info] = await this.env.reset(options);
    return [this.observation(obs), info];
  }

  override async step(action: Act): Promise<StepResult<WObs>> {
    const [obs, reward, terminated, truncated, info] = await this.env.step(action);
    return [this.observation(obs), reward, terminated, truncated, info];
  }
}

/** Transforms actions with `action(act)` before passing them on (Gymnasium's `ActionWrapper`). */
export abstract class ActionWrapper<Obs, WAct, Act> extends Wrapper<Obs, WAct, Obs, Act> {
  abstract action(action: WAct): Act;

  override step(action: WAct): Promise<StepResult<Obs>> {
    return this.env.step(this.action(action));
  }
}

/** Transforms rewards with `reward(r)` (Gymnasium's `RewardWrapper`). */
export abstract class RewardWrapper<Obs, Act> extends Wrapper<Obs, Act, Obs, Act> {
  abstract reward(reward: number): number;

  override async step(action: Act): Promise<StepResult<Obs>> {
    const [obs, reward, terminated, truncated, info] = await this.env.step(action);
    return [obs, this.reward(reward), terminated, truncated, info];
  }
}

export type { EnvMetadata, Info, ResetOptions, ResetResult, StepResult } from './types.ts';
