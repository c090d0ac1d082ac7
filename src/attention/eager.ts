/**
 * Eager sink attention (form A of ../shared/notes/sinks.md, as Hugging Face's eager gpt-oss path): materialise the
 * scores S = c·QKᵀ (masked to −∞) and the probabilities P [Hq, T, S] with the sink column in the softmax
 * normaliser (concatenate σ_h, softmax, drop the column), then O = P V. Backward goes through the materialised
 * matrices: dP = dO Vᵀ, dS = P ⊙ (dP − D), both [Hq, T, S].
 *
 * With float64 inputs this is the oracle of the tests: a straightforward implementation sharing no code with the
 * blockwise paths beyond input validation and mask evaluation. The big matrices are real allocations; `hooks`
 * lets a caller account for them.
 */
import { localMask } from './mask-eval.ts';
import { expectShape, like, validateAttention } from './validate.ts';
import type { AttentionGrads, AttentionOptions, AttentionOutput, FloatArray, HeadTensor } from './types.ts';

export interface MaterialiseHooks {
  /** Called when a materialised buffer is created / released (bytes, a tag such as 'eager.scores'). */
  onAlloc?(tag: string, bytes: number): void;
  onFree?(tag: string, bytes: number): void;
}

export interface EagerOptions extends AttentionOptions {
  readonly hooks?: MaterialiseHooks;
}

export function eagerAttention<A extends FloatArray>(q: HeadTensor<A>, k: HeadTensor<A>, v: HeadTensor<A>, options: EagerOptions): AttentionOutput<A> {
  const sh = validateAttention(q, k, v, options);
  const { hq, hkv, t, s: S, d, group, scale } = sh;
  const hooks = options.hooks ?? {};
  const sinks = options.sinks ?? null;
  const allowed = localMask(options.blockMask);
  const Q = q.data, K = k.data, V = v.data;
  const bytes = hq * t * S * Q.BYTES_PER_ELEMENT;
  const alloc = (tag: string): A => { hooks.onAlloc?.(tag, bytes); return like(Q, hq * t * S); };
  const free = (tag: string): void => hooks.onFree?.(tag, bytes);

  // scores, masked
  const scores = alloc('eager.scores');
  for (let h = 0; h < hq; h++) {
    const g = Math.floor(h / group);
    for (let i = 0; i < t; i++) {
      const qb = (h * t + i) * d;
      for (let j = 0; j < S; j++) {
        if (!allowed(i, j)) { scores[(h * t + i) * S + j] = -Infinity; continue; }
        const kb = (g * S + j) * d;
        let dot = 0;
        for (let e = 0; e < d; e++) dot += Q[qb + e] * K[kb + e];
        scores[(h * t + i) * S + j] = scale * dot;
      }
    }
  }
  // softmax over [scores, σ_h], sink column dropped
  const P = alloc('eager.probs');
  const L = like(Q, hq * t);
  for (let h = 0; h < hq; h++) {
    for (let i = 0; i < t; i++) {
      const base = (h * t + i) * S;
      let mx = sinks ? sinks[h] : -Infinity;
      for (let j = 0; j < S; j++) if (scores[base + j] > mx) mx = scores[base + j];
      if (mx === -Infinity) { L[h * t + i] = -Infinity; continue; } // no keys, no sink: P = 0
      let z = sinks ? Math.exp(sinks[h] - mx) : 0;
      for (let j = 0; j < S; j++) z += Math.exp(scores[base + j] - mx);
      for (let j = 0; j < S; j++) P[base + j] = Math.exp(scores[base + j] - mx) / z;
      L[h * t + i] = mx + Math.log(z);
    }
  }
  free('eager.scores');
  // O = P V
  const O = like(Q, hq * t * d);
  for (let h = 0; h < hq; h++) {
    const g = Math.floor(h / group);
    for (let i = 0; i < t; i++) {
      const ob = (h * t + i) * d;
      for (let j = 0; j < S; j++) {
        const p = P[(h * t + i) * S + j];
        if (p === 0) continue;
        const vb = (g * S + j) * d;
        for (let e = 0; e < d; e++) O[ob + e] += p * V[vb + e];
      }
    }
  }

  let probsReleased = false;
  const backward = (dOt: HeadTensor<A>): AttentionGrads<A> => {
    expectShape('dO', dOt, [hq, t, d]);
    const dO = dOt.data;
    const dP = alloc('eager.dprobs');
    for (let h = 0; h < hq; h++) {
      const g = Math.floor(h / group);
      for (let i = 0; i < t; i++) {
        const ob = (h * t + i) * d;
        for (let j = 0; j < S; j++) {
          const vb = (g * S + j) * d;
          let acc = 0;
          for (let e = 0; e < d; e++) acc += dO[ob + e] * V[vb + e];
          dP[(h * t + i) * S + j] = acc;
        }
      }
    }
    // D_i = Σ_j P_ij dP_ij (= dO_i · O_i); the sink column has zero value so contributes nothing
    const dS = alloc('eager.dscores');
    const dsinks = sinks ? like(Q, hq) : null;
    for (let h = 0; h < hq; h++) {
      for (let i = 0; i < t; i++) {
        const base = (h * t + i) * S;
        let D = 0;
        for (let j = 0; j < S; j++) D += P[base + j] * dP[base + j];
        for (let j = 0; j < S; j++) dS[base + j] = P[base + j] * (dP[base + j] - D);
        if (dsinks && sinks) dsinks[h] -= Math.exp(sinks[h] - L[h * t + i]) * D;
      }
    }
    free('eager.dprobs');
    const dQ = like(Q, hq * t * d), dK = like(Q, hkv * S * d), dV = like(Q, hkv * S * d);
    for (let h = 0; h < hq; h++) {
      const g = Math.floor(h / group);
      for (let i = 0; i < t; i++) {
        const qb = (h * t + i) * d;
        for (let j = 0; j < S; j++) {
          const p = P[(h * t + i) * S + j];
          const ds = scale * dS[(h * t + i) * S + j];
          const kb = (g * S + j) * d;
          for (let e = 0; e < d; e++) {
            dV[kb + e] += p * dO[qb + e];
            dQ[qb + e] += ds * K[kb + e];
            dK[kb + e] += ds * Q[qb + e];
          }
        }
      }
    }
    free('eager.dscores');
    if (!probsReleased) { probsReleased = true; free('eager.probs'); }
    return { dq: { data: dQ, shape: [hq, t, d] }, dk: { data: dK, shape: [hkv, S, d] }, dv: { data: dV, shape: [hkv, S, d] }, dsinks };
  };
  return { o: { data: O, shape: [hq, t, d] }, lse: L, backward };
}
