import { Env, Wrapper } from '../env.ts';
import { ResetNeeded } from '../errors.ts';
import type { ResetOptions, ResetResult, StepResult } from '../types.ts';

/**
 * Throws `ResetNeeded` if `step` (or `render`, unless `disableRenderOrderEnforcing`) is called before the first
 * `reset` (Gymnasium's `OrderEnforcing`).
 */
export class OrderEnforcing<Obs = unknown, Act = unknown> extends Wrapper<Obs, Act> {
  private hasResetValue = false;
  readonly disableRenderOrderEnforcing: boolean;

  constructor(env: Env<Obs, Act>, options: { disableRenderOrderEnforcing?: boolean } = {}) {
    super(env);
    this.disableRenderOrderEnforcing = options.disableRenderOrderEnforcing ?? false;
  }

  /** Whether `reset` has been called. */
  get hasReset(): boolean {
    return this.hasResetValue;
  }

  override step(action: Act): Promise<StepResult<Obs>> {
    if (!this.hasResetValue) return Promise.reject(new ResetNeeded('Cannot call env.step() before calling env.reset()'));
    return this.env.step(action);
  }

  override async reset(options: ResetOptions = {}): Promise<ResetResult<Obs>> {
    this.hasResetValue = true;
    return this.env.reset(options);
  }

  override render(): Promise<unknown> {
    if (!this.disableRenderOrderEnforcing && !this.hasResetValue) {
      return Promise.reject(
        new ResetNeeded('Cannot call `env.render()` before calling `env.reset()`; if this is intended, construct OrderEnforcing with `disableRenderOrderEnforcing: true`.'),
      );
    }
    return this.env.render();
  }
}
