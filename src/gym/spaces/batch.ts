/**
 * Batching of spaces and values for vector envs and `Sequence(stack: true)` (Gymnasium's `batch_space`,
 * `concatenate`, `iterate`):
 *   Discrete(n) → MultiDiscrete([n]*k) (Int32Array), MultiDiscrete → MultiDiscrete with a leading k dimension,
 *   Box(shape) → Box([k, ...shape]) (one flat typed array), MultiBinary(shape) → MultiBinary([k, ...shape]),
 *   Dict/Tuple → Dict/Tuple of batched parts,
 *   anything else (Text, Sequence, OneOf, ToolCallSpace) → Tuple of k copies (an array of k values), exactly as
 *   Gymnasium batches its non-numeric spaces.
 */
import { Box } from './box.ts';
import { Dict } from './dict.ts';
import { Discrete } from './discrete.ts';
import { DTYPE_ARRAYS, type Dtype, type TypedArray } from './dtypes.ts';
import { MultiBinary } from './multi-binary.ts';
import { MultiDiscrete } from './multi-discrete.ts';
import { isPlainObject, type Space } from './space.ts';
import { isKnownSpaceType, spaceFromJSON } from './json.ts';
import { Tuple } from './tuple.ts';

/** The space of `n` stacked values of `space`. Its generator is seeded from `space`'s generator. */
export function batchSpace(space: Space, n: number): Space {
  if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`batchSpace: n must be a non-negative integer, got ${n}`);
  const batched = batchSpaceUnseeded(space, n);
  batched.seed(space.npRandom.integers(2 ** 53));
  return batched;
}

function batchSpaceUnseeded(space: Space, n: number): Space {
  if (space instanceof Discrete) return new MultiDiscrete(new Array<number>(n).fill(space.n), { start: space.start });
  if (space instanceof MultiDiscrete) {
    const nvec: number[] = [];
    const start: number[] = [];
    for (let i = 0; i < n; i++) {
      nvec.push(...space.nvec);
      start.push(...space.start);
    }
    return new MultiDiscrete(nvec, { start, shape: [n, ...space.shape] });
  }
  if (space instanceof MultiBinary) return new MultiBinary([n, ...space.shape]);
  if (space instanceof Box) {
    const low: number[] = [];
    const high: number[] = [];
    for (let i = 0; i < n; i++) {
      low.push(...space.low);
      high.push(...space.high);
    }
    return new Box(low, high, { shape: [n, ...space.shape], dtype: space.dtype });
  }
  if (space instanceof Dict) {
    const parts: Record<string, Space> = {};
    for (const key of space.keys) parts[key] = batchSpaceUnseeded(space.spaces[key]!, n);
    return new Dict(parts);
  }
  if (space instanceof Tuple) return new Tuple(space.spaces.map((s) => batchSpaceUnseeded(s, n)));
  // Gymnasium deep-copies the space; a JSON round trip is our copy. Spaces of unregistered custom types cannot be
  // rebuilt from JSON, so the same instance is repeated (they then share one generator).
  const copy = (): Space => (isKnownSpaceType(space.type) ? spaceFromJSON(space.toJSON()) : space);
  return new Tuple(Array.from({ length: n }, copy));
}

/** Stacks `items` (values of `space`) into one batched value. */
export function concatenate(space: Space, items: readonly unknown[]): unknown {
  if (space instanceof Discrete) return Int32Array.from(items as number[]);
  if (isNumericArraySpace(space)) {
    const [size, ctor] = numericLayout(space);
    const out = new ctor(size * items.length);
    items.forEach((item, i) => {
      const v = typeof item === 'number' ? [item] : (item as ArrayLike<number>);
      if (v.length !== size) throw new RangeError(`concatenate: item ${i} has ${v.length} entries, expected ${size}`);
      out.set(v, i * size);
    });
    return out;
  }
  if (space instanceof Dict) {
    const out: Record<string, unknown> = {};
    for (const key of space.keys) out[key] = concatenate(space.spaces[key]!, items.map((it) => (it as Record<string, unknown>)[key]));
    return out;
  }
  if (space instanceof Tuple) return space.spaces.map((s, j) => concatenate(s, items.map((it) => (it as unknown[])[j])));
  return [...items];
}

/**
 * Splits a batched value into its `n` items (inverse of `concatenate`). For Discrete/MultiDiscrete/Box it also
 * accepts a plain array of `n` per-item values, so `venv.step([0, 1, 1])` works.
 */
export function unbatch(space: Space, batched: unknown, n: number): unknown[] {
  if (space instanceof Discrete) {
    const arr = batched as ArrayLike<number>;
    if (arr?.length !== n) throw new RangeError(`unbatch: expected ${n} Discrete values, got ${describeLength(batched)}`);
    return Array.from(arr);
  }
  if (isNumericArraySpace(space)) {
    const [size, ctor] = numericLayout(space);
    if (Array.isArray(batched) && batched.length === n && batched.every((b) => typeof b !== 'number')) {
      return batched.map((b) => new ctor(b as ArrayLike<number>));
    }
    const flat = batched as ArrayLike<number>;
    if (flat?.length !== n * size) throw new RangeError(`unbatch: expected ${n}×${size} values, got ${describeLength(batched)}`);
    const src: TypedArray = ArrayBuffer.isView(flat) ? (flat as TypedArray) : new ctor(flat);
    return Array.from({ length: n }, (_, i) => src.slice(i * size, (i + 1) * size));
  }
  if (space instanceof Dict) {
    if (!isPlainObject(batched)) throw new TypeError('unbatch: a batched Dict value must be an object');
    const parts: Record<string, unknown[]> = {};
    for (const key of space.keys) parts[key] = unbatch(space.spaces[key]!, batched[key], n);
    return Array.from({ length: n }, (_, i) => Object.fromEntries(space.keys.map((k) => [k, parts[k]![i]])));
  }
  if (space instanceof Tuple) {
    if (!Array.isArray(batched) || batched.length !== space.spaces.length) throw new TypeError('unbatch: a batched Tuple value must be an array with one entry per part');
    const parts = space.spaces.map((s, j) => unbatch(s, batched[j], n));
    return Array.from({ length: n }, (_, i) => parts.map((p) => p[i]));
  }
  if (!Array.isArray(batched) || batched.length !== n) throw new RangeError(`unbatch: expected an array of ${n} values, got ${describeLength(batched)}`);
  return [...batched];
}

/** Number of items in a stacked value of `space` (used by `Sequence(stack: true)`), or -1 if it is not one. */
export function stackedLength(space: Space, stacked: unknown): number {
  if (space instanceof Discrete) return stacked instanceof Int32Array || Array.isArray(stacked) ? (stacked as ArrayLike<number>).length : -1;
  if (isNumericArraySpace(space)) {
    const [size] = numericLayout(space);
    if (!ArrayBuffer.isView(stacked) && !Array.isArray(stacked)) return -1;
    const len = (stacked as ArrayLike<number>).length;
    if (size === 0) return -1;
    return len % size === 0 ? len / size : -1;
  }
  if (space instanceof Dict) {
    if (!isPlainObject(stacked) || space.keys.length === 0) return -1;
    return stackedLength(space.spaces[space.keys[0]!]!, stacked[space.keys[0]!]);
  }
  if (space instanceof Tuple) {
    if (!Array.isArray(stacked) || space.spaces.length === 0 || stacked.length !== space.spaces.length) return -1;
    return stackedLength(space.spaces[0]!, stacked[0]);
  }
  return Array.isArray(stacked) ? stacked.length : -1;
}

type NumericArraySpace = Box<Dtype> | MultiDiscrete | MultiBinary;
type TypedArrayCtor = new (x: number | ArrayLike<number>) => TypedArray;

function isNumericArraySpace(space: Space): space is NumericArraySpace {
  return space instanceof Box || space instanceof MultiDiscrete || space instanceof MultiBinary;
}

/** Values per item and the typed array that holds them. */
function numericLayout(space: NumericArraySpace): [number, TypedArrayCtor] {
  if (space instanceof Box) return [space.size, DTYPE_ARRAYS[space.dtype] as unknown as TypedArrayCtor];
  if (space instanceof MultiBinary) return [space.size, Int8Array];
  return [space.nvec.length, Int32Array];
}

function describeLength(x: unknown): string {
  if (x === null || x === undefined) return String(x);
  const len = (x as { length?: unknown }).length;
  return typeof len === 'number' ? `length ${len}` : typeof x;
}
