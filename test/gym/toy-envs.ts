/** Small deterministic envs used by the gym tests. */
import { Discrete, Env, type EnvOptions, type ResetOptions, type ResetResult, type StepResult } from '../../src/gym/index.ts';

/**
 * Counts steps: reset → obs 0 with info {reset: true}; step(a) → obs t (steps so far), reward a, terminated when
 * t reaches `length`, info {t}. Optional `delayMs` makes step await a timer and track concurrency in `inFlight`.
 */
export class CounterEnv extends Env<number, number, string> {
  static override metadata = { renderModes: ['ansi'], renderFps: 1 };
  readonly observationSpace = new Discrete(10);
  readonly actionSpace = new Discrete(10);
  readonly length: number;
  readonly delayMs: number;
  readonly tracker: { inFlight: number; maxInFlight: number } | null;
  t = 0;
  closeCount = 0;

  constructor(options: EnvOptions & { length?: number; delayMs?: number; tracker?: { inFlight: number; maxInFlight: number } } = {}) {
    super(options);
    this.length = options.length ?? 3;
    this.delayMs = options.delayMs ?? 0;
    this.tracker = options.tracker ?? null;
  }

  override async reset(options: ResetOptions = {}): Promise<ResetResult<number>> {
    await super.reset(options);
    this.t = 0;
    return [0, { reset: true }];
  }

  async step(action: number): Promise<StepResult<number>> {
    if (this.tracker) {
      this.tracker.inFlight += 1;
      this.tracker.maxInFlight = Math.max(this.tracker.maxInFlight, this.tracker.inFlight);
    }
    if (this.delayMs > 0) await new Promise((r) => setTimeout(r, this.delayMs));
    if (this.tracker) this.tracker.inFlight -= 1;
    this.t += 1;
    return [this.t, action, this.t >= this.length, false, { t: this.t }];
  }

  override async render(): Promise<string | null> {
    return this.renderMode === 'ansi' ? `t=${this.t}` : null;
  }

  override async close(): Promise<void> {
    this.closeCount += 1;
  }
}

/** Reset draws a random start from the seeded generator; used for seeding tests. */
export class RandomStartEnv extends Env<number, number> {
  readonly observationSpace = new Discrete(1000);
  readonly actionSpace = new Discrete(2);
  state = 0;

  override async reset(options: ResetOptions = {}): Promise<ResetResult<number>> {
    await super.reset(options);
    this.state = this.npRandom.integers(1000);
    return [this.state, {}];
  }

  async step(action: number): Promise<StepResult<number>> {
    this.state = (this.state + action + this.npRandom.integers(3)) % 1000;
    return [this.state, 1, false, false, {}];
  }
}
