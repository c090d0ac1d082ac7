/**
 * GGUF v3 (the llama.cpp / ggml file format), little-endian:
 *   magic "GGUF" · u32 version · u64 tensor_count · u64 kv_count
 *   kv_count × (string key · u32 value_type · value)            strings are u64 length + UTF-8 bytes;
 *                                                                arrays are u32 item type + u64 count + items
 *   tensor_count × (string name · u32 n_dims · u64 ne[n_dims] · u32 ggml_type · u64 offset)
 *   padding to `general.alignment` (default 32) · tensor data (each tensor at data_start + offset, offsets aligned)
 * `ne` lists dimensions innermost first, i.e. the reverse of a row-major shape: a PyTorch [V, C] matrix has ne [C, V].
 */
import { CheckpointError } from './errors.ts';
import { numel } from './tensors.ts';

export const GGUF_MAGIC = 0x46554747; // "GGUF" read as a little-endian u32
export const GGUF_VERSION = 3;
export const GGUF_DEFAULT_ALIGNMENT = 32;
export const GGUF_MAX_COUNT = 10_000_000;
export const GGML_MAX_DIMS = 4;

export const GGUF_VALUE_TYPES = ['u8', 'i8', 'u16', 'i16', 'u32', 'i32', 'f32', 'bool', 'string', 'array', 'u64', 'i64', 'f64'] as const;
export type GgufValueTypeName = (typeof GGUF_VALUE_TYPES)[number];
export type GgufScalarType = Exclude<GgufValueTypeName, 'array'>;
export type GgufScalar = number | bigint | boolean | string;

export type GgufValue =
  | { type: GgufScalarType; value: GgufScalar }
  | { type: 'array'; itemType: GgufScalarType; values: GgufScalar[] };

/** ggml tensor types this module knows the size of (F32, F16 and BF16 can also be converted to float32). */
export const GGML_TYPES = {
  F32: { id: 0, blockSize: 1, blockBytes: 4 },
  F16: { id: 1, blockSize: 1, blockBytes: 2 },
  Q4_0: { id: 2, blockSize: 32, blockBytes: 18 },
  Q8_0: { id: 8, blockSize: 32, blockBytes: 34 },
  I8: { id: 24, blockSize: 1, blockBytes: 1 },
  I16: { id: 25, blockSize: 1, blockBytes: 2 },
  I32: { id: 26, blockSize: 1, blockBytes: 4 },
  I64: { id: 27, blockSize: 1, blockBytes: 8 },
  F64: { id: 28, blockSize: 1, blockBytes: 8 },
  BF16: { id: 30, blockSize: 1, blockBytes: 2 },
  MXFP4: { id: 39, blockSize: 32, blockBytes: 17 },
} as const;
export type GgmlTypeName = keyof typeof GGML_TYPES;

export function ggmlTypeName(id: number): GgmlTypeName | undefined {
  return (Object.keys(GGML_TYPES) as GgmlTypeName[]).find((k) => GGML_TYPES[k].id === id);
}

/** Bytes taken by a tensor of `ne` elements (innermost first); undefined for types we do not know. */
export function ggmlByteSize(type: GgmlTypeName, ne: readonly number[]): number {
  const t = GGML_TYPES[type];
  if (ne[0] % t.blockSize !== 0) throw new CheckpointError('BAD_GGUF', `${type} needs the innermost dimension to be a multiple of ${t.blockSize}, got ${ne[0]}`);
  return (numel(ne) / t.blockSize) * t.blockBytes;
}

export const alignUp = (n: number, a: number): number => Math.ceil(n / a) * a;
