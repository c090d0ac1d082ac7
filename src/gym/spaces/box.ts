import { castScalar, DTYPE_ARRAYS, dtypeOfArray, intRange, isDtype, isFloatDtype, product, type ArrayOf, type Dtype, type IntDtype, type TypedArray } from './dtypes.ts';
import { Space, type Json, type SpaceJSON } from './space.ts';

export interface BoxOptions<D extends Dtype = Dtype> {
  /** Value shape; inferred from `low`/`high` arrays when omitted (scalar bounds without a shape give shape [], one value). */
  shape?: readonly number[];
  dtype?: D;
  seed?: number;
}

/**
 * A (possibly unbounded) box in R^n (Gymnasium's `Box`). Values are flat, row-major typed arrays of the box's dtype
 * (`Float32Array` for the default `float32`); `contains` also accepts a plain number array of the right length, as
 * Gymnasium accepts lists. Integer dtypes need finite bounds.
 */
export class Box<D extends Dtype = 'float32'> extends Space<ArrayOf<D>> {
  readonly type = 'Box';
  readonly low: TypedArray;
  readonly high: TypedArray;
  private readonly boxShape: number[];
  private readonly boxDtype: D;

  constructor(low: number | ArrayLike<number>, high: number | ArrayLike<number>, options: BoxOptions<D> = {}) {
    super();
    const dtype = (options.dtype ?? 'float32') as D;
    if (!isDtype(dtype)) throw new TypeError(`Box: unsupported dtype ${String(dtype)}`);
    let shape = options.shape ? [...options.shape] : undefined;
    if (shape === undefined) {
      if (typeof low !== 'number') shape = [low.length];
      else if (typeof high !== 'number') shape = [high.length];
      else shape = [];
    }
    if (!shape.every((d) => Number.isSafeInteger(d) && d >= 0)) throw new RangeError(`Box: shape must be non-negative integers, got [${shape}]`);
    const size = product(shape);
    const ctor = DTYPE_ARRAYS[dtype];
    const fill = (b: number | ArrayLike<number>, name: string): Float64Array => {
      if (typeof b === 'number') return new Float64Array(size).fill(b);
      if (b.length !== size) throw new RangeError(`Box: ${name} has ${b.length} entries but shape [${shape}] needs ${size}`);
      return Float64Array.from(b);
    };
    const lo = fill(low, 'low');
    const hi = fill(high, 'high');
    for (let i = 0; i < size; i++) {
      if (Number.isNaN(lo[i]) || Number.isNaN(hi[i])) throw new RangeError('Box: bounds must not be NaN');
      if (lo[i]! > hi[i]!) throw new RangeError(`Box: low must be <= high, but low[${i}]=${lo[i]} > high[${i}]=${hi[i]}`);
      if (lo[i] === Infinity || hi[i] === -Infinity) throw new RangeError('Box: low cannot be +inf and high cannot be -inf');
      if (!isFloatDtype(dtype)) {
        const [min, max] = intRange(dtype as IntDtype);
        for (const v of [lo[i]!, hi[i]!]) {
          if (!Number.isFinite(v)) throw new RangeError(`Box: integer dtype ${dtype} needs finite bounds, got ${v}`);
          if (!Number.isInteger(v) || v < min || v > max) throw new RangeError(`Box: bound ${v} is not representable in ${dtype}`);
        }
      }
    }
    this.low = new ctor(lo.map((v) => castScalar(v, dtype)));
    this.high = new ctor(hi.map((v) => castScalar(v, dtype)));
    this.boxShape = shape;
    this.boxDtype = dtype;
    if (options.seed !== undefined) this.seed(options.seed);
  }

  override get shape(): readonly number[] {
    return this.boxShape;
  }

  override get dtype(): D {
    return this.boxDtype;
  }

  override get isNpFlattenable(): boolean {
    return true;
  }

  get size(): number {
    return this.low.length;
  }

  /** Whether every dimension is bounded `below`, `above` or `both`. */
  isBounded(manner: 'below' | 'above' | 'both' = 'both'): boolean {
    const below = Array.from(this.low).every((v) => v > -Infinity);
    const above = Array.from(this.high).every((v) => v < Infinity);
    if (manner === 'below') return below;
    if (manner === 'above') return above;
    return below && above;
  }

  /**
   * Per dimension, as Gymnasium does: [low, high] bounded → uniform; only low → low + Exp(1); only high →
   * high − Exp(1); unbounded → N(0, 1). Integer dtypes draw uniformly from [low, high + 1) and floor.
   * Box takes no mask.
   */
  sample(mask?: unknown): ArrayOf<D> {
    if (mask !== undefined && mask !== null) throw new TypeError('Box.sample cannot be masked; pass no mask');
    const rng = this.npRandom;
    const isInt = !isFloatDtype(this.boxDtype);
    const out = new DTYPE_ARRAYS[this.boxDtype](this.size);
    for (let i = 0; i < this.size; i++) {
      const lo = this.low[i]!;
      const hi = isInt ? this.high[i]! + 1 : this.high[i]!;
      const below = lo > -Infinity;
      const above = hi < Infinity;
      let v: number;
      if (below && above) v = rng.uniform(lo, hi);
      else if (below) v = lo + rng.exponential();
      else if (above) v = hi - rng.exponential();
      else v = rng.normal();
      if (isInt) v = Math.min(Math.floor(v), this.high[i]!);
      else v = Math.min(Math.max(castScalar(v, this.boxDtype), lo), this.high[i]!);
      out[i] = v;
    }
    return out as ArrayOf<D>;
  }

  contains(x: unknown): x is ArrayOf<D> {
    let values: ArrayLike<number>;
    if (ArrayBuffer.isView(x)) {
      if (dtypeOfArray(x) !== this.boxDtype) return false;
      values = x as unknown as ArrayLike<number>;
    } else if (Array.isArray(x)) {
      if (!x.every((v) => typeof v === 'number')) return false;
      if (!isFloatDtype(this.boxDtype) && !x.every((v) => Number.isInteger(v))) return false;
      values = x.map((v: number) => castScalar(v, this.boxDtype));
    } else if (typeof x === 'number' && this.size === 1) {
      values = [castScalar(x, this.boxDtype)];
    } else {
      return false;
    }
    if (values.length !== this.size) return false;
    for (let i = 0; i < values.length; i++) {
      const v = values[i]!;
      if (!(v >= this.low[i]! && v <= this.high[i]!)) return false;
    }
    return true;
  }

  equals(other: unknown): boolean {
    return (
      other instanceof Box &&
      other.boxDtype === this.boxDtype &&
      other.boxShape.length === this.boxShape.length &&
      other.boxShape.every((d, i) => d === this.boxShape[i]) &&
      other.low.every((v, i) => v === this.low[i]) &&
      other.high.every((v, i) => v === this.high[i])
    );
  }

  toJSON(): SpaceJSON {
    return { type: this.type, dtype: this.boxDtype, shape: [...this.boxShape], low: boundsToJSON(this.low), high: boundsToJSON(this.high) };
  }

  override valueToJSON(x: ArrayOf<D>): Json {
    return Array.from(x);
  }

  override valueFromJSON(j: Json): ArrayOf<D> {
    if (!Array.isArray(j)) throw new TypeError('Box value JSON must be an array of numbers');
    return new DTYPE_ARRAYS[this.boxDtype](j as number[]) as ArrayOf<D>;
  }

  override toString(): string {
    const lo = this.low.every((v) => v === this.low[0]) ? String(this.low[0]) : `[${Array.from(this.low)}]`;
    const hi = this.high.every((v) => v === this.high[0]) ? String(this.high[0]) : `[${Array.from(this.high)}]`;
    return `Box(${lo}, ${hi}, (${this.boxShape.join(', ')}${this.boxShape.length === 1 ? ',' : ''}), ${this.boxDtype})`;
  }
}

/** Infinite bounds are written as "inf"/"-inf" because JSON has no infinities. */
function boundsToJSON(b: TypedArray): Json[] {
  return Array.from(b, (v) => (v === Infinity ? 'inf' : v === -Infinity ? '-inf' : v));
}

export function boundsFromJSON(j: Json): number[] {
  if (!Array.isArray(j)) throw new TypeError('Box bounds JSON must be an array');
  return j.map((v) => {
    if (v === 'inf') return Infinity;
    if (v === '-inf') return -Infinity;
    if (typeof v !== 'number') throw new TypeError(`Box bound must be a number, "inf" or "-inf", got ${JSON.stringify(v)}`);
    return v;
  });
}
