import { batchSpace, concatenate, stackedLength, unbatch } from './batch.ts';
import { Space, type Json, type SeedResult, type SpaceJSON } from './space.ts';

/** Mask for `Sequence.sample`: `[length | allowedLengths | null, elementMask | null]`. */
export type SequenceMask = readonly [number | readonly number[] | null, unknown];

/**
 * Variable-length sequences of elements of `featureSpace` (Gymnasium's `Sequence(space, stack=False)`).
 * Unstacked values are arrays of elements. With `stack: true`, a value is the elements stacked as a vector env
 * would batch them (see `batch.ts`: a typed array for Box/Discrete elements, a dict of stacks for Dict, …).
 * Sampled lengths follow Gymnasium: Geometric(0.25) (≥ 1) unless the mask fixes them.
 */
export class Sequence<T = unknown> extends Space<unknown, SequenceMask> {
  readonly type = 'Sequence';
  readonly featureSpace: Space<T>;
  readonly stack: boolean;

  constructor(featureSpace: Space<T>, options: { stack?: boolean; seed?: number } = {}) {
    super();
    if (!(featureSpace instanceof Space)) throw new TypeError('Sequence: featureSpace must be a Space');
    this.featureSpace = featureSpace;
    this.stack = options.stack ?? false;
    if (options.seed !== undefined) this.seed(options.seed);
  }

  override seed(seed?: number | null): SeedResult {
    const own = super.seed(seed) as number;
    return [own, this.featureSpace.seed(this.npRandom.integers(2 ** 53))];
  }

  sample(mask?: SequenceMask): unknown {
    const [lengthMask, elementMask] = mask ?? [null, undefined];
    let length: number;
    if (typeof lengthMask === 'number') {
      if (!Number.isSafeInteger(lengthMask) || lengthMask < 0) throw new RangeError(`Sequence.sample: length must be a non-negative integer, got ${lengthMask}`);
      length = lengthMask;
    } else if (Array.isArray(lengthMask)) {
      length = this.npRandom.choice(lengthMask as number[]);
    } else {
      length = this.npRandom.geometric(0.25);
    }
    const items = Array.from({ length }, () => this.featureSpace.sample(elementMask ?? undefined));
    return this.stack ? concatenate(this.featureSpace, items) : items;
  }

  contains(x: unknown): x is unknown {
    if (!this.stack) return Array.isArray(x) && x.every((e) => this.featureSpace.contains(e));
    const n = stackedLength(this.featureSpace, x);
    if (n < 0) return false;
    try {
      return unbatch(this.featureSpace, x, n).every((e) => this.featureSpace.contains(e));
    } catch {
      return false;
    }
  }

  /** The space of stacked values of a given length (stack mode). */
  stackedSpace(length: number): Space {
    return batchSpace(this.featureSpace, length);
  }

  equals(other: unknown): boolean {
    return other instanceof Sequence && other.stack === this.stack && this.featureSpace.equals(other.featureSpace);
  }

  toJSON(): SpaceJSON {
    return { type: this.type, space: this.featureSpace.toJSON() as Json, stack: this.stack };
  }

  override valueToJSON(x: unknown): Json {
    const n = this.stack ? stackedLength(this.featureSpace, x) : -1;
    const items = this.stack ? unbatch(this.featureSpace, x, n) : (x as T[]);
    return items.map((e) => this.featureSpace.valueToJSON(e as T));
  }

  override valueFromJSON(j: Json): unknown {
    if (!Array.isArray(j)) throw new TypeError('Sequence value JSON must be an array');
    const items = j.map((e) => this.featureSpace.valueFromJSON(e));
    return this.stack ? concatenate(this.featureSpace, items) : items;
  }

  override toString(): string {
    return `Sequence(${this.featureSpace.toString()}, stack=${this.stack})`;
  }
}
