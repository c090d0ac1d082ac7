import type { Env } from '../env.ts';
import type { Space } from '../spaces/space.ts';
import type { AutoresetMode, EnvMetadata, Info } from '../types.ts';
import { VectorEnv, type VectorResetOptions, type VectorStepResult } from './vector-env.ts';

/** Wraps a vector env and forwards everything to it (Gymnasium's `VectorWrapper`). */
export class VectorWrapper<BObs = unknown, BAct = unknown> extends VectorEnv<BObs, BAct> {
  readonly env: VectorEnv<BObs, BAct>;

  constructor(env: VectorEnv<BObs, BAct>) {
    super();
    if (!(env instanceof VectorEnv)) throw new TypeError(`${new.target.name} expected a VectorEnv to wrap`);
    this.env = env;
    this.spec = env.spec;
  }

  get numEnvs(): number {
    return this.env.numEnvs;
  }
  get singleObservationSpace(): Space {
    return this.env.singleObservationSpace;
  }
  get singleActionSpace(): Space {
    return this.env.singleActionSpace;
  }
  get observationSpace(): Space {
    return this.env.observationSpace;
  }
  get actionSpace(): Space {
    return this.env.actionSpace;
  }
  get metadata(): EnvMetadata & { autoresetMode: AutoresetMode } {
    return this.env.metadata;
  }
  get renderMode(): string | null {
    return this.env.renderMode;
  }
  get envs(): readonly Env[] {
    return this.env.envs;
  }
  override get unwrapped(): VectorEnv<BObs, BAct> {
    return this.env.unwrapped;
  }

  reset(options: VectorResetOptions = {}): Promise<[BObs, Info]> {
    return this.env.reset(options);
  }
  step(actions: BAct): Promise<VectorStepResult<BObs>> {
    return this.env.step(actions);
  }
  render(): Promise<unknown[] | null> {
    return this.env.render();
  }
  close(): Promise<void> {
    return this.env.close();
  }

  override toString(): string {
    return `<${this.constructor.name}, ${this.env.toString()}>`;
  }
}
