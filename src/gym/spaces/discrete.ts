import { maskOn, Space, type SpaceJSON } from './space.ts';

/** Mask for `Discrete.sample`: one 0/1 entry per action (Gymnasium uses an int8 array). */
export type DiscreteMask = ArrayLike<number | boolean>;

/** The integers `start, start+1, …, start+n-1` (Gymnasium's `Discrete(n, start)`). */
export class Discrete extends Space<number, DiscreteMask> {
  readonly type = 'Discrete';
  readonly n: number;
  readonly start: number;

  constructor(n: number, options: { start?: number; seed?: number } = {}) {
    super();
    const start = options.start ?? 0;
    if (!Number.isSafeInteger(n) || n <= 0) throw new RangeError(`Discrete: n must be a positive integer, got ${n}`);
    if (!Number.isSafeInteger(start)) throw new RangeError(`Discrete: start must be an integer, got ${start}`);
    this.n = n;
    this.start = start;
    if (options.seed !== undefined) this.seed(options.seed);
  }

  override get shape(): readonly number[] {
    return [];
  }

  override get dtype(): string {
    return 'int64';
  }

  override get isNpFlattenable(): boolean {
    return true;
  }

  /**
   * Uniform over the space, or over the entries where `mask` is 1 (all-zero mask → `start`, as in Gymnasium),
   * or by `probability` (one weight per action, summing to 1).
   */
  sample(mask?: DiscreteMask, probability?: ArrayLike<number>): number {
    if (mask !== undefined && probability !== undefined) throw new TypeError('Discrete.sample: pass a mask or a probability, not both');
    if (mask !== undefined) {
      if (mask.length !== this.n) throw new RangeError(`Discrete.sample: mask length ${mask.length} != n ${this.n}`);
      const allowed: number[] = [];
      for (let i = 0; i < this.n; i++) if (maskOn(mask, i)) allowed.push(i);
      if (allowed.length === 0) return this.start;
      return this.start + this.npRandom.choice(allowed);
    }
    if (probability !== undefined) {
      if (probability.length !== this.n) throw new RangeError(`Discrete.sample: probability length ${probability.length} != n ${this.n}`);
      const idx = Array.from({ length: this.n }, (_, i) => i);
      return this.start + this.npRandom.choice(idx, { p: probability });
    }
    return this.start + this.npRandom.integers(this.n);
  }

  contains(x: unknown): x is number {
    return typeof x === 'number' && Number.isInteger(x) && x >= this.start && x < this.start + this.n;
  }

  equals(other: unknown): boolean {
    return other instanceof Discrete && other.n === this.n && other.start === this.start;
  }

  toJSON(): SpaceJSON {
    return { type: this.type, n: this.n, start: this.start };
  }

  override toString(): string {
    return this.start === 0 ? `Discrete(${this.n})` : `Discrete(${this.n}, start=${this.start})`;
  }
}
