import { Env, Wrapper } from '../env.ts';
import type { ResetOptions, ResetResult, StepResult } from '../types.ts';

/**
 * Sets `truncated = true` once `maxEpisodeSteps` steps have been taken since the last reset (Gymnasium's
 * `TimeLimit`). `terminated` is passed through untouched.
 */
export class TimeLimit<Obs = unknown, Act = unknown> extends Wrapper<Obs, Act> {
  readonly maxEpisodeSteps: number;
  private elapsed = 0;

  constructor(env: Env<Obs, Act>, maxEpisodeSteps: number) {
    super(env);
    if (!Number.isSafeInteger(maxEpisodeSteps) || maxEpisodeSteps <= 0) {
      throw new RangeError(`TimeLimit: maxEpisodeSteps must be a positive integer, got ${maxEpisodeSteps}`);
    }
    this.maxEpisodeSteps = maxEpisodeSteps;
  }

  /** Steps taken in the current episode. */
  get elapsedSteps(): number {
    return this.elapsed;
  }

  override async step(action: Act): Promise<StepResult<Obs>> {
    const [obs, reward, terminated, truncated, info] = await this.env.step(action);
    this.elapsed += 1;
    return [obs, reward, terminated, truncated || this.elapsed >= this.maxEpisodeSteps, info];
  }

  override reset(options: ResetOptions = {}): Promise<ResetResult<Obs>> {
    this.elapsed = 0;
    return this.env.reset(options);
  }
}
