import { Space, type Json, type SeedResult, type SpaceJSON } from './space.ts';

/**
 * Exactly one of several spaces (Gymnasium's `OneOf`). A value is `[index, value]` with `value` in
 * `spaces[index]`. Sampling picks the index uniformly; the optional mask is one mask per subspace.
 */
export class OneOf extends Space<[number, unknown], readonly unknown[]> {
  readonly type = 'OneOf';
  readonly spaces: readonly Space[];

  constructor(spaces: readonly Space[], options: { seed?: number } = {}) {
    super();
    if (spaces.length === 0) throw new RangeError('OneOf: needs at least one space');
    spaces.forEach((s, i) => {
      if (!(s instanceof Space)) throw new TypeError(`OneOf: element ${i} is not a Space`);
    });
    this.spaces = Object.freeze([...spaces]);
    if (options.seed !== undefined) this.seed(options.seed);
  }

  override seed(seed?: number | null): SeedResult {
    const own = super.seed(seed) as number;
    const subSeeds = this.npRandom.childSeeds(this.spaces.length);
    return [own, ...this.spaces.map((s, i) => s.seed(subSeeds[i]))];
  }

  sample(mask?: readonly unknown[]): [number, unknown] {
    if (mask !== undefined && (!Array.isArray(mask) || mask.length !== this.spaces.length)) throw new TypeError(`OneOf.sample: mask must be an array of ${this.spaces.length} masks`);
    const index = this.npRandom.integers(this.spaces.length);
    return [index, this.spaces[index]!.sample(mask?.[index] ?? undefined)];
  }

  contains(x: unknown): x is [number, unknown] {
    if (!Array.isArray(x) || x.length !== 2) return false;
    const [i, v] = x;
    return typeof i === 'number' && Number.isInteger(i) && i >= 0 && i < this.spaces.length && this.spaces[i]!.contains(v);
  }

  equals(other: unknown): boolean {
    return other instanceof OneOf && other.spaces.length === this.spaces.length && this.spaces.every((s, i) => s.equals(other.spaces[i]));
  }

  toJSON(): SpaceJSON {
    return { type: this.type, spaces: this.spaces.map((s) => s.toJSON() as Json) };
  }

  override valueToJSON(x: [number, unknown]): Json {
    return [x[0], this.spaces[x[0]]!.valueToJSON(x[1])];
  }

  override valueFromJSON(j: Json): [number, unknown] {
    if (!Array.isArray(j) || j.length !== 2 || typeof j[0] !== 'number') throw new TypeError('OneOf value JSON must be [index, value]');
    const space = this.spaces[j[0]];
    if (!space) throw new RangeError(`OneOf value JSON: index ${j[0]} out of range`);
    return [j[0], space.valueFromJSON(j[1]!)];
  }

  override toString(): string {
    return `OneOf(${this.spaces.map((s) => s.toString()).join(', ')})`;
  }
}
