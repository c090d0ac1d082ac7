/** Numeric dtypes supported by Box/MultiDiscrete and the typed arrays that hold their values. */

export type FloatDtype = 'float32' | 'float64';
export type IntDtype = 'int8' | 'int16' | 'int32' | 'uint8' | 'uint16' | 'uint32';
export type Dtype = FloatDtype | IntDtype;

export type TypedArray = Float32Array | Float64Array | Int8Array | Int16Array | Int32Array | Uint8Array | Uint16Array | Uint32Array;

/** The typed array that holds values of each dtype. */
export interface DtypeArrayMap {
  float32: Float32Array;
  float64: Float64Array;
  int8: Int8Array;
  int16: Int16Array;
  int32: Int32Array;
  uint8: Uint8Array;
  uint16: Uint16Array;
  uint32: Uint32Array;
}
export type ArrayOf<D extends Dtype> = DtypeArrayMap[D];

type TypedArrayCtor = { new (length: number): TypedArray; new (values: ArrayLike<number>): TypedArray; readonly name: string };

export const DTYPE_ARRAYS: Record<Dtype, TypedArrayCtor> = {
  float32: Float32Array,
  float64: Float64Array,
  int8: Int8Array,
  int16: Int16Array,
  int32: Int32Array,
  uint8: Uint8Array,
  uint16: Uint16Array,
  uint32: Uint32Array,
};

const INT_RANGES: Record<IntDtype, [number, number]> = {
  int8: [-128, 127],
  int16: [-32768, 32767],
  int32: [-2147483648, 2147483647],
  uint8: [0, 255],
  uint16: [0, 65535],
  uint32: [0, 4294967295],
};

export function isDtype(x: unknown): x is Dtype {
  return typeof x === 'string' && Object.prototype.hasOwnProperty.call(DTYPE_ARRAYS, x);
}

export function isFloatDtype(d: Dtype): d is FloatDtype {
  return d === 'float32' || d === 'float64';
}

export function intRange(d: IntDtype): [number, number] {
  return INT_RANGES[d];
}

/** The value a number takes when stored in `dtype` (float32 rounding; ints must already be integral). */
export function castScalar(x: number, dtype: Dtype): number {
  return dtype === 'float32' ? Math.fround(x) : x;
}

export function dtypeOfArray(x: unknown): Dtype | null {
  if (!ArrayBuffer.isView(x)) return null;
  for (const [d, ctor] of Object.entries(DTYPE_ARRAYS)) if (x.constructor === ctor) return d as Dtype;
  return null;
}

export function product(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}
