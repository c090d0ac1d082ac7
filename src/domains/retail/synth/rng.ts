/**
 * A small seeded generator (sfc32 seeded through splitmix32) for the synthetic retail worlds, tasks, user phrasings
 * and the random agent. Every random choice in `synth/` goes through one of these, so a seed fixes the output.
 */

function splitmix32(state: number): () => number {
  let s = state >>> 0;
  return () => {
    s = (s + 0x9e3779b9) >>> 0;
    let z = s;
    z = Math.imul(z ^ (z >>> 16), 0x85ebca6b) >>> 0;
    z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35) >>> 0;
    return (z ^ (z >>> 16)) >>> 0;
  };
}

export class SynthRng {
  private a: number;
  private b: number;
  private c: number;
  private d: number;

  constructor(seed: number) {
    if (!Number.isSafeInteger(seed)) throw new Error(`A seed must be a safe integer, got ${seed}`);
    const mix = splitmix32((seed >>> 0) ^ Math.floor(seed / 2 ** 32));
    this.a = mix();
    this.b = mix();
    this.c = mix();
    this.d = mix();
    for (let i = 0; i < 12; i++) this.nextU32();
  }

  /** An independent generator derived from this one and a label (so adding draws elsewhere does not shift it). */
  fork(label: string): SynthRng {
    let h = 0x811c9dc5;
    for (let i = 0; i < label.length; i++) h = Math.imul(h ^ label.charCodeAt(i), 0x01000193) >>> 0;
    return new SynthRng((this.nextU32() ^ h) >>> 0);
  }

  nextU32(): number {
    const t = (((this.a + this.b) >>> 0) + this.d) >>> 0;
    this.d = (this.d + 1) >>> 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) >>> 0;
    this.c = ((this.c << 21) | (this.c >>> 11)) >>> 0;
    this.c = (this.c + t) >>> 0;
    return t;
  }

  /** Uniform in [0, 1). */
  float(): number {
    return this.nextU32() / 4294967296;
  }

  /** Uniform integer in [lo, hi] (inclusive). */
  int(lo: number, hi: number): number {
    if (hi < lo) throw new Error(`Empty integer range [${lo}, ${hi}]`);
    return lo + Math.floor(this.float() * (hi - lo + 1));
  }

  chance(p: number): boolean {
    return this.float() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new Error('Cannot pick from an empty list');
    return items[Math.floor(this.float() * items.length)]!;
  }

  /** Index drawn with probability proportional to `weights`. */
  weighted(weights: readonly number[]): number {
    const total = weights.reduce((s, w) => s + w, 0);
    let x = this.float() * total;
    for (let i = 0; i < weights.length; i++) {
      x -= weights[i]!;
      if (x < 0) return i;
    }
    return weights.length - 1;
  }

  shuffle<T>(items: readonly T[]): T[] {
    const out = [...items];
    for (let i = out.length - 1; i > 0; i--) {
      const j = Math.floor(this.float() * (i + 1));
      [out[i], out[j]] = [out[j]!, out[i]!];
    }
    return out;
  }

  /** `k` distinct items in random order. */
  sample<T>(items: readonly T[], k: number): T[] {
    return this.shuffle(items).slice(0, k);
  }

  /** A string of `n` decimal digits (leading zeros allowed unless `noLeadingZero`). */
  digits(n: number, noLeadingZero = false): string {
    let s = '';
    for (let i = 0; i < n; i++) s += String(i === 0 && noLeadingZero ? this.int(1, 9) : this.int(0, 9));
    return s;
  }
}
