/**
 * Single-query sink attention against one sequence's KV cache, for decode steps. The cache [Hkv, R, d] holds
 * position p in slot p mod R (a full layer: R > every position; a sliding layer's ring: R ≥ the window). The query
 * sees positions lo … hi (its window, itself included), so no mask is needed and the order of the slots does not
 * matter:
 *   s_j = scale·q_h·k_{g(h), j},  m = max(σ_h, max_j s_j),  o_h = Σ_j e^{s_j − m} v_{g(h), j} / (e^{σ_h − m} + Σ_j e^{s_j − m})
 * with g(h) = floor(h / (Hq/Hkv)) (sinks.md §0, form A). A specialised loop instead of src/attention's blockwise
 * kernel because decode is one row per sequence and the ring is not in position order. This is the reference;
 * decode-attention-wasm.ts runs the same formula on the Wasm kernels for a whole decode step at once.
 */
export interface DecodeShape {
  hq: number;
  hkv: number;
  d: number;
  /** Slots R of the cache. */
  slots: number;
}

/** q [Hq·d] → out [Hq·d] (written at outOffset); the query sees positions lo … hi. */
export function decodeAttentionOne(q: Float32Array, qOffset: number, k: Float32Array, v: Float32Array, lo: number, hi: number, sh: DecodeShape,
  sinks: Float32Array, scale: number, out: Float32Array, outOffset: number, scores: Float64Array): void {
  const { hq, hkv, d, slots } = sh, group = hq / hkv, span = hi - lo + 1;
  for (let h = 0; h < hq; h++) {
    const g = Math.floor(h / group), kv = g * slots * d, qb = qOffset + h * d, ob = outOffset + h * d;
    let m = sinks[h];
    for (let j = 0; j < span; j++) {
      const kb = kv + ((lo + j) % slots) * d;
      let s = 0;
      for (let e = 0; e < d; e++) s += q[qb + e] * k[kb + e];
      s *= scale;
      scores[j] = s;
      if (s > m) m = s;
    }
    let z = Math.exp(sinks[h] - m);
    for (let e = 0; e < d; e++) out[ob + e] = 0;
    for (let j = 0; j < span; j++) {
      const p = Math.exp(scores[j] - m);
      z += p;
      const vb = kv + ((lo + j) % slots) * d;
      for (let e = 0; e < d; e++) out[ob + e] += p * v[vb + e];
    }
    const inv = 1 / z;
    for (let e = 0; e < d; e++) out[ob + e] *= inv;
  }
}
