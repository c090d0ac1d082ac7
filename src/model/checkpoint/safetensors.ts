/**
 * safetensors: an 8-byte little-endian header length N, N bytes of JSON (`name → { dtype, shape, data_offsets }`
 * plus an optional `__metadata__` string map; padded with spaces so the data starts 8-byte aligned), then the data
 * section, where `data_offsets = [begin, end)` are relative to its start. Tensors must tile the data section exactly.
 *
 * Reading is lazy: `SafetensorsFile.open` reads and validates only the header; `read(name)` reads one tensor's
 * bytes at its offset, so a 13 GB shard never has to fit in memory.
 */
import { closeSync, fstatSync, openSync, readSync, renameSync, rmSync, writeSync } from 'node:fs';
import { endianness } from 'node:os';
import { allocate, bytesOf, dtypeSize, isDType, type DType, type TensorData } from './dtypes.ts';
import { CheckpointError } from './errors.ts';
import { duplicates, topLevelKeys } from './json-keys.ts';
import { checkTensor, numel, shapeString, type NamedTensor, type NamedTensors } from './tensors.ts';

/** The safetensors reference implementation refuses headers above 100 MB; so do we. */
export const MAX_HEADER_BYTES = 100_000_000;

export interface TensorInfo {
  name: string;
  dtype: DType;
  shape: number[];
  /** Byte range inside the data section. */
  begin: number;
  end: number;
}

export interface SafetensorsHeader {
  tensors: Map<string, TensorInfo>;
  metadata: Record<string, string>;
  /** Absolute file offset of the data section (8 + header length). */
  dataStart: number;
}

function assertLittleEndianHost(): void {
  if (endianness() !== 'LE') throw new CheckpointError('IO', 'safetensors I/O needs a little-endian host');
}

/** Validates a header (its JSON text) against a file of `fileSize` bytes whose header length field was `headerLength`. */
export function parseSafetensorsHeader(text: string, headerLength: number, fileSize: number, source: string): SafetensorsHeader {
  if (!text.startsWith('{')) throw new CheckpointError('BAD_JSON', `${source}: header does not start with '{' (not a safetensors file?)`);
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new CheckpointError('BAD_JSON', `${source}: header is not valid JSON: ${(error as Error).message}`, { cause: error });
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new CheckpointError('BAD_HEADER', `${source}: header must be a JSON object`);
  const dup = duplicates(topLevelKeys(text));
  if (dup.length) throw new CheckpointError('DUPLICATE_TENSOR', `${source}: header names ${dup.map((d) => `'${d}'`).join(', ')} more than once`);

  const dataStart = 8 + headerLength;
  const dataSize = fileSize - dataStart;
  const metadata: Record<string, string> = {};
  const tensors = new Map<string, TensorInfo>();
  for (const [name, entry] of Object.entries(raw as Record<string, unknown>)) {
    if (name === '__metadata__') {
      if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw new CheckpointError('BAD_HEADER', `${source}: __metadata__ must be an object of strings`);
      for (const [k, v] of Object.entries(entry)) {
        if (typeof v !== 'string') throw new CheckpointError('BAD_HEADER', `${source}: __metadata__.${k} must be a string, got ${typeof v}`);
        metadata[k] = v;
      }
      continue;
    }
    tensors.set(name, parseEntry(name, entry, source));
  }

  const sorted = [...tensors.values()].sort((a, b) => a.begin - b.begin || a.end - b.end);
  let cursor = 0;
  for (const t of sorted) {
    if (t.begin < cursor) throw new CheckpointError('OVERLAP', `${source}: tensor '${t.name}' bytes [${t.begin}, ${t.end}) overlap the previous tensor, which ends at ${cursor}`);
    if (t.begin > cursor) throw new CheckpointError('GAP', `${source}: ${t.begin - cursor} unused bytes before tensor '${t.name}' at data offset ${cursor}`);
    cursor = t.end;
  }
  if (cursor > dataSize) {
    throw new CheckpointError('TRUNCATED', `${source}: tensors need ${cursor} data bytes but the file holds only ${Math.max(0, dataSize)} (truncated file?)`);
  }
  if (cursor < dataSize) throw new CheckpointError('TRAILING_BYTES', `${source}: ${dataSize - cursor} bytes after the last tensor belong to no tensor`);
  return { tensors, metadata, dataStart };
}

function parseEntry(name: string, entry: unknown, source: string): TensorInfo {
  const where = `${source}: tensor '${name}'`;
  if (typeof entry !== 'object' || entry === null || Array.isArray(entry)) throw new CheckpointError('BAD_HEADER', `${where}: entry must be an object`);
  const { dtype, shape, data_offsets: offsets, ...rest } = entry as Record<string, unknown>;
  const extra = Object.keys(rest);
  if (extra.length) throw new CheckpointError('BAD_HEADER', `${where}: unknown field(s) ${extra.join(', ')}`);
  if (!isDType(dtype)) throw new CheckpointError('UNKNOWN_DTYPE', `${where}: unknown dtype ${JSON.stringify(dtype)}`);
  if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && (d as number) >= 0)) {
    throw new CheckpointError('BAD_HEADER', `${where}: shape must be an array of non-negative integers, got ${JSON.stringify(shape)}`);
  }
  if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every((o) => Number.isSafeInteger(o) && (o as number) >= 0) || offsets[0] > offsets[1]) {
    throw new CheckpointError('BAD_HEADER', `${where}: data_offsets must be [begin, end] with 0 ≤ begin ≤ end, got ${JSON.stringify(offsets)}`);
  }
  const [begin, end] = offsets as [number, number];
  const want = numel(shape as number[]) * dtypeSize(dtype);
  if (end - begin !== want) {
    throw new CheckpointError('BYTE_LENGTH', `${where}: ${dtype} ${shapeString(shape as number[])} needs ${want} bytes but data_offsets span ${end - begin}`);
  }
  return { name, dtype, shape: shape as number[], begin, end };
}

/** A safetensors file opened for lazy reads. Call `close()` when done. */
export class SafetensorsFile {
  private fd: number | null;

  private constructor(readonly path: string, fd: number, readonly header: SafetensorsHeader) {
    this.fd = fd;
  }

  static open(path: string): SafetensorsFile {
    assertLittleEndianHost();
    let fd: number;
    try {
      fd = openSync(path, 'r');
    } catch (error) {
      throw new CheckpointError('IO', `cannot open ${path}: ${(error as Error).message}`, { cause: error });
    }
    try {
      const size = fstatSync(fd).size;
      if (size < 8) throw new CheckpointError('TRUNCATED', `${path}: file is ${size} bytes, too short for the 8-byte header length (truncated?)`);
      const lenBytes = readExactly(fd, 0, 8, path);
      const n = new DataView(lenBytes.buffer).getBigUint64(0, true);
      if (n < 2n || n > BigInt(MAX_HEADER_BYTES)) throw new CheckpointError('BAD_HEADER_LENGTH', `${path}: header length ${n} is implausible (must be 2…${MAX_HEADER_BYTES}; not a safetensors file?)`);
      const headerLength = Number(n);
      if (8 + headerLength > size) throw new CheckpointError('TRUNCATED', `${path}: header length ${headerLength} runs past the end of the ${size}-byte file (truncated?)`);
      let text: string;
      try {
        text = new TextDecoder('utf-8', { fatal: true }).decode(readExactly(fd, 8, headerLength, path));
      } catch (error) {
        throw new CheckpointError('BAD_JSON', `${path}: header is not valid UTF-8`, { cause: error });
      }
      return new SafetensorsFile(path, fd, parseSafetensorsHeader(text, headerLength, size, path));
    } catch (error) {
      closeSync(fd);
      throw error;
    }
  }

  get metadata(): Record<string, string> {
    return this.header.metadata;
  }

  names(): string[] {
    return [...this.header.tensors.keys()];
  }

  has(name: string): boolean {
    return this.header.tensors.has(name);
  }

  info(name: string): TensorInfo {
    const info = this.header.tensors.get(name);
    if (!info) throw new CheckpointError('MISSING_TENSOR', `${this.path}: no tensor named '${name}'`);
    return info;
  }

  /** Reads one tensor's bytes (only those) from disk. */
  read(name: string): NamedTensor {
    if (this.fd === null) throw new CheckpointError('IO', `${this.path}: file is closed`);
    const info = this.info(name);
    const data = allocate(info.dtype, numel(info.shape));
    readInto(this.fd, this.header.dataStart + info.begin, bytesOf(data), this.path);
    return { dtype: info.dtype, shape: [...info.shape], data };
  }

  readAll(): NamedTensors {
    return new Map(this.names().map((n) => [n, this.read(n)]));
  }

  close(): void {
    if (this.fd !== null) closeSync(this.fd);
    this.fd = null;
  }
}

function readExactly(fd: number, position: number, length: number, path: string): Uint8Array {
  const out = new Uint8Array(length);
  readInto(fd, position, out, path);
  return out;
}

function readInto(fd: number, position: number, target: Uint8Array, path: string): void {
  let done = 0;
  while (done < target.byteLength) {
    const chunk = Math.min(target.byteLength - done, 1 << 30);
    const got = readSync(fd, target, done, chunk, position + done);
    if (got === 0) throw new CheckpointError('TRUNCATED', `${path}: unexpected end of file at byte ${position + done} (file changed or truncated?)`);
    done += got;
  }
}

/** Reads a whole safetensors file (tensors and metadata). */
export function readSafetensors(path: string): { tensors: NamedTensors; metadata: Record<string, string> } {
  const file = SafetensorsFile.open(path);
  try {
    return { tensors: file.readAll(), metadata: { ...file.metadata } };
  } finally {
    file.close();
  }
}

/** A tensor to write; `data` may be a thunk so big checkpoints are converted one tensor at a time. */
export interface TensorToWrite {
  dtype: DType;
  shape: number[];
  data: TensorData | (() => TensorData);
}

/** The header text (space-padded to a multiple of 8 bytes after the length field) for tensors in the given order. */
export function buildSafetensorsHeader(entries: ReadonlyArray<readonly [string, { dtype: DType; shape: number[] }]>, metadata?: Record<string, string>): Uint8Array {
  const header: Record<string, unknown> = {};
  if (metadata && Object.keys(metadata).length) header.__metadata__ = metadata;
  let offset = 0;
  const seen = new Set<string>();
  for (const [name, t] of entries) {
    if (name === '__metadata__') throw new CheckpointError('BAD_ARGUMENT', `'__metadata__' cannot be a tensor name`);
    if (seen.has(name)) throw new CheckpointError('DUPLICATE_TENSOR', `tensor '${name}' given twice`);
    seen.add(name);
    const bytes = numel(t.shape) * dtypeSize(t.dtype);
    header[name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  const json = new TextEncoder().encode(JSON.stringify(header));
  const padded = Math.ceil(json.byteLength / 8) * 8;
  const out = new Uint8Array(padded).fill(0x20);
  out.set(json);
  return out;
}

/**
 * Writes tensors (in map order) to `path`. The file appears only when complete: it is written under a temporary
 * name and renamed, so a failure never leaves a half-written file in place of a good one.
 */
export function writeSafetensors(path: string, tensors: ReadonlyMap<string, TensorToWrite>, metadata?: Record<string, string>): void {
  assertLittleEndianHost();
  const entries = [...tensors.entries()];
  const header = buildSafetensorsHeader(entries, metadata);
  const tmp = `${path}.partial-${process.pid}`;
  const fd = openSync(tmp, 'w');
  try {
    const len = new Uint8Array(8);
    new DataView(len.buffer).setBigUint64(0, BigInt(header.byteLength), true);
    writeAll(fd, len);
    writeAll(fd, header);
    for (const [name, t] of entries) {
      const data = typeof t.data === 'function' ? t.data() : t.data;
      checkTensor(name, { dtype: t.dtype, shape: t.shape, data });
      writeAll(fd, bytesOf(data));
    }
    closeSync(fd);
    renameSync(tmp, path);
  } catch (error) {
    try { closeSync(fd); } catch { /* already closed */ }
    rmSync(tmp, { force: true });
    throw error;
  }
}

function writeAll(fd: number, bytes: Uint8Array): void {
  let done = 0;
  while (done < bytes.byteLength) done += writeSync(fd, bytes, done, bytes.byteLength - done);
}
