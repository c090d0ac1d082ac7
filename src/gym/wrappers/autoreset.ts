import { Wrapper } from '../env.ts';
import type { ResetOptions, ResetResult, StepResult } from '../types.ts';

/**
 * Resets the env on the step *after* an episode ends (Gymnasium 1.x `Autoreset`, next-step semantics): that
 * step's action is ignored and it returns the reset's `[obs, info]` with reward 0 and both flags false.
 * No `final_observation` is added.
 */
export class Autoreset<Obs = unknown, Act = unknown> extends Wrapper<Obs, Act> {
  private needsReset = false;

  override async step(action: Act): Promise<StepResult<Obs>> {
    let result: StepResult<Obs>;
    if (this.needsReset) {
      const [obs, info] = await this.env.reset();
      result = [obs, 0, false, false, info];
    } else {
      result = await this.env.step(action);
    }
    this.needsReset = result[2] || result[3];
    return result;
  }

  override reset(options: ResetOptions = {}): Promise<ResetResult<Obs>> {
    this.needsReset = false;
    return this.env.reset(options);
  }
}
