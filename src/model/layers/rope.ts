/**
 * Rotary position embedding with YaRN, as gpt-oss computes it (half-split / NeoX rotation, not interleaved pairs).
 *
 * For head dim d and k = 0 … d/2 − 1: base frequency freq_k = θ^(2k/d).
 * YaRN NTK-by-parts (factor f, β_fast, β_slow, original context L):
 *   low  = d·ln(L / (β_fast·2π)) / (2·ln θ),  high = d·ln(L / (β_slow·2π)) / (2·ln θ)   (floor/ceil if truncate)
 *   ramp_k = clamp((k − low)/(high − low), 0, 1),  mask_k = 1 − ramp_k
 *   inv_freq_k = (1/(f·freq_k))·(1 − mask_k) + (1/freq_k)·mask_k
 *   concentration = 0.1·ln f + 1, multiplying both cos and sin (so q·k grows by concentration²).
 * Without rope_scaling: inv_freq_k = 1/freq_k and concentration 1.
 *
 * Rotation of one head vector x at position p (x1 = x[:d/2], x2 = x[d/2:], c = conc·cos(p·inv), s = conc·sin(p·inv)):
 *   y1 = x1·c − x2·s,  y2 = x2·c + x1·s.
 * Backward is the transposed rotation: dx1 = dy1·c + dy2·s,  dx2 = dy2·c − dy1·s.
 */
import type { GptOssConfig } from '../config.ts';

export interface YarnParams {
  invFreq: Float64Array;
  concentration: number;
  low: number;
  high: number;
}

export function yarnParams(c: Pick<GptOssConfig, 'head_dim' | 'rope_theta' | 'rope_scaling'>): YarnParams {
  const d = c.head_dim, half = d / 2, theta = c.rope_theta;
  const invFreq = new Float64Array(half);
  const rs = c.rope_scaling;
  if (!rs) {
    for (let k = 0; k < half; k++) invFreq[k] = 1 / theta ** ((2 * k) / d);
    return { invFreq, concentration: 1, low: NaN, high: NaN };
  }
  const corr = (rot: number) => (d * Math.log(rs.original_max_position_embeddings / (rot * 2 * Math.PI))) / (2 * Math.log(theta));
  let low = corr(rs.beta_fast), high = corr(rs.beta_slow);
  if (rs.truncate) { low = Math.floor(low); high = Math.ceil(high); }
  low = Math.max(low, 0);
  high = Math.min(high, d - 1);
  const span = high === low ? 0.001 : high - low;
  for (let k = 0; k < half; k++) {
    const freq = theta ** ((2 * k) / d);
    const ramp = Math.min(1, Math.max(0, (k - low) / span));
    const mask = 1 - ramp;
    invFreq[k] = (1 / (rs.factor * freq)) * (1 - mask) + (1 / freq) * mask;
  }
  const concentration = rs.factor > 1 ? 0.1 * Math.log(rs.factor) + 1 : 1;
  return { invFreq, concentration, low, high };
}

/** cos/sin (already times the concentration) per position, grown on demand. */
export class RopeTable {
  readonly half: number;
  private cosT = new Float32Array(0);
  private sinT = new Float32Array(0);
  private length = 0;

  constructor(readonly yarn: YarnParams) {
    this.half = yarn.invFreq.length;
  }

  ensure(maxPos: number): void {
    if (maxPos < this.length) return;
    const n = Math.max(maxPos + 1, this.length * 2, 64);
    const cos = new Float32Array(n * this.half), sin = new Float32Array(n * this.half);
    const { invFreq, concentration } = this.yarn;
    for (let p = 0; p < n; p++) {
      for (let k = 0; k < this.half; k++) {
        const a = p * invFreq[k];
        cos[p * this.half + k] = Math.cos(a) * concentration;
        sin[p * this.half + k] = Math.sin(a) * concentration;
      }
    }
    this.cosT = cos; this.sinT = sin; this.length = n;
  }

  get cos(): Float32Array { return this.cosT; }
  get sin(): Float32Array { return this.sinT; }
}

/**
 * rows [N, H·d] → heads [H, N, d], rotating by position when `rope` is given (mode 1 = forward rotation);
 * * mode −1 applies the transposed rotation (the backward).
 */
export function rowsToHeads(rows: Float32Array, out: Float32Array, N: number, H: number, d: number, rope?: { table: RopeTable; positions: Int32Array; mode: 1 | -1 }): void {
  const half = d / 2, HD = H * d;
  if (!rope) {
    for (let n = 0; n < N; n++) for (let h = 0; h < H; h++) out.set(rows.subarray(n * HD + h * d, n * HD + h * d + d), (h * N + n) * d);
    return;
  }
  const { table, positions, mode } = rope;
  const cos = table.cos, sin = table.sin;
  for (let n = 0; n < N; n++) {
    const cb = positions[n] * half;
    for (let h = 0; h < H; h++) {
      const src = n * HD + h * d, dst = (h * N + n) * d;
      for (let k = 0; k < half; k++) {
        const c = cos[cb + k], s = mode * sin[cb + k];
        const x1 = rows[src + k], x2 = rows[src + half + k];
        out[dst + k] = x1 * c - x2 * s;
        out[dst + half + k] = x2 * c + x1 * s;
      }
    }
  }
}

/** heads [H, N, d] → rows [N, H·d], optionally rotating (mode 1 forward, −1 transposed). */
export function headsToRows(heads: Float32Array, out: Float32Array, N: number, H: number, d: number, rope?: { table: RopeTable; positions: Int32Array; mode: 1 | -1 }): void {
  const half = d / 2, HD = H * d;
  if (!rope) {
    for (let h = 0; h < H; h++) for (let n = 0; n < N; n++) out.set(heads.subarray((h * N + n) * d, (h * N + n) * d + d), n * HD + h * d);
    return;
  }
  const { table, positions, mode } = rope;
  const cos = table.cos, sin = table.sin;
  for (let h = 0; h < H; h++) {
    for (let n = 0; n < N; n++) {
      const cb = positions[n] * half, src = (h * N + n) * d, dst = n * HD + h * d;
      for (let k = 0; k < half; k++) {
        const c = cos[cb + k], s = mode * sin[cb + k];
        const x1 = heads[src + k], x2 = heads[src + half + k];
        out[dst + k] = x1 * c - x2 * s;
        out[dst + half + k] = x2 * c + x1 * s;
      }
    }
  }
}
