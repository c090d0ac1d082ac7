import { Env, type EnvOptions } from '../env.ts';
import { InvalidAction, ResetNeeded } from '../errors.ts';
import { Discrete } from '../spaces/discrete.ts';
import type { ResetOptions, ResetResult, StepResult } from '../types.ts';

/** Feedback observed after each guess. */
export const GuessFeedback = { NONE: 0, LOWER: 1, HIGHER: 2, CORRECT: 3 } as const;
const FEEDBACK_TEXT = ['no guess yet', 'lower', 'higher', 'correct'];

export interface GuessNumberOptions extends EnvOptions {
  /** The secret is drawn uniformly from 0..n-1 (default 16). */
  n?: number;
}

/**
 * Guess a secret integer in [0, n). Observation: feedback on the last guess (0 none, 1 the secret is lower,
 * 2 higher, 3 correct). Reward 1 and `terminated` on the correct guess, else 0. The step limit comes from the
 * registry's TimeLimit, so an unlucky episode ends `truncated`.
 */
export class GuessNumberEnv extends Env<number, number, string> {
  static override metadata = { renderModes: ['ansi'], renderFps: 4 };
  readonly n: number;
  readonly observationSpace = new Discrete(4);
  readonly actionSpace: Discrete;
  private secret = -1;
  private guesses = 0;
  private lastGuess: number | null = null;
  private feedback: number = GuessFeedback.NONE;

  constructor(options: GuessNumberOptions = {}) {
    super(options);
    const n = options.n ?? 16;
    if (!Number.isSafeInteger(n) || n < 2) throw new RangeError(`GuessNumber: n must be an integer >= 2, got ${n}`);
    this.n = n;
    this.actionSpace = new Discrete(n);
  }

  override async reset(options: ResetOptions = {}): Promise<ResetResult<number>> {
    await super.reset(options);
    this.secret = this.npRandom.integers(this.n);
    this.guesses = 0;
    this.lastGuess = null;
    this.feedback = GuessFeedback.NONE;
    return [this.feedback, { guesses: 0 }];
  }

  async step(action: number): Promise<StepResult<number>> {
    if (this.secret < 0) throw new ResetNeeded('GuessNumber: call reset() before step()');
    if (!this.actionSpace.contains(action)) throw new InvalidAction(`GuessNumber: action must be an integer in [0, ${this.n}), got ${String(action)}`);
    this.guesses += 1;
    this.lastGuess = action;
    this.feedback = action === this.secret ? GuessFeedback.CORRECT : this.secret < action ? GuessFeedback.LOWER : GuessFeedback.HIGHER;
    const correct = this.feedback === GuessFeedback.CORRECT;
    return [this.feedback, correct ? 1 : 0, correct, false, { guesses: this.guesses }];
  }

  override async render(): Promise<string | null> {
    if (this.renderMode !== 'ansi') return null;
    if (this.lastGuess === null) return `Guess a number in [0, ${this.n}).`;
    return `Guess #${this.guesses}: ${this.lastGuess} → ${FEEDBACK_TEXT[this.feedback]}`;
  }
}
