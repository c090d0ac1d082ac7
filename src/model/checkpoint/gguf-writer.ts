/** GGUF v3 writer (layout in gguf.ts). */
import { closeSync, openSync, renameSync, rmSync, writeSync } from 'node:fs';
import { endianness } from 'node:os';
import { f32ToF16Bits } from './dtypes.ts';
import { CheckpointError } from './errors.ts';
import { alignUp, GGML_MAX_DIMS, GGML_TYPES, ggmlByteSize, GGUF_DEFAULT_ALIGNMENT, GGUF_MAGIC, GGUF_VALUE_TYPES, GGUF_VERSION, type GgufScalar, type GgufScalarType, type GgufValue } from './gguf.ts';
import { numel, shapeString } from './tensors.ts';

export interface GgufTensorToWrite {
  name: string;
  /** Row-major shape (outermost first); written reversed as `ne`. */
  shape: number[];
  type: 'F32' | 'F16';
  /** float32 values, converted to `type` on write; a thunk keeps only one tensor in memory at a time. */
  data: Float32Array | (() => Float32Array);
}

class ByteWriter {
  private chunks: Uint8Array[] = [];
  length = 0;
  private push(bytes: Uint8Array): void { this.chunks.push(bytes); this.length += bytes.byteLength; }
  private scalar(size: number, set: (v: DataView) => void): void { const b = new Uint8Array(size); set(new DataView(b.buffer)); this.push(b); }
  u32(v: number): void { this.scalar(4, (d) => d.setUint32(0, v, true)); }
  u64(v: number | bigint): void { this.scalar(8, (d) => d.setBigUint64(0, BigInt(v), true)); }
  string(s: string): void { const b = new TextEncoder().encode(s); this.u64(b.byteLength); this.push(b); }
  value(type: GgufScalarType, v: GgufScalar, key: string): void {
    const bad = (): never => { throw new CheckpointError('BAD_ARGUMENT', `GGUF key '${key}': ${JSON.stringify(typeof v === 'bigint' ? v.toString() : v)} is not a valid ${type}`); };
    const int = (lo: number, hi: number): number => (typeof v === 'number' && Number.isInteger(v) && v >= lo && v <= hi ? v : bad());
    switch (type) {
      case 'u8': this.scalar(1, (d) => d.setUint8(0, int(0, 0xff))); break;
      case 'i8': this.scalar(1, (d) => d.setInt8(0, int(-0x80, 0x7f))); break;
      case 'u16': this.scalar(2, (d) => d.setUint16(0, int(0, 0xffff), true)); break;
      case 'i16': this.scalar(2, (d) => d.setInt16(0, int(-0x8000, 0x7fff), true)); break;
      case 'u32': this.scalar(4, (d) => d.setUint32(0, int(0, 0xffffffff), true)); break;
      case 'i32': this.scalar(4, (d) => d.setInt32(0, int(-0x80000000, 0x7fffffff), true)); break;
      case 'f32': this.scalar(4, (d) => d.setFloat32(0, typeof v === 'number' ? v : bad(), true)); break;
      case 'f64': this.scalar(8, (d) => d.setFloat64(0, typeof v === 'number' ? v : bad(), true)); break;
      case 'bool': this.scalar(1, (d) => d.setUint8(0, typeof v === 'boolean' ? Number(v) : bad())); break;
      case 'string': if (typeof v !== 'string') bad(); this.string(v as string); break;
      case 'u64': this.scalar(8, (d) => d.setBigUint64(0, BigInt(typeof v === 'number' ? int(0, Number.MAX_SAFE_INTEGER) : typeof v === 'bigint' && v >= 0n ? v : bad()), true)); break;
      case 'i64': this.scalar(8, (d) => d.setBigInt64(0, BigInt(typeof v === 'number' ? int(-Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER) : typeof v === 'bigint' ? v : bad()), true)); break;
    }
  }
  bytes(): Uint8Array {
    const out = new Uint8Array(this.length);
    let o = 0;
    for (const c of this.chunks) { out.set(c, o); o += c.byteLength; }
    return out;
  }
}

export interface GgufLayout {
  dataStart: number;
  offsets: number[];
  fileSize: number;
}

/**
 * Writes a GGUF v3 file. `general.alignment` is written when the alignment is not the default 32 (and must not
 * disagree with one given in `metadata`). Written under a temporary name and renamed when complete.
 */
export function writeGguf(path: string, metadata: ReadonlyMap<string, GgufValue>, tensors: readonly GgufTensorToWrite[], alignment = GGUF_DEFAULT_ALIGNMENT): GgufLayout {
  if (endianness() !== 'LE') throw new CheckpointError('IO', 'GGUF I/O needs a little-endian host');
  if (!Number.isInteger(alignment) || alignment <= 0 || (alignment & (alignment - 1)) !== 0) throw new CheckpointError('BAD_ARGUMENT', `GGUF alignment must be a power of two, got ${alignment}`);
  const kv = new Map(metadata);
  const given = kv.get('general.alignment');
  if (given && !(given.type === 'u32' && given.value === alignment)) throw new CheckpointError('BAD_ARGUMENT', `metadata general.alignment ${JSON.stringify(given)} disagrees with alignment ${alignment}`);
  if (alignment !== GGUF_DEFAULT_ALIGNMENT) kv.set('general.alignment', { type: 'u32', value: alignment });

  const names = new Set<string>();
  for (const t of tensors) {
    if (names.has(t.name)) throw new CheckpointError('DUPLICATE_TENSOR', `GGUF tensor '${t.name}' given twice`);
    names.add(t.name);
    if (t.shape.length < 1 || t.shape.length > GGML_MAX_DIMS || !t.shape.every((d) => Number.isSafeInteger(d) && d > 0)) {
      throw new CheckpointError('BAD_ARGUMENT', `GGUF tensor '${t.name}': shape ${shapeString(t.shape)} must have 1–${GGML_MAX_DIMS} positive dimensions`);
    }
  }

  const w = new ByteWriter();
  w.u32(GGUF_MAGIC);
  w.u32(GGUF_VERSION);
  w.u64(tensors.length);
  w.u64(kv.size);
  for (const [key, v] of kv) {
    w.string(key);
    w.u32(GGUF_VALUE_TYPES.indexOf(v.type));
    if (v.type === 'array') {
      w.u32(GGUF_VALUE_TYPES.indexOf(v.itemType));
      w.u64(v.values.length);
      for (const item of v.values) w.value(v.itemType, item, key);
    } else {
      w.value(v.type, v.value, key);
    }
  }
  const offsets: number[] = [];
  let offset = 0;
  for (const t of tensors) {
    const ne = [...t.shape].reverse();
    w.string(t.name);
    w.u32(ne.length);
    for (const d of ne) w.u64(d);
    w.u32(GGML_TYPES[t.type].id);
    w.u64(offset);
    offsets.push(offset);
    offset = alignUp(offset + ggmlByteSize(t.type, ne), alignment);
  }
  const dataStart = alignUp(w.length, alignment);
  const head = new Uint8Array(dataStart);
  head.set(w.bytes());

  const tmp = `${path}.partial-${process.pid}`;
  const fd = openSync(tmp, 'w');
  try {
    writeAll(fd, head);
    tensors.forEach((t, i) => {
      const values = typeof t.data === 'function' ? t.data() : t.data;
      if (values.length !== numel(t.shape)) throw new CheckpointError('BAD_ARGUMENT', `GGUF tensor '${t.name}': shape ${shapeString(t.shape)} needs ${numel(t.shape)} values, got ${values.length}`);
      const bytes = t.type === 'F32' ? new Uint8Array(values.buffer, values.byteOffset, values.byteLength) : f16Bytes(values);
      writeAll(fd, bytes);
      const end = i + 1 < tensors.length ? offsets[i + 1] : offset;
      const pad = end - (offsets[i] + bytes.byteLength);
      if (pad > 0) writeAll(fd, new Uint8Array(pad));
    });
    closeSync(fd);
    renameSync(tmp, path);
  } catch (error) {
    try { closeSync(fd); } catch { /* already closed */ }
    rmSync(tmp, { force: true });
    throw error;
  }
  return { dataStart, offsets, fileSize: dataStart + offset };
}

function f16Bytes(values: Float32Array): Uint8Array {
  const out = new Uint16Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = f32ToF16Bits(values[i]);
  return new Uint8Array(out.buffer);
}

function writeAll(fd: number, bytes: Uint8Array): void {
  let done = 0;
  while (done < bytes.byteLength) done += writeSync(fd, bytes, done, bytes.byteLength - done);
}
