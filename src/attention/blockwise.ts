/**
 * Sink-aware blockwise (FlashAttention-2 / FlexAttention-style) attention in plain TypeScript: the reference for
 * the Wasm kernels. Statistics and accumulators are float64; outputs take q's dtype.
 *
 * Forward (form C of ../shared/notes/sinks.md): each row starts with m = σ_h, l = 1, acc = 0 (m = −∞, l = 0
 * without sinks), then visits the partial tiles (mask applied) and full tiles (no mask) of its block-mask row.
 * Only O and the sink-inclusive LSE are kept. Backward: D = rowsum(dO ⊙ O), P = exp(S − L) recomputed per tile,
 * dV += Pᵀ dO, dS = P ⊙ (dO Vᵀ − D), dQ += c·dS K, dK += c·dSᵀ Q (summed over the query heads of a kv head) and
 * dσ_h = −Σ_rows exp(σ_h − L_row)·D_row.
 */
import { localMask } from './mask-eval.ts';
import type { LocalMask } from './mask-eval.ts';
import { expectShape, like, validateAttention } from './validate.ts';
import type { AttentionGrads, AttentionOptions, AttentionOutput, AttentionResult, AttentionShape, FloatArray, HeadTensor } from './types.ts';

/** Calls fn(kvTile, masked) for the partial tiles, then the full tiles, of query tile r. */
function forEachKvTile(bm: AttentionOptions['blockMask'], r: number, fn: (c: number, masked: boolean) => void): void {
  for (let t = bm.partialStart[r]; t < bm.partialStart[r + 1]; t++) fn(bm.partialIdx[t], true);
  for (let t = bm.fullStart[r]; t < bm.fullStart[r + 1]; t++) fn(bm.fullIdx[t], false);
}

export function blockwiseForward<A extends FloatArray>(q: HeadTensor<A>, k: HeadTensor<A>, v: HeadTensor<A>, options: AttentionOptions): AttentionResult<A> {
  const sh = validateAttention(q, k, v, options);
  const { hq, t, s: S, d, group, scale } = sh;
  const bm = options.blockMask;
  const sinks = options.sinks ?? null;
  const allowed = localMask(bm);
  const Q = q.data, K = k.data, V = v.data;
  const O = like(Q, hq * t * d);
  const L = like(Q, hq * t);
  const scores = new Float64Array(bm.kvBlock);
  for (let h = 0; h < hq; h++) {
    const g = Math.floor(h / group);
    const kvBase = g * S * d;
    for (let r = 0; r < bm.numQTiles; r++) {
      const i0 = r * bm.qBlock, i1 = Math.min(t, i0 + bm.qBlock), rows = i1 - i0;
      const m = new Float64Array(rows).fill(sinks ? sinks[h] : -Infinity);
      const l = new Float64Array(rows).fill(sinks ? 1 : 0);
      const acc = new Float64Array(rows * d);
      forEachKvTile(bm, r, (c, masked) => {
        const j0 = c * bm.kvBlock, j1 = Math.min(S, j0 + bm.kvBlock);
        for (let i = i0; i < i1; i++) {
          const qb = (h * t + i) * d;
          let rowMax = -Infinity;
          let sawNaN = false;
          for (let j = j0; j < j1; j++) {
            if (masked && !allowed(i, j)) { scores[j - j0] = -Infinity; continue; }
            const kb = kvBase + j * d;
            let dot = 0;
            for (let e = 0; e < d; e++) dot += Q[qb + e] * K[kb + e];
            const sc = scale * dot;
            scores[j - j0] = sc;
            if (sc > rowMax) rowMax = sc;
            else if (sc !== sc) sawNaN = true; // with checkFinite: false, NaN must propagate, not vanish
          }
          if (sawNaN) rowMax = NaN;
          const ri = i - i0;
          const mNew = Math.max(m[ri], rowMax);
          if (mNew === -Infinity) continue; // nothing seen yet in this row (no sink)
          const alpha = Math.exp(m[ri] - mNew);
          let sum = 0;
          const ab = ri * d;
          if (alpha !== 1) for (let e = 0; e < d; e++) acc[ab + e] *= alpha;
          for (let j = j0; j < j1; j++) {
            const sc = scores[j - j0];
            if (sc === -Infinity) continue;
            const p = Math.exp(sc - mNew);
            sum += p;
            const vb = kvBase + j * d;
            for (let e = 0; e < d; e++) acc[ab + e] += p * V[vb + e];
          }
          l[ri] = alpha * l[ri] + sum;
          m[ri] = mNew;
        }
      });
      for (let ri = 0; ri < rows; ri++) {
        const row = h * t + i0 + ri;
        if (l[ri] === 0) { L[row] = -Infinity; continue; } // empty row without a sink: O = 0
        const inv = 1 / l[ri];
        for (let e = 0; e < d; e++) O[row * d + e] = acc[ri * d + e] * inv;
        L[row] = m[ri] + Math.log(l[ri]);
      }
    }
  }
  return { o: { data: O, shape: [hq, t, d] }, lse: L };
}

/** D_row = Σ_e dO ⊙ O and dσ_h = −Σ_rows exp(σ_h − L_row)·D_row (float64). */
export function backwardPrepass(sh: AttentionShape, O: FloatArray, dO: FloatArray, L: FloatArray, sinks: FloatArray | null): { D: Float64Array; dsinks: Float64Array | null } {
  const { hq, t, d } = sh;
  const D = new Float64Array(hq * t);
  for (let row = 0; row < hq * t; row++) {
    let acc = 0;
    for (let e = 0; e < d; e++) acc += dO[row * d + e] * O[row * d + e];
    D[row] = acc;
  }
  if (!sinks) return { D, dsinks: null };
  const ds = new Float64Array(hq);
  for (let h = 0; h < hq; h++) {
    let acc = 0;
    for (let i = 0; i < t; i++) acc += Math.exp(sinks[h] - L[h * t + i]) * D[h * t + i];
    ds[h] = -acc;
  }
  return { D, dsinks: ds };
}

function backwardTile(
  sh: AttentionShape, h: number, kvBase: number, i0: number, i1: number, j0: number, j1: number, masked: boolean, allowed: LocalMask,
  arrays: { Q: FloatArray; K: FloatArray; V: FloatArray; dO: FloatArray; L: FloatArray; D: Float64Array; dQ: Float64Array; dKt: Float64Array; dVt: Float64Array },
): void {
  const { t, d, scale } = sh;
  const { Q, K, V, dO, L, D, dQ, dKt, dVt } = arrays;
  for (let i = i0; i < i1; i++) {
    const row = h * t + i;
    const qb = row * d;
    for (let j = j0; j < j1; j++) {
      if (masked && !allowed(i, j)) continue;
      const kb = kvBase + j * d;
      let dot = 0, dp = 0;
      for (let e = 0; e < d; e++) { dot += Q[qb + e] * K[kb + e]; dp += dO[qb + e] * V[kb + e]; }
      const p = Math.exp(scale * dot - L[row]);
      const ds = scale * p * (dp - D[row]);
      const tb = (j - j0) * d;
      for (let e = 0; e < d; e++) {
        dVt[tb + e] += p * dO[qb + e];
        dKt[tb + e] += ds * Q[qb + e];
        dQ[qb + e] += ds * K[kb + e];
      }
    }
  }
}

export function blockwiseBackward<A extends FloatArray>(
  q: HeadTensor<A>, k: HeadTensor<A>, v: HeadTensor<A>, fwd: AttentionResult<A>, dO: HeadTensor<A>, options: AttentionOptions,
): AttentionGrads<A> {
  const sh = validateAttention(q, k, v, options);
  const { hq, hkv, t, s: S, d, group } = sh;
  expectShape('o', fwd.o, [hq, t, d]);
  expectShape('dO', dO, [hq, t, d]);
  if (fwd.lse.length !== hq * t) throw new RangeError(`attention: lse has ${fwd.lse.length} entries, expected ${hq * t}`);
  const bm = options.blockMask;
  const sinks = options.sinks ?? null;
  const allowed = localMask(bm);
  const { D, dsinks } = backwardPrepass(sh, fwd.o.data, dO.data, fwd.lse, sinks);
  const dQ = new Float64Array(hq * t * d);
  const dK = like(q.data, hkv * S * d), dV = like(q.data, hkv * S * d);
  const arrays = { Q: q.data, K: k.data, V: v.data, dO: dO.data, L: fwd.lse, D, dQ, dKt: new Float64Array(bm.kvBlock * d), dVt: new Float64Array(bm.kvBlock * d) };
  for (let g = 0; g < hkv; g++) {
    const kvBase = g * S * d;
    for (let c = 0; c < bm.numKvTiles; c++) {
      const j0 = c * bm.kvBlock, j1 = Math.min(S, j0 + bm.kvBlock);
      arrays.dKt.fill(0);
      arrays.dVt.fill(0);
      for (let h = g * group; h < (g + 1) * group; h++) {
        const visit = (r: number, masked: boolean): void => {
          const i0 = r * bm.qBlock, i1 = Math.min(t, i0 + bm.qBlock);
          backwardTile(sh, h, kvBase, i0, i1, j0, j1, masked, allowed, arrays);
        };
        for (let x = bm.tPartialStart[c]; x < bm.tPartialStart[c + 1]; x++) visit(bm.tPartialIdx[x], true);
        for (let x = bm.tFullStart[c]; x < bm.tFullStart[c + 1]; x++) visit(bm.tFullIdx[x], false);
      }
      for (let x = 0; x < (j1 - j0) * d; x++) {
        dK[kvBase + j0 * d + x] = arrays.dKt[x];
        dV[kvBase + j0 * d + x] = arrays.dVt[x];
      }
    }
  }
  const dq = like(q.data, dQ.length);
  dq.set(dQ);
  let ds: A | null = null;
  if (dsinks) { ds = like(q.data, hq); ds.set(dsinks); }
  return { dq: { data: dq, shape: [hq, t, d] }, dk: { data: dK, shape: [hkv, S, d] }, dv: { data: dV, shape: [hkv, S, d] }, dsinks: ds };
}

/** Blockwise attention in plain TypeScript: forward now, backward on demand. */
export function blockwiseAttention<A extends FloatArray>(q: HeadTensor<A>, k: HeadTensor<A>, v: HeadTensor<A>, options: AttentionOptions): AttentionOutput<A> {
  const fwd = blockwiseForward(q, k, v, options);
  return { ...fwd, backward: (dO) => blockwiseBackward(q, k, v, fwd, dO, options) };
}
