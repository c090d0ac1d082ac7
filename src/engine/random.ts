/**
 * mulberry32 (T. Ettinger's 32-bit generator): a small seeded PRNG with a normal sampler, for weight
 * initialisation, sampling, test data and retry jitter. It is not the Gymnasium-compatible generator of
 * `src/gym/rng.ts` (`XoshiroRng`, with savable state) nor the synthetic-world generator of
 * `src/domains/retail/synth/rng.ts` (`SynthRng`).
 */
export class Mulberry32Rng {
  private state: number;
  private spare: number | undefined;

  constructor(seed: number) {
    if (!Number.isFinite(seed)) throw new RangeError(`Mulberry32Rng seed must be a finite number, got ${seed}`);
    this.state = seed >>> 0;
  }

  /** Uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) >>> 0;
    let t = this.state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Uniform in [lo, hi). */
  uniform(lo = 0, hi = 1): number {
    return lo + (hi - lo) * this.next();
  }

  /** Standard normal (Box–Muller). */
  normal(): number {
    if (this.spare !== undefined) {
      const s = this.spare;
      this.spare = undefined;
      return s;
    }
    let u = 0;
    while (u === 0) u = this.next();
    const v = this.next();
    const r = Math.sqrt(-2 * Math.log(u));
    this.spare = r * Math.sin(2 * Math.PI * v);
    return r * Math.cos(2 * Math.PI * v);
  }

  /** Integer in [0, n). */
  int(n: number): number {
    return Math.floor(this.next() * n);
  }
}

/** A mulberry32 stream as a function: each call the next uniform in [0, 1). */
export function mulberry32(seed: number): () => number {
  const rng = new Mulberry32Rng(seed);
  return () => rng.next();
}
