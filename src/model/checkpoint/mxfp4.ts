/**
 * MXFP4 (OCP microscaling) as the released gpt-oss checkpoints store their expert weights:
 *   `<name>_blocks` uint8 [..., G, 16]: 32 FP4 E2M1 values per block, two per byte, element 2k in the LOW nibble of
 *                                         byte k and element 2k+1 in the HIGH nibble;
 *   `<name>_scales` uint8 [..., G]:      one E8M0 scale per block, value 2^(s − 127) (s = 255 is NaN).
 * Decoding gives [..., G·32] float32. E2M1 nibble: sign bit 3, then 2 exponent bits and 1 mantissa bit, i.e.
 * 0..7 → 0, 0.5, 1, 1.5, 2, 3, 4, 6 and 8..15 the same negated.
 */
import { CheckpointError } from './errors.ts';
import { numel, shapeString } from './tensors.ts';

export const MXFP4_BLOCK = 32;
export const MXFP4_BLOCK_BYTES = 16;
export const E8M0_BIAS = 127;
export const E8M0_NAN = 255;

export const FP4_E2M1_VALUES: readonly number[] = [0, 0.5, 1, 1.5, 2, 3, 4, 6, -0, -0.5, -1, -1.5, -2, -3, -4, -6];

export function e8m0ToFloat(scale: number): number {
  return scale === E8M0_NAN ? NaN : 2 ** (scale - E8M0_BIAS);
}

export interface Mxfp4Tensor {
  blocks: Uint8Array;
  /** [..., G, 16] */
  blocksShape: number[];
  scales: Uint8Array;
  /** [..., G] */
  scalesShape: number[];
}

/** Checks that blocks/scales shapes pair up; returns the decoded shape [..., G·32]. */
export function mxfp4DecodedShape(blocksShape: readonly number[], scalesShape: readonly number[]): number[] {
  const ok = blocksShape.length >= 2 && blocksShape[blocksShape.length - 1] === MXFP4_BLOCK_BYTES
    && scalesShape.length === blocksShape.length - 1 && scalesShape.every((d, i) => d === blocksShape[i]);
  if (!ok) {
    throw new CheckpointError('BAD_MXFP4', `MXFP4 blocks ${shapeString(blocksShape)} and scales ${shapeString(scalesShape)} do not pair up (want blocks [..., G, 16] and scales [..., G])`);
  }
  return [...blocksShape.slice(0, -2), blocksShape[blocksShape.length - 2] * MXFP4_BLOCK];
}

export function decodeMxfp4(t: Mxfp4Tensor): { data: Float32Array; shape: number[] } {
  const shape = mxfp4DecodedShape(t.blocksShape, t.scalesShape);
  const nBlocks = numel(t.scalesShape);
  if (t.blocks.length !== nBlocks * MXFP4_BLOCK_BYTES || t.scales.length !== nBlocks) {
    throw new CheckpointError('BAD_MXFP4', `MXFP4 data lengths (${t.blocks.length} block bytes, ${t.scales.length} scales) do not match shapes ${shapeString(t.blocksShape)} / ${shapeString(t.scalesShape)}`);
  }
  const out = new Float32Array(nBlocks * MXFP4_BLOCK);
  for (let b = 0; b < nBlocks; b++) {
    const scale = e8m0ToFloat(t.scales[b]);
    const src = b * MXFP4_BLOCK_BYTES, dst = b * MXFP4_BLOCK;
    for (let k = 0; k < MXFP4_BLOCK_BYTES; k++) {
      const byte = t.blocks[src + k];
      out[dst + 2 * k] = FP4_E2M1_VALUES[byte & 0x0f] * scale;
      out[dst + 2 * k + 1] = FP4_E2M1_VALUES[byte >>> 4] * scale;
    }
  }
  return { data: out, shape };
}

/** Nearest E2M1 magnitude code (0..7) for |x| ≤ 6 after scaling; ties go to the even mantissa; saturates at 6. */
function e2m1Code(magnitude: number): number {
  if (magnitude <= 0.25) return 0;
  if (magnitude < 0.75) return 1;
  if (magnitude <= 1.25) return 2;
  if (magnitude < 1.75) return 3;
  if (magnitude <= 2.5) return 4;
  if (magnitude < 3.5) return 5;
  if (magnitude <= 5) return 6;
  return 7;
}

/**
 * Encodes float32 values of `shape` (last axis a multiple of 32) to MXFP4. The shared scale of a block is
 * 2^(floor(log2(amax)) − 2) (OCP rule: E2M1's largest exponent is 2), clamped to the E8M0 range; each element rounds
 * to the nearest E2M1 value. Values that are E2M1 numbers times one power of two per block round-trip exactly.
 */
export function encodeMxfp4(values: Float32Array, shape: readonly number[]): Mxfp4Tensor {
  const last = shape[shape.length - 1];
  if (shape.length < 1 || last % MXFP4_BLOCK !== 0) throw new CheckpointError('BAD_MXFP4', `MXFP4 needs the last axis to be a multiple of 32, got shape ${shapeString(shape)}`);
  if (values.length !== numel(shape)) throw new CheckpointError('BAD_MXFP4', `shape ${shapeString(shape)} needs ${numel(shape)} values, got ${values.length}`);
  const groups = last / MXFP4_BLOCK;
  const nBlocks = values.length / MXFP4_BLOCK;
  const blocks = new Uint8Array(nBlocks * MXFP4_BLOCK_BYTES);
  const scales = new Uint8Array(nBlocks);
  for (let b = 0; b < nBlocks; b++) {
    const base = b * MXFP4_BLOCK;
    let amax = 0;
    for (let i = 0; i < MXFP4_BLOCK; i++) {
      const v = values[base + i];
      if (!Number.isFinite(v)) throw new CheckpointError('BAD_MXFP4', `cannot encode non-finite value ${v} at index ${base + i} as MXFP4`);
      amax = Math.max(amax, Math.abs(v));
    }
    const exp = amax === 0 ? -E8M0_BIAS : Math.min(E8M0_BIAS, Math.max(-E8M0_BIAS, floorLog2(amax) - 2));
    scales[b] = exp + E8M0_BIAS;
    const inv = 2 ** -exp;
    for (let k = 0; k < MXFP4_BLOCK_BYTES; k++) {
      blocks[b * MXFP4_BLOCK_BYTES + k] = nibble(values[base + 2 * k] * inv) | (nibble(values[base + 2 * k + 1] * inv) << 4);
    }
  }
  const lead = shape.slice(0, -1);
  return { blocks, blocksShape: [...lead, groups, MXFP4_BLOCK_BYTES], scales, scalesShape: [...lead, groups] };
}

function nibble(x: number): number {
  const negative = x < 0 || Object.is(x, -0);
  return (negative ? 8 : 0) | e2m1Code(Math.abs(x));
}

/** floor(log2(x)) for finite x > 0, exact (Math.log2 can be off by one near powers of two). */
function floorLog2(x: number): number {
  let e = Math.floor(Math.log2(x));
  if (2 ** e > x) e--;
  else if (2 ** (e + 1) <= x) e++;
  return e;
}
