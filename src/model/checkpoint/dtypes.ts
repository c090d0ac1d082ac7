/**
 * Tensor element types as safetensors names them, their byte sizes and typed arrays, and the float conversions
 * (F16 and BF16 are kept as raw 16-bit patterns in a Uint16Array; float32 → 16-bit rounds to nearest, ties to even).
 */
export const DTYPES = ['F64', 'F32', 'F16', 'BF16', 'I64', 'U64', 'I32', 'U32', 'I16', 'U16', 'I8', 'U8', 'BOOL', 'F8_E4M3', 'F8_E5M2'] as const;
export type DType = (typeof DTYPES)[number];

export type TensorData =
  | Float64Array | Float32Array | Uint16Array | Int16Array | BigInt64Array | BigUint64Array
  | Int32Array | Uint32Array | Int8Array | Uint8Array;

type TypedArrayCtor = { new (buffer: ArrayBuffer, byteOffset?: number, length?: number): TensorData; BYTES_PER_ELEMENT: number };

const CTOR: Record<DType, TypedArrayCtor> = {
  F64: Float64Array, F32: Float32Array, F16: Uint16Array, BF16: Uint16Array, I64: BigInt64Array, U64: BigUint64Array,
  I32: Int32Array, U32: Uint32Array, I16: Int16Array, U16: Uint16Array, I8: Int8Array, U8: Uint8Array, BOOL: Uint8Array,
  F8_E4M3: Uint8Array, F8_E5M2: Uint8Array,
};

export function isDType(value: unknown): value is DType {
  return typeof value === 'string' && (DTYPES as readonly string[]).includes(value);
}

export function dtypeSize(dtype: DType): number {
  return CTOR[dtype].BYTES_PER_ELEMENT;
}

export function isFloatDType(dtype: DType): dtype is 'F64' | 'F32' | 'F16' | 'BF16' {
  return dtype === 'F64' || dtype === 'F32' || dtype === 'F16' || dtype === 'BF16';
}

/** The typed-array class that holds `dtype` data (F16/BF16: Uint16Array of bit patterns). */
export function dataMatchesDType(data: TensorData, dtype: DType): boolean {
  return data instanceof CTOR[dtype];
}

/** A typed array over `bytes` (copied when the offset is not aligned for the element size). */
export function viewAs(dtype: DType, bytes: Uint8Array): TensorData {
  const ctor = CTOR[dtype];
  const size = ctor.BYTES_PER_ELEMENT;
  if (bytes.byteLength % size !== 0) throw new RangeError(`${bytes.byteLength} bytes is not a whole number of ${dtype} elements`);
  if (bytes.byteOffset % size === 0 && bytes.buffer instanceof ArrayBuffer) return new ctor(bytes.buffer, bytes.byteOffset, bytes.byteLength / size);
  const copy = new Uint8Array(bytes.byteLength);
  copy.set(bytes);
  return new ctor(copy.buffer, 0, bytes.byteLength / size);
}

export function allocate(dtype: DType, count: number): TensorData {
  const ctor = CTOR[dtype];
  return new ctor(new ArrayBuffer(count * ctor.BYTES_PER_ELEMENT));
}

export function bytesOf(data: TensorData): Uint8Array {
  return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

export function f32ToBf16Bits(x: number): number {
  f32[0] = x;
  const bits = u32[0];
  if ((bits & 0x7f800000) === 0x7f800000 && (bits & 0x7fffff) !== 0) return ((bits >>> 16) & 0x8000) | 0x7fc0; // quiet NaN
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
}

export function bf16BitsToF32(bits: number): number {
  u32[0] = (bits & 0xffff) << 16;
  return f32[0];
}

export function f32ToF16Bits(x: number): number {
  f32[0] = x;
  const bits = u32[0];
  const sign = (bits >>> 16) & 0x8000;
  const exp = (bits >>> 23) & 0xff;
  const mant = bits & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant !== 0 ? 0x200 | (mant >>> 13) : 0);
  const e = exp - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    const m = mant | 0x800000;
    const shift = 14 - e;
    let half = m >>> shift;
    const rem = m & ((1 << shift) - 1);
    const halfway = 1 << (shift - 1);
    if (rem > halfway || (rem === halfway && (half & 1) === 1)) half++;
    return sign | half;
  }
  let half = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem === 0x1000 && (half & 1) === 1)) half++;
  return sign | half;
}

export function f16BitsToF32(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exp = (bits >>> 10) & 0x1f;
  const mant = bits & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 0x1f) return mant !== 0 ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

/** Converts float32 values to `dtype` (floats round to nearest even; integer types must hold integers in range). */
export function fromFloat32(values: Float32Array, dtype: DType): TensorData {
  switch (dtype) {
    case 'F32': return values;
    case 'F64': return Float64Array.from(values);
    case 'BF16': { const out = new Uint16Array(values.length); for (let i = 0; i < values.length; i++) out[i] = f32ToBf16Bits(values[i]); return out; }
    case 'F16': { const out = new Uint16Array(values.length); for (let i = 0; i < values.length; i++) out[i] = f32ToF16Bits(values[i]); return out; }
    default: throw new RangeError(`cannot convert float32 values to ${dtype}`);
  }
}

/** Widens any numeric tensor to float32 (the copy is fresh unless the input already is float32). */
export function toFloat32(data: TensorData, dtype: DType): Float32Array {
  if (!dataMatchesDType(data, dtype)) throw new TypeError(`${data.constructor.name} does not hold ${dtype} data`);
  if (dtype === 'F32') return data as Float32Array;
  const out = new Float32Array(data.length);
  if (dtype === 'BF16') { for (let i = 0; i < data.length; i++) out[i] = bf16BitsToF32((data as Uint16Array)[i]); return out; }
  if (dtype === 'F16') { for (let i = 0; i < data.length; i++) out[i] = f16BitsToF32((data as Uint16Array)[i]); return out; }
  if (dtype === 'F8_E4M3' || dtype === 'F8_E5M2') throw new RangeError(`conversion of ${dtype} to float32 is not supported`);
  for (let i = 0; i < data.length; i++) out[i] = Number(data[i]);
  return out;
}
