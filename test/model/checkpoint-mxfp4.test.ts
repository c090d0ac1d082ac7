import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CheckpointError, decodeMxfp4, e8m0ToFloat, encodeMxfp4, FP4_E2M1_VALUES } from '../../src/model/checkpoint/index.ts';
import { rng } from './checkpoint-helpers.ts';

/** E2M1 from its bits, written out independently of the lookup table: sign · 2^(e−1) · (1 + m/2), or m/2 when e = 0. */
function e2m1(nibble: number): number {
  const sign = nibble & 8 ? -1 : 1;
  const e = (nibble >> 1) & 3, m = nibble & 1;
  return sign * (e === 0 ? m * 0.5 : 2 ** (e - 1) * (1 + m / 2));
}

describe('MXFP4 decoding', () => {
  it('has the E2M1 value table', () => {
    assert.deepEqual(FP4_E2M1_VALUES.slice(0, 8), [0, 0.5, 1, 1.5, 2, 3, 4, 6]);
    for (let n = 0; n < 16; n++) assert.ok(Object.is(FP4_E2M1_VALUES[n], e2m1(n)) || (n === 8 && Object.is(FP4_E2M1_VALUES[n], -0)), `nibble ${n}`);
  });

  it('reads E8M0 scales with bias 127 (255 is NaN)', () => {
    assert.equal(e8m0ToFloat(127), 1);
    assert.equal(e8m0ToFloat(128), 2);
    assert.equal(e8m0ToFloat(120), 2 ** -7);
    assert.equal(e8m0ToFloat(0), 2 ** -127);
    assert.equal(e8m0ToFloat(254), 2 ** 127);
    assert.ok(Number.isNaN(e8m0ToFloat(255)));
  });

  it('puts element 2k in the low nibble and 2k+1 in the high nibble, scaled per 32-element block', () => {
    // Two blocks along the last axis, two rows: blocks [2, 2, 16], scales [2, 2].
    const blocks = new Uint8Array(2 * 2 * 16);
    const scales = Uint8Array.of(127, 129, 126, 0);
    for (let i = 0; i < blocks.length; i++) blocks[i] = (i * 37 + 11) & 0xff;
    const { data, shape } = decodeMxfp4({ blocks, blocksShape: [2, 2, 16], scales, scalesShape: [2, 2] });
    assert.deepEqual(shape, [2, 64]);
    for (let row = 0; row < 2; row++) {
      for (let col = 0; col < 64; col++) {
        const g = Math.floor(col / 32), k = Math.floor((col % 32) / 2);
        const byte = blocks[(row * 2 + g) * 16 + k];
        const nib = col % 2 === 0 ? byte & 0xf : byte >> 4;
        const want = e2m1(nib) * 2 ** (scales[row * 2 + g] - 127);
        assert.ok(Object.is(data[row * 64 + col], Math.fround(want)) || data[row * 64 + col] === want, `row ${row} col ${col}`);
      }
    }
    // Byte 0x7f: low nibble 0xf = −6, high nibble 7 = +6.
    const one = decodeMxfp4({ blocks: new Uint8Array(16).fill(0x7f), blocksShape: [1, 16], scales: Uint8Array.of(128), scalesShape: [1] });
    assert.deepEqual([...one.data.subarray(0, 4)], [-12, 12, -12, 12]);
  });

  it('rejects blocks and scales that do not pair up', () => {
    const check = (fn: () => unknown): void => assert.throws(fn, (e: unknown) => e instanceof CheckpointError && e.code === 'BAD_MXFP4');
    check(() => decodeMxfp4({ blocks: new Uint8Array(32), blocksShape: [2, 16], scales: new Uint8Array(3), scalesShape: [3] }));
    check(() => decodeMxfp4({ blocks: new Uint8Array(32), blocksShape: [2, 8, 2], scales: new Uint8Array(16), scalesShape: [2, 8] }));
    check(() => decodeMxfp4({ blocks: new Uint8Array(31), blocksShape: [2, 16], scales: new Uint8Array(2), scalesShape: [2] }));
  });
});

describe('MXFP4 encoding', () => {
  it('round-trips MXFP4-representable values exactly (one power of two per block, any exponent in range)', () => {
    const r = rng(5);
    const rows = 6, cols = 96;
    const values = new Float32Array(rows * cols);
    for (let b = 0; b < values.length / 32; b++) {
      const exp = Math.floor(r() * 250) - 125;
      const allZero = b === 3;
      for (let i = 0; i < 32; i++) values[b * 32 + i] = allZero ? (i % 2 ? -0 : 0) : e2m1(Math.floor(r() * 16)) * 2 ** exp;
    }
    const enc = encodeMxfp4(values, [rows, cols]);
    assert.deepEqual(enc.blocksShape, [rows, 3, 16]);
    assert.deepEqual(enc.scalesShape, [rows, 3]);
    const dec = decodeMxfp4(enc);
    assert.deepEqual(dec.shape, [rows, cols]);
    for (let i = 0; i < values.length; i++) assert.ok(Object.is(dec.data[i], values[i]), `index ${i}: ${dec.data[i]} vs ${values[i]}`);
  });

  it('chooses the OCP shared scale and rounds to the nearest E2M1 value, ties to even, saturating at ±6·scale', () => {
    const block = (vals: number[]): Float32Array => { const v = new Float32Array(32); v.set(vals); return v; };
    const roundTrip = (vals: number[]): number[] => [...decodeMxfp4(encodeMxfp4(block(vals), [32])).data.subarray(0, vals.length)];
    // amax 6 → scale 1: ties 0.25→0, 0.75→1, 1.25→1, 1.75→2, 2.5→2, 3.5→4, 5→4.
    assert.deepEqual(roundTrip([6, 0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5, -5, 0.3]), [6, 0, 1, 1, 2, 2, 4, 4, -4, 0.5]);
    assert.equal(encodeMxfp4(block([6]), [32]).scales[0], 127);
    // amax 7 → floor(log2 7) − 2 = 0: 7 saturates to 6.
    assert.deepEqual(roundTrip([7, -7]), [6, -6]);
    // amax 3 → scale 2^-1: 3 = 6·2^-1 and 0.25 = 0.5·2^-1 are exact.
    assert.deepEqual(roundTrip([3, 0.25, -1.5]), [3, 0.25, -1.5]);
    assert.equal(encodeMxfp4(block([3]), [32]).scales[0], 126);
    // An all-zero block gets the smallest scale and decodes to zeros.
    assert.equal(encodeMxfp4(new Float32Array(32), [32]).scales[0], 0);
  });

  it('refuses shapes that are not whole blocks and non-finite values', () => {
    assert.throws(() => encodeMxfp4(new Float32Array(48), [48]), /multiple of 32/);
    const v = new Float32Array(32); v[5] = NaN;
    assert.throws(() => encodeMxfp4(v, [32]), /non-finite/);
    assert.throws(() => encodeMxfp4(new Float32Array(32), [2, 32]), /needs 64 values/);
  });
});
