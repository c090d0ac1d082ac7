import { Env, type EnvOptions } from '../env.ts';
import { ResetNeeded } from '../errors.ts';
import { Text } from '../spaces/text.ts';
import type { ResetOptions, ResetResult, StepResult } from '../types.ts';

/** Default word alphabet: ASCII letters plus a few non-ASCII characters so Unicode handling is exercised. */
export const REVERSE_TEXT_CHARSET = 'abcdefghijklmnopqrstuvwxyzäöüß中文字🙂🚀';

export interface ReverseTextOptions extends EnvOptions {
  /** Words per episode (default 3). */
  numWords?: number;
  /** Maximum word length in characters (default 8). */
  maxWordLength?: number;
}

/**
 * A text env with the reward at the end, like a tool-use episode: each observation is a word, the action should
 * be the word reversed (by Unicode code points). After `numWords` words the episode terminates with reward =
 * fraction reversed correctly; earlier steps give 0. Actions are any Unicode strings.
 */
export class ReverseTextEnv extends Env<string, string, string> {
  static override metadata = { renderModes: ['ansi'], renderFps: 4 };
  readonly numWords: number;
  readonly observationSpace: Text;
  readonly actionSpace: Text;
  private word = '';
  private index = -1;
  private correct = 0;
  private transcript: string[] = [];

  constructor(options: ReverseTextOptions = {}) {
    super(options);
    this.numWords = options.numWords ?? 3;
    const maxLen = options.maxWordLength ?? 8;
    if (!Number.isSafeInteger(this.numWords) || this.numWords < 1) throw new RangeError(`ReverseText: numWords must be a positive integer, got ${this.numWords}`);
    if (!Number.isSafeInteger(maxLen) || maxLen < 1) throw new RangeError(`ReverseText: maxWordLength must be a positive integer, got ${maxLen}`);
    this.observationSpace = new Text(maxLen, { minLength: 1, charset: REVERSE_TEXT_CHARSET });
    this.actionSpace = Text.unicode(4 * maxLen);
  }

  private drawWord(): string {
    const chars = this.observationSpace.characters!;
    const len = this.npRandom.integers(1, this.observationSpace.maxLength, { endpoint: true });
    let w = '';
    for (let i = 0; i < len; i++) w += chars[this.npRandom.integers(chars.length)];
    return w;
  }

  override async reset(options: ResetOptions = {}): Promise<ResetResult<string>> {
    await super.reset(options);
    this.index = 0;
    this.correct = 0;
    this.word = this.drawWord();
    this.transcript = [`word 1/${this.numWords}: ${this.word}`];
    return [this.word, { wordIndex: 0 }];
  }

  async step(action: string): Promise<StepResult<string>> {
    if (this.index < 0) throw new ResetNeeded('ReverseText: call reset() before step()');
    if (this.index >= this.numWords) throw new ResetNeeded('ReverseText: the episode is over; call reset()');
    const expected = Array.from(this.word).reverse().join('');
    const ok = typeof action === 'string' && action === expected;
    if (ok) this.correct += 1;
    this.transcript.push(`answer: ${String(action)} (${ok ? 'correct' : `expected ${expected}`})`);
    this.index += 1;
    const done = this.index >= this.numWords;
    if (!done) {
      this.word = this.drawWord();
      this.transcript.push(`word ${this.index + 1}/${this.numWords}: ${this.word}`);
    }
    const reward = done ? this.correct / this.numWords : 0;
    return [this.word, reward, done, false, { wordIndex: this.index, correct: ok }];
  }

  override async render(): Promise<string | null> {
    if (this.renderMode !== 'ansi') return null;
    return this.transcript.join('\n');
  }
}
