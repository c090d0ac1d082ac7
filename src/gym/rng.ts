/**
 * Seeded pseudo-random generator standing in for numpy's `np.random.Generator`.
 *
 * Algorithm: xoshiro128** (Blackman & Vigna; 128-bit state, period 2^128 − 1, 32-bit outputs) — fast in JS because
 * it needs only 32-bit integer ops. Seeds are non-negative safe integers (< 2^53); both 32-bit halves of the seed
 * are expanded into the four state words with a SplitMix32-style mixer, so nearby seeds give unrelated streams.
 * It does not reproduce numpy's PCG64 streams: same seed → same numbers *within longrun*, not across languages.
 */
import { getRandomValues } from 'node:crypto';

const TWO_POW_32 = 4294967296;
const TWO_POW_53 = 9007199254740992;

/** A 32-bit avalanche mixer (SplitMix32 finaliser constants). */
function mix32(x: number): number {
  let z = x | 0;
  z ^= z >>> 16;
  z = Math.imul(z, 0x21f0aaad);
  z ^= z >>> 15;
  z = Math.imul(z, 0x735a2d97);
  z ^= z >>> 15;
  return z >>> 0;
}

function rotl(x: number, k: number): number {
  return ((x << k) | (x >>> (32 - k))) >>> 0;
}

function isIntegerUpTo53Bits(x: number): boolean {
  return Number.isInteger(x) && Math.abs(x) <= TWO_POW_53;
}

/** Throws a clear error unless `seed` is a non-negative safe integer. */
export function assertValidSeed(seed: unknown, what = 'Seed'): asserts seed is number {
  if (typeof seed !== 'number' || !Number.isSafeInteger(seed) || seed < 0) {
    throw new RangeError(`${what} must be a non-negative integer below 2^53 or omitted, not ${String(seed)}`);
  }
}

/** A fresh seed from the OS entropy pool (a non-negative integer below 2^53). */
export function entropySeed(): number {
  const words = getRandomValues(new Uint32Array(2));
  return (words[0]! & 0x1fffff) * TWO_POW_32 + words[1]!;
}

/** The internal generator state; two generators with equal states produce equal streams. */
export interface RngState {
  readonly algorithm: 'xoshiro128**';
  readonly s: readonly [number, number, number, number];
}

/** The Gymnasium-compatible generator (`env.npRandom`, spaces' `sample`); its state can be saved and restored. */
export class XoshiroRng {
  private s0 = 0;
  private s1 = 0;
  private s2 = 0;
  private s3 = 0;

  constructor(seed: number) {
    assertValidSeed(seed);
    const lo = seed >>> 0;
    const hi = Math.floor(seed / TWO_POW_32) >>> 0;
    const golden = 0x9e3779b9;
    const words = [0, 1, 2, 3].map((i) => (mix32(lo + Math.imul(i + 1, golden)) ^ mix32(hi ^ mix32(Math.imul(i + 5, golden)))) >>> 0);
    if (!words.some((w) => w !== 0)) words[0] = 1; // the all-zero state is the one fixed point of xoshiro
    [this.s0, this.s1, this.s2, this.s3] = words as [number, number, number, number];
  }

  /** Next raw 32-bit unsigned integer. */
  nextUint32(): number {
    const result = Math.imul(rotl(Math.imul(this.s1, 5) >>> 0, 7), 9) >>> 0;
    const t = (this.s1 << 9) >>> 0;
    this.s2 = (this.s2 ^ this.s0) >>> 0;
    this.s3 = (this.s3 ^ this.s1) >>> 0;
    this.s1 = (this.s1 ^ this.s2) >>> 0;
    this.s0 = (this.s0 ^ this.s3) >>> 0;
    this.s2 = (this.s2 ^ t) >>> 0;
    this.s3 = rotl(this.s3, 11);
    return result;
  }

  /** Uniform float in [0, 1) with 53 random bits. */
  random(): number {
    const a = this.nextUint32() >>> 5;
    const b = this.nextUint32() >>> 6;
    return (a * 67108864 + b) / TWO_POW_53;
  }

  /** Uniform float in [low, high). */
  uniform(low = 0, high = 1): number {
    return low + (high - low) * this.random();
  }

  /**
   * Uniform integer, numpy-style: `integers(high)` draws from [0, high), `integers(low, high)` from [low, high),
   * and `endpoint: true` makes `high` inclusive. Unbiased (rejection sampling). The range must fit in 2^53.
   */
  integers(lowOrHigh: number, high?: number, options: { endpoint?: boolean } = {}): number {
    let low = lowOrHigh;
    let hi = high;
    if (hi === undefined) {
      hi = lowOrHigh;
      low = 0;
    }
    if (!isIntegerUpTo53Bits(low) || !isIntegerUpTo53Bits(hi)) throw new RangeError(`integers() bounds must be integers within ±2^53, got ${low} and ${hi}`);
    const range = hi - low + (options.endpoint ? 1 : 0);
    if (range <= 0) throw new RangeError(`integers(): low >= high (low=${low}, high=${hi}${options.endpoint ? ', endpoint' : ''})`);
    if (range > TWO_POW_53) throw new RangeError('integers(): range exceeds 2^53');
    if (range <= TWO_POW_32) {
      const limit = TWO_POW_32 - (TWO_POW_32 % range);
      for (;;) {
        const x = this.nextUint32();
        if (x < limit) return low + (x % range);
      }
    }
    const limit = TWO_POW_53 - (TWO_POW_53 % range);
    for (;;) {
      const x = (this.nextUint32() >>> 5) * 67108864 + (this.nextUint32() >>> 6);
      if (x < limit) return low + (x % range);
    }
  }

  /** Normal variate (Box–Muller, two uniforms per call so the state holds no cached spare). */
  normal(mean = 0, std = 1): number {
    const u1 = 1 - this.random(); // (0, 1]
    const u2 = this.random();
    return mean + std * Math.sqrt(-2 * Math.log(u1)) * Math.cos(2 * Math.PI * u2);
  }

  /** Exponential variate with the given scale (mean). */
  exponential(scale = 1): number {
    return -Math.log(1 - this.random()) * scale;
  }

  /** Number of Bernoulli(p) trials up to and including the first success (numpy's `geometric`, support 1, 2, …). */
  geometric(p: number): number {
    if (!(p > 0 && p <= 1)) throw new RangeError(`geometric(): p must be in (0, 1], got ${p}`);
    if (p === 1) return 1;
    return Math.floor(Math.log(1 - this.random()) / Math.log(1 - p)) + 1;
  }

  /** One element of `items`, uniformly or with probabilities `p` (which must sum to 1). */
  choice<T>(items: readonly T[], options: { p?: ArrayLike<number> } = {}): T {
    if (items.length === 0) throw new RangeError('choice(): cannot choose from an empty array');
    const p = options.p;
    if (p === undefined) return items[this.integers(items.length)]!;
    if (p.length !== items.length) throw new RangeError(`choice(): p has length ${p.length}, items ${items.length}`);
    let total = 0;
    for (let i = 0; i < p.length; i++) {
      if (!(p[i]! >= 0)) throw new RangeError('choice(): probabilities must be non-negative');
      total += p[i]!;
    }
    if (Math.abs(total - 1) > 1e-8) throw new RangeError(`choice(): probabilities must sum to 1, got ${total}`);
    const u = this.random() * total;
    let acc = 0;
    for (let i = 0; i < p.length; i++) {
      acc += p[i]!;
      if (u < acc && p[i]! > 0) return items[i]!;
    }
    for (let i = p.length - 1; i >= 0; i--) if (p[i]! > 0) return items[i]!;
    return items[items.length - 1]!;
  }

  /** Fisher–Yates shuffle in place; returns the same array. */
  shuffle<T>(items: T[]): T[] {
    for (let i = items.length - 1; i > 0; i--) {
      const j = this.integers(i + 1);
      const tmp = items[i]!;
      items[i] = items[j]!;
      items[j] = tmp;
    }
    return items;
  }

  /** A random permutation of 0..n-1. */
  permutation(n: number): number[] {
    return this.shuffle(Array.from({ length: n }, (_, i) => i));
  }

  /** `n` child seeds drawn from this generator (advances it); use them to seed independent sub-generators. */
  childSeeds(n: number): number[] {
    return Array.from({ length: n }, () => this.integers(TWO_POW_53));
  }

  /** `n` independent child generators (advances this one). */
  spawn(n: number): XoshiroRng[] {
    return this.childSeeds(n).map((s) => new XoshiroRng(s));
  }

  state(): RngState {
    return { algorithm: 'xoshiro128**', s: [this.s0, this.s1, this.s2, this.s3] };
  }

  setState(state: RngState): void {
    if (state.algorithm !== 'xoshiro128**' || state.s.length !== 4) throw new TypeError('setState(): not an xoshiro128** state');
    [this.s0, this.s1, this.s2, this.s3] = state.s.map((w) => w >>> 0) as [number, number, number, number];
  }

  /** True when both generators would produce the same stream. */
  sameState(other: XoshiroRng): boolean {
    return this.s0 === other.s0 && this.s1 === other.s1 && this.s2 === other.s2 && this.s3 === other.s3;
  }

  clone(): XoshiroRng {
    const copy = new XoshiroRng(0);
    copy.setState(this.state());
    return copy;
  }
}

/**
 * Gymnasium's `seeding.np_random(seed)`: returns a generator and the seed used. Without a seed, one is drawn
 * from OS entropy (and returned, so the run can be reproduced).
 */
export function makeRng(seed?: number | null): [XoshiroRng, number] {
  if (seed === undefined || seed === null) seed = entropySeed();
  assertValidSeed(seed);
  return [new XoshiroRng(seed), seed];
}

/** Deterministic child seeds for `n` sub-environments or workers derived from one root seed. */
export function deriveSeeds(rootSeed: number, n: number): number[] {
  return new XoshiroRng(rootSeed).childSeeds(n);
}
