import { product } from './dtypes.ts';
import { maskOn, Space, type Json, type SpaceJSON } from './space.ts';

/** Mask for `MultiDiscrete.sample`: one Discrete-style mask per entry. */
export type MultiDiscreteMask = readonly ArrayLike<number | boolean>[];

/**
 * Several Discrete spaces in one array (Gymnasium's `MultiDiscrete(nvec, start)`). `nvec` is flat and row-major
 * with an optional `shape`; values are `Int32Array`s (`contains` also accepts a plain integer array).
 * Batching `Discrete(n)` k times gives `MultiDiscrete([n × k])`.
 */
export class MultiDiscrete extends Space<Int32Array, MultiDiscreteMask> {
  readonly type = 'MultiDiscrete';
  readonly nvec: Int32Array;
  readonly start: Int32Array;
  private readonly mdShape: number[];

  constructor(nvec: ArrayLike<number>, options: { start?: ArrayLike<number> | number; shape?: readonly number[]; seed?: number } = {}) {
    super();
    const shape = options.shape ? [...options.shape] : [nvec.length];
    if (product(shape) !== nvec.length) throw new RangeError(`MultiDiscrete: shape [${shape}] does not match ${nvec.length} entries`);
    const start = options.start ?? 0;
    const startArr = typeof start === 'number' ? new Array<number>(nvec.length).fill(start) : Array.from(start);
    if (startArr.length !== nvec.length) throw new RangeError('MultiDiscrete: start must have one entry per nvec entry');
    for (let i = 0; i < nvec.length; i++) {
      if (!Number.isInteger(nvec[i]) || nvec[i]! <= 0) throw new RangeError(`MultiDiscrete: nvec entries must be positive integers, got ${nvec[i]}`);
      if (!Number.isInteger(startArr[i]) || startArr[i]! + nvec[i]! - 1 > 2147483647 || startArr[i]! < -2147483648) {
        throw new RangeError('MultiDiscrete: start + nvec must fit in int32');
      }
    }
    this.nvec = Int32Array.from(nvec);
    this.start = Int32Array.from(startArr);
    this.mdShape = shape;
    if (options.seed !== undefined) this.seed(options.seed);
  }

  override get shape(): readonly number[] {
    return this.mdShape;
  }

  override get dtype(): string {
    return 'int32';
  }

  override get isNpFlattenable(): boolean {
    return true;
  }

  /** Uniform per entry; with a mask, each entry samples like `Discrete.sample(mask[i])`. */
  sample(mask?: MultiDiscreteMask): Int32Array {
    const out = new Int32Array(this.nvec.length);
    if (mask !== undefined && mask.length !== this.nvec.length) throw new RangeError(`MultiDiscrete.sample: expected ${this.nvec.length} masks, got ${mask.length}`);
    for (let i = 0; i < this.nvec.length; i++) {
      const n = this.nvec[i]!;
      if (mask === undefined) {
        out[i] = this.start[i]! + this.npRandom.integers(n);
        continue;
      }
      const m = mask[i]!;
      if (m.length !== n) throw new RangeError(`MultiDiscrete.sample: mask ${i} has length ${m.length}, expected ${n}`);
      const allowed: number[] = [];
      for (let j = 0; j < n; j++) if (maskOn(m, j)) allowed.push(j);
      out[i] = this.start[i]! + (allowed.length === 0 ? 0 : this.npRandom.choice(allowed));
    }
    return out;
  }

  contains(x: unknown): x is Int32Array {
    let values: ArrayLike<number>;
    if (x instanceof Int32Array) values = x;
    else if (Array.isArray(x) && x.every((v) => typeof v === 'number' && Number.isInteger(v))) values = x as number[];
    else return false;
    if (values.length !== this.nvec.length) return false;
    for (let i = 0; i < values.length; i++) {
      const v = values[i]! - this.start[i]!;
      if (!(v >= 0 && v < this.nvec[i]!)) return false;
    }
    return true;
  }

  equals(other: unknown): boolean {
    return (
      other instanceof MultiDiscrete &&
      other.nvec.length === this.nvec.length &&
      other.mdShape.length === this.mdShape.length &&
      other.mdShape.every((d, i) => d === this.mdShape[i]) &&
      other.nvec.every((v, i) => v === this.nvec[i] && other.start[i] === this.start[i])
    );
  }

  toJSON(): SpaceJSON {
    return { type: this.type, nvec: Array.from(this.nvec), start: Array.from(this.start), shape: [...this.mdShape] };
  }

  override valueToJSON(x: Int32Array): Json {
    return Array.from(x);
  }

  override valueFromJSON(j: Json): Int32Array {
    if (!Array.isArray(j)) throw new TypeError('MultiDiscrete value JSON must be an array');
    return Int32Array.from(j as number[]);
  }

  override toString(): string {
    return `MultiDiscrete([${Array.from(this.nvec).join(' ')}])`;
  }
}
