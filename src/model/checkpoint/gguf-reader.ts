/** GGUF v2/v3 reader with bounds checks on every count, length and offset (layout in gguf.ts). */
import { closeSync, fstatSync, openSync, readSync } from 'node:fs';
import { bf16BitsToF32, f16BitsToF32 } from './dtypes.ts';
import { CheckpointError } from './errors.ts';
import { alignUp, GGML_MAX_DIMS, ggmlByteSize, ggmlTypeName, GGUF_DEFAULT_ALIGNMENT, GGUF_MAGIC, GGUF_MAX_COUNT, GGUF_VALUE_TYPES, type GgmlTypeName, type GgufScalar, type GgufScalarType, type GgufValue, type GgufValueTypeName } from './gguf.ts';

export interface GgufTensorInfo {
  name: string;
  /** Dimensions innermost first, as stored. */
  ne: number[];
  /** Row-major shape (ne reversed). */
  shape: number[];
  typeId: number;
  type: GgmlTypeName | undefined;
  /** Offset relative to the data section. */
  offset: number;
  /** Byte size when the type is known. */
  byteSize: number | undefined;
}

export interface GgufFile {
  path: string;
  version: number;
  metadata: Map<string, GgufValue>;
  tensors: GgufTensorInfo[];
  alignment: number;
  dataStart: number;
  fileSize: number;
}

/** Sequential reads through a file descriptor with a refillable buffer, so big headers need not fit in one read. */
class ByteReader {
  private buf = new Uint8Array(0);
  private bufStart = 0;
  pos = 0;
  constructor(private readonly fd: number, readonly size: number, private readonly path: string) {}

  private take(n: number): DataView {
    if (this.pos + n > this.size) throw new CheckpointError('TRUNCATED', `${this.path}: unexpected end of file at byte ${this.pos} (needed ${n} more bytes; truncated?)`);
    if (this.pos < this.bufStart || this.pos + n > this.bufStart + this.buf.byteLength) {
      const len = Math.min(Math.max(n, 1 << 20), this.size - this.pos);
      this.buf = new Uint8Array(len);
      let got = 0;
      while (got < len) {
        const r = readSync(this.fd, this.buf, got, len - got, this.pos + got);
        if (r === 0) throw new CheckpointError('TRUNCATED', `${this.path}: unexpected end of file at byte ${this.pos + got}`);
        got += r;
      }
      this.bufStart = this.pos;
    }
    const view = new DataView(this.buf.buffer, this.pos - this.bufStart, n);
    this.pos += n;
    return view;
  }
  u8(): number { return this.take(1).getUint8(0); }
  u32(): number { return this.take(4).getUint32(0, true); }
  u64(what: string): number {
    const v = this.take(8).getBigUint64(0, true);
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) throw new CheckpointError('BAD_GGUF', `${this.path}: ${what} ${v} is implausibly large`);
    return Number(v);
  }
  string(what: string): string {
    const n = this.u64(`${what} length`);
    if (n > this.size - this.pos) throw new CheckpointError('TRUNCATED', `${this.path}: ${what} claims ${n} bytes but only ${this.size - this.pos} remain (corrupt or truncated?)`);
    const v = this.take(n);
    try {
      return new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array(v.buffer, v.byteOffset, n));
    } catch (error) {
      throw new CheckpointError('BAD_GGUF', `${this.path}: ${what} is not valid UTF-8`, { cause: error });
    }
  }
  value(type: GgufScalarType, key: string): GgufScalar {
    switch (type) {
      case 'u8': return this.u8();
      case 'i8': return this.take(1).getInt8(0);
      case 'u16': return this.take(2).getUint16(0, true);
      case 'i16': return this.take(2).getInt16(0, true);
      case 'u32': return this.u32();
      case 'i32': return this.take(4).getInt32(0, true);
      case 'f32': return this.take(4).getFloat32(0, true);
      case 'f64': return this.take(8).getFloat64(0, true);
      case 'bool': { const b = this.u8(); if (b > 1) throw new CheckpointError('BAD_GGUF', `${this.path}: key '${key}': bool byte ${b} is neither 0 nor 1`); return b === 1; }
      case 'string': return this.string(`value of '${key}'`);
      case 'u64': { const v = this.take(8).getBigUint64(0, true); return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v; }
      case 'i64': { const v = this.take(8).getBigInt64(0, true); return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= -BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v; }
    }
  }
}

function valueType(id: number, path: string, key: string): GgufValueTypeName {
  const t = GGUF_VALUE_TYPES[id];
  if (t === undefined) throw new CheckpointError('BAD_GGUF', `${path}: key '${key}' has unknown value type ${id}`);
  return t;
}

/** Parses and validates a GGUF file's header, metadata and tensor table (tensor data is read on demand). */
export function readGguf(path: string): GgufFile {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (error) {
    throw new CheckpointError('IO', `cannot open ${path}: ${(error as Error).message}`, { cause: error });
  }
  try {
    const size = fstatSync(fd).size;
    const r = new ByteReader(fd, size, path);
    if (size < 24) throw new CheckpointError('TRUNCATED', `${path}: ${size} bytes is too short for a GGUF header`);
    const magic = r.u32();
    if (magic !== GGUF_MAGIC) throw new CheckpointError('BAD_GGUF', `${path}: bad magic 0x${magic.toString(16).padStart(8, '0')} (not a GGUF file)`);
    const version = r.u32();
    if (version !== 2 && version !== 3) throw new CheckpointError('BAD_GGUF', `${path}: unsupported GGUF version ${version} (2 and 3 are supported)`);
    const nTensors = r.u64('tensor count');
    const nKv = r.u64('metadata count');
    if (nTensors > GGUF_MAX_COUNT || nKv > GGUF_MAX_COUNT) throw new CheckpointError('BAD_GGUF', `${path}: implausible counts (${nTensors} tensors, ${nKv} metadata keys)`);

    const metadata = new Map<string, GgufValue>();
    for (let i = 0; i < nKv; i++) {
      const key = r.string(`metadata key #${i}`);
      if (metadata.has(key)) throw new CheckpointError('BAD_GGUF', `${path}: duplicate metadata key '${key}'`);
      const type = valueType(r.u32(), path, key);
      if (type === 'array') {
        const itemType = valueType(r.u32(), path, key);
        if (itemType === 'array') throw new CheckpointError('BAD_GGUF', `${path}: key '${key}': nested arrays are not supported`);
        const count = r.u64(`length of '${key}'`);
        if (count > size - r.pos) throw new CheckpointError('TRUNCATED', `${path}: array '${key}' claims ${count} items but only ${size - r.pos} bytes remain`);
        const values: GgufScalar[] = [];
        for (let j = 0; j < count; j++) values.push(r.value(itemType, key));
        metadata.set(key, { type, itemType, values });
      } else {
        metadata.set(key, { type, value: r.value(type, key) });
      }
    }

    let alignment = GGUF_DEFAULT_ALIGNMENT;
    const al = metadata.get('general.alignment');
    if (al) {
      if (al.type !== 'u32' || typeof al.value !== 'number' || al.value <= 0 || (al.value & (al.value - 1)) !== 0) {
        throw new CheckpointError('BAD_GGUF', `${path}: general.alignment must be a u32 power of two, got ${JSON.stringify(al)}`);
      }
      alignment = al.value;
    }

    const tensors: GgufTensorInfo[] = [];
    const seen = new Set<string>();
    for (let i = 0; i < nTensors; i++) {
      const name = r.string(`tensor name #${i}`);
      if (seen.has(name)) throw new CheckpointError('DUPLICATE_TENSOR', `${path}: tensor '${name}' appears twice`);
      seen.add(name);
      const nDims = r.u32();
      if (nDims < 1 || nDims > GGML_MAX_DIMS) throw new CheckpointError('BAD_GGUF', `${path}: tensor '${name}' has ${nDims} dimensions (1–${GGML_MAX_DIMS} allowed)`);
      const ne: number[] = [];
      for (let d = 0; d < nDims; d++) ne.push(r.u64(`dimension of '${name}'`));
      const typeId = r.u32();
      const offset = r.u64(`offset of '${name}'`);
      if (offset % alignment !== 0) throw new CheckpointError('BAD_GGUF', `${path}: tensor '${name}' offset ${offset} is not a multiple of the alignment ${alignment}`);
      const type = ggmlTypeName(typeId);
      tensors.push({ name, ne, shape: [...ne].reverse(), typeId, type, offset, byteSize: type ? ggmlByteSize(type, ne) : undefined });
    }
    const dataStart = alignUp(r.pos, alignment);
    const sorted = [...tensors].sort((a, b) => a.offset - b.offset);
    let cursor = 0;
    for (const t of sorted) {
      if (t.offset < cursor) throw new CheckpointError('OVERLAP', `${path}: tensor '${t.name}' at offset ${t.offset} overlaps the previous tensor (ends at ${cursor})`);
      cursor = t.offset + (t.byteSize ?? 0);
      if (dataStart + cursor > size) throw new CheckpointError('TRUNCATED', `${path}: tensor '${t.name}' ends at byte ${dataStart + cursor}, past the end of the ${size}-byte file (truncated?)`);
    }
    return { path, version, metadata, tensors, alignment, dataStart, fileSize: size };
  } finally {
    closeSync(fd);
  }
}

/** Reads one F32/F16/BF16 tensor of a parsed GGUF file as float32 (row-major `shape`). */
export function readGgufTensor(file: GgufFile, name: string): Float32Array {
  const t = file.tensors.find((x) => x.name === name);
  if (!t) throw new CheckpointError('MISSING_TENSOR', `${file.path}: no tensor named '${name}'`);
  if (t.type !== 'F32' && t.type !== 'F16' && t.type !== 'BF16') throw new CheckpointError('DTYPE_MISMATCH', `${file.path}: tensor '${name}' has ggml type ${t.type ?? t.typeId}; only F32, F16 and BF16 can be read`);
  const bytes = new Uint8Array(t.byteSize!);
  const fd = openSync(file.path, 'r');
  try {
    let got = 0;
    while (got < bytes.byteLength) {
      const n = readSync(fd, bytes, got, bytes.byteLength - got, file.dataStart + t.offset + got);
      if (n === 0) throw new CheckpointError('TRUNCATED', `${file.path}: tensor '${name}' is cut short`);
      got += n;
    }
  } finally {
    closeSync(fd);
  }
  if (t.type === 'F32') return new Float32Array(bytes.buffer);
  const bits = new Uint16Array(bytes.buffer);
  const out = new Float32Array(bits.length);
  const conv = t.type === 'F16' ? f16BitsToF32 : bf16BitsToF32;
  for (let i = 0; i < bits.length; i++) out[i] = conv(bits[i]);
  return out;
}

/** A metadata value as plain JS (scalars, or arrays of scalars); throws when the key is absent. */
export function ggufGet(file: Pick<GgufFile, 'metadata' | 'path'>, key: string): GgufScalar | GgufScalar[] {
  const v = file.metadata.get(key);
  if (!v) throw new CheckpointError('MISSING_TENSOR', `${file.path}: no metadata key '${key}'`);
  return v.type === 'array' ? v.values : v.value;
}
