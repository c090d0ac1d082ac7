import { Space, type Json, type SeedResult, type SpaceJSON } from './space.ts';

/**
 * A fixed-length sequence of spaces (Gymnasium's `Tuple`); a value is an array with one element per part.
 * `seed(n)` seeds this space and derives one seed per part; `seed([n0, n1, …])` seeds the parts directly.
 */
export class Tuple<T extends unknown[] = unknown[]> extends Space<T, readonly unknown[]> {
  readonly type = 'Tuple';
  readonly spaces: readonly Space[];

  constructor(spaces: readonly Space[], options: { seed?: number } = {}) {
    super();
    spaces.forEach((s, i) => {
      if (!(s instanceof Space)) throw new TypeError(`Tuple: element ${i} is not a Space`);
    });
    this.spaces = Object.freeze([...spaces]);
    if (options.seed !== undefined) this.seed(options.seed);
  }

  override get isNpFlattenable(): boolean {
    return this.spaces.every((s) => s.isNpFlattenable);
  }

  get length(): number {
    return this.spaces.length;
  }

  override seed(seed?: number | null | readonly number[]): SeedResult {
    if (Array.isArray(seed)) {
      if (seed.length !== this.spaces.length) throw new RangeError(`Tuple.seed: expected ${this.spaces.length} seeds, got ${seed.length}`);
      return this.spaces.map((s, i) => s.seed(seed[i] as number));
    }
    super.seed(seed as number | null | undefined);
    const subSeeds = this.npRandom.childSeeds(this.spaces.length);
    return this.spaces.map((s, i) => s.seed(subSeeds[i]));
  }

  /** `mask` (optional) has one entry per part (undefined/null for "no mask"). */
  sample(mask?: readonly unknown[]): T {
    if (mask !== undefined && (!Array.isArray(mask) || mask.length !== this.spaces.length)) {
      throw new TypeError(`Tuple.sample: mask must be an array of ${this.spaces.length} masks`);
    }
    return this.spaces.map((s, i) => s.sample(mask?.[i] ?? undefined)) as T;
  }

  contains(x: unknown): x is T {
    return Array.isArray(x) && x.length === this.spaces.length && this.spaces.every((s, i) => s.contains(x[i]));
  }

  equals(other: unknown): boolean {
    return other instanceof Tuple && other.spaces.length === this.spaces.length && this.spaces.every((s, i) => s.equals(other.spaces[i]));
  }

  toJSON(): SpaceJSON {
    return { type: this.type, spaces: this.spaces.map((s) => s.toJSON() as Json) };
  }

  override valueToJSON(x: T): Json {
    return this.spaces.map((s, i) => s.valueToJSON(x[i]));
  }

  override valueFromJSON(j: Json): T {
    if (!Array.isArray(j) || j.length !== this.spaces.length) throw new TypeError(`Tuple value JSON must be an array of ${this.spaces.length}`);
    return this.spaces.map((s, i) => s.valueFromJSON(j[i]!)) as T;
  }

  override toString(): string {
    return `Tuple(${this.spaces.map((s) => s.toString()).join(', ')})`;
  }
}
