import { isPlainObject, Space, type Json, type SeedResult, type SpaceJSON } from './space.ts';

/**
 * A dictionary of named spaces (Gymnasium's `Dict`). Keys are kept sorted, as Gymnasium sorts a plain dict.
 * A value is a plain object with exactly these keys. `seed(n)` seeds this space and derives one seed per part;
 * `seed({key: n, ...})` seeds the parts directly.
 */
export class Dict<T extends Record<string, unknown> = Record<string, unknown>> extends Space<T, Record<string, unknown>> {
  readonly type = 'Dict';
  readonly spaces: Readonly<Record<string, Space>>;

  constructor(spaces: Record<string, Space>, options: { seed?: number } = {}) {
    super();
    const sorted: Record<string, Space> = {};
    for (const key of Object.keys(spaces).sort()) {
      const s = spaces[key];
      if (!(s instanceof Space)) throw new TypeError(`Dict: entry "${key}" is not a Space`);
      sorted[key] = s;
    }
    this.spaces = Object.freeze(sorted);
    if (options.seed !== undefined) this.seed(options.seed);
  }

  get keys(): string[] {
    return Object.keys(this.spaces);
  }

  override get isNpFlattenable(): boolean {
    return Object.values(this.spaces).every((s) => s.isNpFlattenable);
  }

  override seed(seed?: number | null | Record<string, number>): SeedResult {
    if (isPlainObject(seed)) {
      const out: Record<string, SeedResult> = {};
      for (const key of Object.keys(seed)) {
        const s = this.spaces[key];
        if (!s) throw new RangeError(`Dict.seed: unknown key "${key}"`);
        out[key] = s.seed(seed[key] as number);
      }
      return out;
    }
    super.seed(seed as number | null | undefined);
    const out: Record<string, SeedResult> = {};
    const subSeeds = this.npRandom.childSeeds(this.keys.length);
    this.keys.forEach((key, i) => (out[key] = this.spaces[key]!.seed(subSeeds[i])));
    return out;
  }

  /** `mask` (optional) maps keys to the mask for that part. */
  sample(mask?: Record<string, unknown>): T {
    if (mask !== undefined && !isPlainObject(mask)) throw new TypeError('Dict.sample: mask must be an object keyed like the space');
    const out: Record<string, unknown> = {};
    for (const key of this.keys) out[key] = this.spaces[key]!.sample(mask?.[key]);
    return out as T;
  }

  contains(x: unknown): x is T {
    if (!isPlainObject(x)) return false;
    const keys = Object.keys(x);
    if (keys.length !== this.keys.length) return false;
    return this.keys.every((k) => Object.prototype.hasOwnProperty.call(x, k) && this.spaces[k]!.contains(x[k]));
  }

  equals(other: unknown): boolean {
    if (!(other instanceof Dict) || other.keys.length !== this.keys.length) return false;
    return this.keys.every((k) => other.spaces[k] !== undefined && this.spaces[k]!.equals(other.spaces[k]));
  }

  toJSON(): SpaceJSON {
    const spaces: Record<string, Json> = {};
    for (const key of this.keys) spaces[key] = this.spaces[key]!.toJSON() as Json;
    return { type: this.type, spaces };
  }

  override valueToJSON(x: T): Json {
    const out: Record<string, Json> = {};
    for (const key of this.keys) out[key] = this.spaces[key]!.valueToJSON(x[key]);
    return out;
  }

  override valueFromJSON(j: Json): T {
    if (!isPlainObject(j)) throw new TypeError('Dict value JSON must be an object');
    const out: Record<string, unknown> = {};
    for (const key of this.keys) out[key] = this.spaces[key]!.valueFromJSON((j as Record<string, Json>)[key] ?? null);
    return out as T;
  }

  override toString(): string {
    return `Dict(${this.keys.map((k) => `'${k}': ${this.spaces[k]!.toString()}`).join(', ')})`;
  }
}
