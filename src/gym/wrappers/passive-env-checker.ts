import { checkSpace, envRenderPassiveChecker, envResetPassiveChecker, envStepPassiveChecker } from '../checker/passive-checks.ts';
import { Env, Wrapper } from '../env.ts';
import { GymError } from '../errors.ts';
import type { ResetOptions, ResetResult, StepResult } from '../types.ts';

/**
 * Checks the spaces at construction and the first `reset`, `step` and `render` results (Gymnasium's
 * `PassiveEnvChecker`); warns on suspicious data, throws on broken structure, never changes what passes through.
 */
export class PassiveEnvChecker<Obs = unknown, Act = unknown> extends Wrapper<Obs, Act> {
  private checkedReset = false;
  private checkedStep = false;
  private checkedRender = false;

  constructor(env: Env<Obs, Act>) {
    super(env);
    if (env.actionSpace === undefined) throw new GymError('The environment must specify an action space (actionSpace).');
    checkSpace(env.actionSpace, 'action');
    if (env.observationSpace === undefined) throw new GymError('The environment must specify an observation space (observationSpace).');
    checkSpace(env.observationSpace, 'observation');
  }

  override reset(options: ResetOptions = {}): Promise<ResetResult<Obs>> {
    if (this.checkedReset) return this.env.reset(options);
    this.checkedReset = true;
    return envResetPassiveChecker(this.env as Env, options) as Promise<ResetResult<Obs>>;
  }

  override step(action: Act): Promise<StepResult<Obs>> {
    if (this.checkedStep) return this.env.step(action);
    this.checkedStep = true;
    return envStepPassiveChecker(this.env as Env, action) as Promise<StepResult<Obs>>;
  }

  override render(): Promise<unknown> {
    if (this.checkedRender) return this.env.render();
    this.checkedRender = true;
    return envRenderPassiveChecker(this.env as Env);
  }
}
