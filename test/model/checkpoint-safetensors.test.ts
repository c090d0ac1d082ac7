import assert from 'node:assert/strict';
import { closeSync, mkdirSync, openSync, readFileSync, statSync, truncateSync, writeFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import {
  bf16BitsToF32, CheckpointError, DTYPES, f16BitsToF32, f32ToBf16Bits, f32ToF16Bits, fromFloat32, openTensorSource, readSafetensors,
  SafetensorsFile, toFloat32, writeCheckpointTensors, writeSafetensors, type DType, type NamedTensor, type TensorData,
} from '../../src/model/checkpoint/index.ts';
import { randomF32, rng, tempDir, writeRawSafetensors } from './checkpoint-helpers.ts';

const tmp = tempDir('safetensors');
after(tmp.cleanup);

function sampleData(dtype: DType, n: number, seed: number): TensorData {
  const r = rng(seed);
  const ints = (lo: number, hi: number): number[] => Array.from({ length: n }, () => Math.floor(lo + r() * (hi - lo)));
  switch (dtype) {
    case 'F64': return Float64Array.from({ length: n }, () => r() * 2 - 1);
    case 'F32': return randomF32(n, seed);
    case 'F16': case 'BF16': case 'U16': return Uint16Array.from(ints(0, 0xffff));
    case 'I64': return BigInt64Array.from(ints(-1e9, 1e9), (v) => BigInt(v) * 1000003n);
    case 'U64': return BigUint64Array.from(ints(0, 1e9), (v) => BigInt(v) * 1000003n);
    case 'I32': return Int32Array.from(ints(-2e9, 2e9));
    case 'U32': return Uint32Array.from(ints(0, 4e9));
    case 'I16': return Int16Array.from(ints(-32768, 32767));
    case 'I8': return Int8Array.from(ints(-128, 127));
    case 'U8': case 'F8_E4M3': case 'F8_E5M2': return Uint8Array.from(ints(0, 255));
    case 'BOOL': return Uint8Array.from(ints(0, 2));
  }
}

/** The nearest representable 16-bit float to x (ties to the even bit pattern), found by bisection over all patterns. */
function nearestBits(x: number, decode: (bits: number) => number, maxFinite: number, infBits: number): number {
  const sign = x < 0 || Object.is(x, -0) ? 0x8000 : 0;
  const a = Math.abs(x);
  let lo = 0, hi = maxFinite;
  if (a >= decode(maxFinite)) {
    const ulp = decode(maxFinite) - decode(maxFinite - 1);
    const threshold = decode(maxFinite) + ulp / 2; // halfway to the next (overflowing) value, which has an even pattern
    return sign | (a >= threshold ? infBits : maxFinite);
  }
  while (hi - lo > 1) {
    const mid = (lo + hi) >> 1;
    if (decode(mid) <= a) lo = mid; else hi = mid;
  }
  const dLo = a - decode(lo), dHi = decode(hi) - a;
  const pick = dLo < dHi ? lo : dHi < dLo ? hi : (lo % 2 === 0 ? lo : hi);
  return sign | pick;
}

describe('safetensors round-trip', () => {
  it('writes and reads back every dtype bit-exactly, with metadata and an 8-byte aligned data section', () => {
    const tensors = new Map<string, NamedTensor>();
    DTYPES.forEach((dtype, i) => tensors.set(`t.${dtype}`, { dtype, shape: [3, 5], data: sampleData(dtype, 15, i + 1) }));
    tensors.set('scalar', { dtype: 'F32', shape: [], data: Float32Array.of(42) });
    tensors.set('empty', { dtype: 'I32', shape: [0, 4], data: new Int32Array(0) });
    const path = join(tmp.dir, 'all.safetensors');
    writeSafetensors(path, tensors, { format: 'pt', note: 'héllo' });

    const file = SafetensorsFile.open(path);
    try {
      assert.equal(file.header.dataStart % 8, 0);
      assert.deepEqual(file.metadata, { format: 'pt', note: 'héllo' });
      assert.deepEqual(file.names(), [...tensors.keys()]);
      for (const [name, t] of tensors) {
        const back = file.read(name);
        assert.equal(back.dtype, t.dtype, name);
        assert.deepEqual(back.shape, t.shape, name);
        assert.equal(back.data.constructor, t.data.constructor, name);
        assert.deepEqual(Buffer.from(back.data.buffer, back.data.byteOffset, back.data.byteLength), Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength), name);
      }
    } finally {
      file.close();
    }
    const all = readSafetensors(path);
    assert.equal(all.tensors.size, tensors.size);
  });

  it('rounds float32 to BF16 to nearest, ties to even, and matches an exhaustive-search oracle', () => {
    assert.equal(bf16BitsToF32(f32ToBf16Bits(1 + 2 ** -8)), 1); // tie → even (1.0)
    assert.equal(bf16BitsToF32(f32ToBf16Bits(1 + 3 * 2 ** -8)), 1 + 2 ** -6); // tie → even (up)
    assert.equal(bf16BitsToF32(f32ToBf16Bits(1 + 2 ** -8 + 2 ** -20)), 1 + 2 ** -7); // above the tie → up
    assert.equal(bf16BitsToF32(f32ToBf16Bits(3.4028234663852886e38)), Infinity);
    assert.ok(Number.isNaN(bf16BitsToF32(f32ToBf16Bits(NaN))));
    assert.equal(bf16BitsToF32(f32ToBf16Bits(-Infinity)), -Infinity);
    assert.ok(Object.is(bf16BitsToF32(f32ToBf16Bits(-0)), -0));
    const values = randomF32(3000, 7, 1000);
    for (let i = 0; i < values.length; i += 3) values[i] *= 1e-30;
    for (const v of values) assert.equal(f32ToBf16Bits(v), nearestBits(v, bf16BitsToF32, 0x7f7f, 0x7f80), `value ${v}`);
  });

  it('rounds float32 to F16 to nearest even, including subnormals and overflow', () => {
    assert.equal(f16BitsToF32(f32ToF16Bits(1 + 2 ** -11)), 1);
    assert.equal(f16BitsToF32(f32ToF16Bits(65504)), 65504);
    assert.equal(f16BitsToF32(f32ToF16Bits(65519)), 65504);
    assert.equal(f16BitsToF32(f32ToF16Bits(65520)), Infinity);
    assert.equal(f16BitsToF32(f32ToF16Bits(2 ** -24)), 2 ** -24);
    assert.equal(f16BitsToF32(f32ToF16Bits(2 ** -25)), 0);
    assert.equal(f16BitsToF32(f32ToF16Bits(3 * 2 ** -26)), 2 ** -24);
    assert.ok(Number.isNaN(f16BitsToF32(f32ToF16Bits(NaN))));
    const values = randomF32(3000, 11, 70000);
    for (let i = 0; i < values.length; i += 2) values[i] *= 2 ** -20;
    for (const v of values) assert.equal(f32ToF16Bits(v), nearestBits(v, f16BitsToF32, 0x7bff, 0x7c00), `value ${v}`);
  });

  it('stores float32 as BF16/F16 in files and widens back to the rounded values', () => {
    const values = randomF32(64, 3);
    const path = join(tmp.dir, 'half.safetensors');
    writeSafetensors(path, new Map([
      ['b', { dtype: 'BF16' as const, shape: [8, 8], data: fromFloat32(values, 'BF16') }],
      ['h', { dtype: 'F16' as const, shape: [64], data: fromFloat32(values, 'F16') }],
    ]));
    const { tensors } = readSafetensors(path);
    const b = toFloat32(tensors.get('b')!.data, 'BF16'), h = toFloat32(tensors.get('h')!.data, 'F16');
    values.forEach((v, i) => {
      assert.equal(b[i], bf16BitsToF32(f32ToBf16Bits(v)));
      assert.equal(h[i], f16BitsToF32(f32ToF16Bits(v)));
      assert.ok(Math.abs(b[i] - v) <= Math.abs(v) * 2 ** -8);
    });
  });
});

describe('safetensors corruption', () => {
  const f32Header = { a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] }, b: { dtype: 'F32', shape: [1], data_offsets: [8, 12] } };
  const bytes12 = new Uint8Array(12);
  const expectCode = (path: string, code: string, pattern?: RegExp): void => {
    assert.throws(() => SafetensorsFile.open(path), (e: unknown) => {
      assert.ok(e instanceof CheckpointError, String(e));
      assert.equal(e.code, code, e.message);
      if (pattern) assert.match(e.message, pattern);
      return true;
    });
  };
  const file = (name: string): string => join(tmp.dir, name);

  it('accepts the well-formed hand-written file used by the corruption cases', () => {
    writeRawSafetensors(file('ok.safetensors'), f32Header, bytes12);
    assert.deepEqual(readSafetensors(file('ok.safetensors')).tensors.get('b')!.shape, [1]);
  });

  it('reports a truncated file', () => {
    writeRawSafetensors(file('trunc.safetensors'), f32Header, bytes12.subarray(0, 10));
    expectCode(file('trunc.safetensors'), 'TRUNCATED', /12 data bytes .* only 10/);
    writeFileSync(file('tiny.safetensors'), Uint8Array.of(1, 2, 3));
    expectCode(file('tiny.safetensors'), 'TRUNCATED', /too short/);
    writeRawSafetensors(file('short-header.safetensors'), '{"a":', new Uint8Array(0), 500);
    expectCode(file('short-header.safetensors'), 'TRUNCATED', /header length 500/);
  });

  it('reports an implausible header length', () => {
    writeRawSafetensors(file('hugelen.safetensors'), f32Header, bytes12, 2 ** 40);
    expectCode(file('hugelen.safetensors'), 'BAD_HEADER_LENGTH');
    writeRawSafetensors(file('zerolen.safetensors'), '', bytes12, 0);
    expectCode(file('zerolen.safetensors'), 'BAD_HEADER_LENGTH');
  });

  it('reports bad JSON and non-UTF-8 headers', () => {
    writeRawSafetensors(file('badjson.safetensors'), '{"a": {"dtype": "F32",', bytes12);
    expectCode(file('badjson.safetensors'), 'BAD_JSON', /not valid JSON/);
    writeRawSafetensors(file('notobj.safetensors'), '[1, 2]', new Uint8Array(0));
    expectCode(file('notobj.safetensors'), 'BAD_JSON', /does not start with/);
  });

  it('reports overlapping, gapped and excess data', () => {
    writeRawSafetensors(file('overlap.safetensors'), { a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] }, b: { dtype: 'F32', shape: [1], data_offsets: [4, 8] } }, new Uint8Array(8));
    expectCode(file('overlap.safetensors'), 'OVERLAP', /'b'/);
    writeRawSafetensors(file('gap.safetensors'), { a: { dtype: 'F32', shape: [1], data_offsets: [0, 4] }, b: { dtype: 'F32', shape: [1], data_offsets: [8, 12] } }, bytes12);
    expectCode(file('gap.safetensors'), 'GAP');
    writeRawSafetensors(file('trailing.safetensors'), f32Header, new Uint8Array(20));
    expectCode(file('trailing.safetensors'), 'TRAILING_BYTES', /8 bytes/);
  });

  it('reports a byte length that disagrees with dtype × shape', () => {
    writeRawSafetensors(file('len.safetensors'), { a: { dtype: 'F32', shape: [3], data_offsets: [0, 8] } }, new Uint8Array(8));
    expectCode(file('len.safetensors'), 'BYTE_LENGTH', /needs 12 bytes/);
  });

  it('reports unknown dtypes, duplicate names and malformed entries', () => {
    writeRawSafetensors(file('dtype.safetensors'), { a: { dtype: 'F4', shape: [2], data_offsets: [0, 8] } }, new Uint8Array(8));
    expectCode(file('dtype.safetensors'), 'UNKNOWN_DTYPE', /"F4"/);
    const dupText = '{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}';
    writeRawSafetensors(file('dup.safetensors'), dupText, new Uint8Array(4));
    expectCode(file('dup.safetensors'), 'DUPLICATE_TENSOR', /'a'/);
    writeRawSafetensors(file('shape.safetensors'), { a: { dtype: 'F32', shape: [-1], data_offsets: [0, 4] } }, new Uint8Array(4));
    expectCode(file('shape.safetensors'), 'BAD_HEADER', /shape/);
    writeRawSafetensors(file('meta.safetensors'), { __metadata__: { n: 1 }, a: { dtype: 'F32', shape: [1], data_offsets: [0, 4] } }, new Uint8Array(4));
    expectCode(file('meta.safetensors'), 'BAD_HEADER', /__metadata__/);
  });

  it('keeps an existing file when a write fails, and refuses mismatched data', () => {
    const path = file('keep.safetensors');
    writeSafetensors(path, new Map([['x', { dtype: 'F32' as const, shape: [2], data: Float32Array.of(1, 2) }]]));
    const before = readFileSync(path);
    assert.throws(() => writeSafetensors(path, new Map([['x', { dtype: 'F32' as const, shape: [3], data: Float32Array.of(1, 2) }]])), /needs 3 elements/);
    assert.throws(() => writeSafetensors(path, new Map([['x', { dtype: 'BF16' as const, shape: [2], data: Float32Array.of(1, 2) }]])), /does not hold BF16/);
    assert.deepEqual(readFileSync(path), before);
  });
});

describe('safetensors lazy and sharded reads', () => {
  it('reads one tensor of a > 4 GiB (sparse) file without touching the rest', () => {
    const big = 5_000_000_000;
    const header = { huge: { dtype: 'U8', shape: [big], data_offsets: [0, big] }, small: { dtype: 'F32', shape: [2], data_offsets: [big, big + 8] } };
    const path = join(tmp.dir, 'sparse.safetensors');
    writeRawSafetensors(path, header, new Uint8Array(0));
    const headerBytes = 8 + Buffer.byteLength(JSON.stringify(header));
    truncateSync(path, headerBytes + big + 8);
    const fd = openSync(path, 'r+');
    writeSync(fd, new Uint8Array(Float32Array.of(1.5, -2.25).buffer), 0, 8, headerBytes + big);
    closeSync(fd);
    assert.equal(statSync(path).size, headerBytes + big + 8);
    const file = SafetensorsFile.open(path);
    try {
      assert.deepEqual([...(file.read('small').data as Float32Array)], [1.5, -2.25]);
      assert.equal(file.info('huge').end, big);
    } finally {
      file.close();
    }
  });

  it('writes shards with an index when over the size limit and reads them back through one source', () => {
    const dir = join(tmp.dir, 'sharded');
    const tensors = new Map<string, NamedTensor>(Array.from({ length: 5 }, (_, i) => [`w${i}`, { dtype: 'F32', shape: [10], data: randomF32(10, i) }]));
    mkdirSync(dir);
    const files = writeCheckpointTensors(dir, tensors, { maxShardBytes: 100 });
    assert.deepEqual(files, ['model-00001-of-00003.safetensors', 'model-00002-of-00003.safetensors', 'model-00003-of-00003.safetensors', 'model.safetensors.index.json']);
    const index = JSON.parse(readFileSync(join(dir, 'model.safetensors.index.json'), 'utf8'));
    assert.equal(index.metadata.total_size, 200);
    const source = openTensorSource(dir);
    try {
      assert.deepEqual(source.names().sort(), [...tensors.keys()].sort());
      for (const [name, t] of tensors) assert.deepEqual(source.read(name).data, t.data);
    } finally {
      source.close();
    }
    const good = JSON.stringify(index);
    index.weight_map.w4 = 'model-00001-of-00003.safetensors';
    writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify(index));
    assert.throws(() => openTensorSource(dir), (e: unknown) => e instanceof CheckpointError && e.code === 'MISSING_TENSOR' && /'w4' to model-00001-of-00003.safetensors, which does not contain it/.test(e.message));
    const unmapped = JSON.parse(good);
    delete unmapped.weight_map.w3;
    writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify(unmapped));
    assert.throws(() => openTensorSource(dir), (e: unknown) => e instanceof CheckpointError && e.code === 'UNEXPECTED_TENSOR' && /holds 'w3'/.test(e.message));
    index.weight_map.w4 = '../evil.safetensors';
    writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify(index));
    assert.throws(() => openTensorSource(dir), (e: unknown) => e instanceof CheckpointError && e.code === 'BAD_INDEX');
  });
});
