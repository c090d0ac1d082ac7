import { product } from './dtypes.ts';
import { Space, type Json, type SpaceJSON } from './space.ts';

/**
 * Binary arrays of a fixed shape (Gymnasium's `MultiBinary(n)`); values are flat row-major `Int8Array`s of 0/1
 * (`contains` also accepts a plain 0/1 array). Mask entries follow Gymnasium: 0 → 0, 1 → 1, 2 → random.
 */
export class MultiBinary extends Space<Int8Array, ArrayLike<number>> {
  readonly type = 'MultiBinary';
  private readonly mbShape: number[];
  readonly size: number;

  constructor(n: number | readonly number[], options: { seed?: number } = {}) {
    super();
    const shape = typeof n === 'number' ? [n] : [...n];
    // zero-sized dimensions are allowed so that an empty stack (a length-0 Sequence) has a space
    if (!shape.every((d) => Number.isSafeInteger(d) && d >= 0)) throw new RangeError(`MultiBinary: shape entries must be non-negative integers, got [${shape}]`);
    this.mbShape = shape;
    this.size = product(shape);
    if (options.seed !== undefined) this.seed(options.seed);
  }

  override get shape(): readonly number[] {
    return this.mbShape;
  }

  override get dtype(): string {
    return 'int8';
  }

  override get isNpFlattenable(): boolean {
    return true;
  }

  sample(mask?: ArrayLike<number>): Int8Array {
    if (mask !== undefined && mask.length !== this.size) throw new RangeError(`MultiBinary.sample: mask length ${mask.length} != ${this.size}`);
    const out = new Int8Array(this.size);
    for (let i = 0; i < this.size; i++) {
      const m = mask === undefined ? 2 : mask[i];
      if (m === 0 || m === 1) out[i] = m;
      else if (m === 2) out[i] = this.npRandom.integers(2);
      else throw new RangeError(`MultiBinary.sample: mask entries must be 0, 1 or 2, got ${String(m)}`);
    }
    return out;
  }

  contains(x: unknown): x is Int8Array {
    if (!(x instanceof Int8Array) && !Array.isArray(x)) return false;
    const values = x as ArrayLike<unknown>;
    if (values.length !== this.size) return false;
    for (let i = 0; i < values.length; i++) if (values[i] !== 0 && values[i] !== 1) return false;
    return true;
  }

  equals(other: unknown): boolean {
    return other instanceof MultiBinary && other.mbShape.length === this.mbShape.length && other.mbShape.every((d, i) => d === this.mbShape[i]);
  }

  toJSON(): SpaceJSON {
    return { type: this.type, shape: [...this.mbShape] };
  }

  override valueToJSON(x: Int8Array): Json {
    return Array.from(x);
  }

  override valueFromJSON(j: Json): Int8Array {
    if (!Array.isArray(j)) throw new TypeError('MultiBinary value JSON must be an array');
    return Int8Array.from(j as number[]);
  }

  override toString(): string {
    return `MultiBinary(${this.mbShape.length === 1 ? this.mbShape[0] : `[${this.mbShape}]`})`;
  }
}
