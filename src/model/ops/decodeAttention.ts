/**
 * Single-query sink attention against one sequence's KV cache, for decode steps. The cache holds `held` keys in
 * slots 0 … held−1 of [Hkv, capacity, d] (a full layer: positions 0 … held−1; a sliding layer's ring: the last W
 * positions in rotated order). Every held key is visible to the new query — the ring keeps exactly the window —
 * and softmax does not depend on key order, so no mask and no unrolling is needed:
 *   s_j = scale·q_h·k_{g(h), j},  m = max(σ_h, max_j s_j),  o_h = Σ_j e^{s_j − m} v_{g(h), j} / (e^{σ_h − m} + Σ_j e^{s_j − m})
 * with g(h) = floor(h / (Hq/Hkv)) (sinks.md §0, form A). A specialised loop instead of src/attention's blockwise
 * kernel because decode is one row per sequence and the ring is not in position order.
 */
export interface DecodeShape {
  hq: number;
  hkv: number;
  d: number;
  capacity: number;
}

/** q [Hq·d] → out [Hq·d] (written at outOffset). */
export function decodeAttentionOne(q: Float32Array, qOffset: number, k: Float32Array, v: Float32Array, held: number, sh: DecodeShape,
  sinks: Float32Array, scale: number, out: Float32Array, outOffset: number, scores: Float64Array): void {
  const { hq, hkv, d, capacity } = sh, group = hq / hkv;
  for (let h = 0; h < hq; h++) {
    const g = Math.floor(h / group), kv = g * capacity * d, qb = qOffset + h * d, ob = outOffset + h * d;
    let m = sinks[h];
    for (let j = 0; j < held; j++) {
      const kb = kv + j * d;
      let s = 0;
      for (let e = 0; e < d; e++) s += q[qb + e] * k[kb + e];
      s *= scale;
      scores[j] = s;
      if (s > m) m = s;
    }
    let z = Math.exp(sinks[h] - m);
    for (let e = 0; e < d; e++) out[ob + e] = 0;
    for (let j = 0; j < held; j++) {
      const p = Math.exp(scores[j] - m);
      z += p;
      const vb = kv + j * d;
      for (let e = 0; e < d; e++) out[ob + e] += p * v[vb + e];
    }
    const inv = 1 / z;
    for (let e = 0; e < d; e++) out[ob + e] *= inv;
  }
}
