import { makeRng, type XoshiroRng } from '../rng.ts';

/** JSON-safe value. */
export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** Serialized form of a space: `{ type: 'Discrete', ... }`; read back with `spaceFromJSON`. */
export interface SpaceJSON {
  type: string;
  [key: string]: Json;
}

/** What `seed()` returns: the seed of a simple space, or the seeds of a composite space's parts. */
export type SeedResult = number | SeedResult[] | { [key: string]: SeedResult };

/**
 * Base class of all spaces (Gymnasium's `Space[T]`). Each space owns a generator for `sample`, seeded from OS
 * entropy on first use unless `seed(n)` is called first.
 */
export abstract class Space<T = unknown, Mask = unknown> {
  /** Tag written by `toJSON` and read by `spaceFromJSON`. */
  abstract readonly type: string;
  protected rngInstance: XoshiroRng | null = null;
  protected rngSeed: number | null = null;

  /** Shape of a value as numpy would report it, or null for spaces without a fixed shape (Text, Dict, …). */
  get shape(): readonly number[] | null {
    return null;
  }

  /** Element dtype name, or null when not applicable. */
  get dtype(): string | null {
    return null;
  }

  /** True if values flatten to a fixed-length numeric vector. */
  get isNpFlattenable(): boolean {
    return false;
  }

  /** The space's generator (seeded from entropy on first use). */
  get npRandom(): XoshiroRng {
    if (this.rngInstance === null) this.seed();
    return this.rngInstance!;
  }

  /** Reseeds the space's generator (and those of its parts); returns the seeds used. */
  seed(seed?: number | null): SeedResult {
    const [rng, used] = makeRng(seed);
    this.rngInstance = rng;
    this.rngSeed = used;
    return used;
  }

  /** A random element; `mask` restricts it as documented by each space. */
  abstract sample(mask?: Mask): T;

  /** Whether `x` is an element of this space. */
  abstract contains(x: unknown): x is T;

  /** Structural equality of spaces (not of generator state). */
  abstract equals(other: unknown): boolean;

  abstract toJSON(): SpaceJSON;

  /** A JSON-safe encoding of one value (typed arrays become number arrays). */
  valueToJSON(x: T): Json {
    return x as unknown as Json;
  }

  /** Inverse of `valueToJSON`. */
  valueFromJSON(j: Json): T {
    return j as unknown as T;
  }

  toString(): string {
    return `${this.type}(${JSON.stringify(this.toJSON())})`;
  }
}

/** Reads a 0/1 (or boolean) mask entry. */
export function maskOn(mask: ArrayLike<number | boolean>, i: number): boolean {
  const v = mask[i];
  if (v === 1 || v === true) return true;
  if (v === 0 || v === false) return false;
  throw new TypeError(`Mask entries must be 0/1 or booleans, got ${String(v)} at index ${i}`);
}

export function isPlainObject(x: unknown): x is Record<string, unknown> {
  if (typeof x !== 'object' || x === null || Array.isArray(x) || ArrayBuffer.isView(x)) return false;
  const proto = Object.getPrototypeOf(x);
  return proto === Object.prototype || proto === null;
}
