/**
 * The eager baseline at benchmark scale: the same form-A algorithm as eager.ts (scores, then probabilities with the
 * sink column in the normaliser, backward through dP and dS), with every [Hq, T, S] matrix materialised in full —
 * as Hugging Face's eager gpt-oss path does — and its matrix products run by the Wasm kernels one head at a time.
 *
 * The full matrices are far beyond the 4 GiB Wasm memory at long T, so they live in JS Float32Arrays (one per head),
 * recorded in the engine's accounting under 'attn.eager.scores' / '.probs' / '.dprobs' / '.dscores'; one head's
 * matrix is staged through a Wasm workspace ('attn.eager.workspace') for each product. Peak: scores + probs in the
 * forward, probs + dP + dS in the backward (3 full matrices). With `budgetBytes`, an allocation that would push the
 * engine's live bytes past the budget is refused with EagerBudgetError before it is made.
 *
 * Masks must be bands (causal / sliding window); S must be a multiple of 4 (SIMD rows).
 */
import { engineMemory } from '../engine/memory.ts';
import { getRuntime } from '../engine/runtime.ts';
import { Tensor } from '../engine/tensor.ts';
import { expectShape, validateAttention } from './validate.ts';
import type { FlexWasmGrads, FlexWasmOptions } from './wasm.ts';
import type { AttentionOptions, HeadTensor } from './types.ts';

export class EagerBudgetError extends Error {
  constructor(readonly requestedBytes: number, readonly liveBytes: number, readonly budgetBytes: number) {
    super(`eager attention: allocating ${requestedBytes} bytes on top of ${liveBytes} live would exceed the memory budget of ${budgetBytes} bytes`);
    this.name = 'EagerBudgetError';
  }
}

export interface EagerWasmOptions extends FlexWasmOptions {
  /** Refuse allocations that would take the engine's live bytes above this. */
  readonly budgetBytes?: number;
}

export interface EagerWasmOutput {
  readonly o: Tensor;
  readonly lse: Tensor;
  backward(dO: Tensor): FlexWasmGrads;
  dispose(): void;
}

const BAND_CLAMP = 2 ** 30;

/** One [T, S] Float32Array per head, accounted as a whole. */
class HeadMatrices {
  readonly heads: Float32Array[] = [];
  private live = true;
  constructor(readonly tag: string, readonly count: number, readonly elems: number, budget: number | undefined) {
    const bytes = count * elems * 4;
    if (budget !== undefined && engineMemory.liveBytes + bytes > budget) throw new EagerBudgetError(bytes, engineMemory.liveBytes, budget);
    engineMemory.record(tag, bytes);
    try {
      for (let h = 0; h < count; h++) this.heads.push(new Float32Array(elems));
    } catch (err) {
      engineMemory.release(tag, bytes);
      throw err;
    }
  }
  free(): void {
    if (!this.live) return;
    this.live = false;
    this.heads.length = 0;
    engineMemory.release(this.tag, this.count * this.elems * 4);
  }
}

function headView(name: string, t: Tensor): HeadTensor<Float32Array> {
  if (t.storageKind !== 'wasm') throw new Error(`eagerAttentionWasm: ${name} must live in Wasm memory`);
  return { data: t.data(), shape: t.shape };
}

export function eagerAttentionWasm(q: Tensor, k: Tensor, v: Tensor, options: EagerWasmOptions): EagerWasmOutput {
  const rt = getRuntime();
  const sh = validateAttention(headView('q', q), headView('k', k), headView('v', v), options as AttentionOptions);
  const { hq, hkv, t: T, s: S, d, group, scale } = sh;
  const band = options.blockMask.mask.band;
  if (!band) throw new RangeError('eagerAttentionWasm: only band masks (causal, sliding window) are supported');
  if (S % 4 !== 0 || d % 8 !== 0) throw new RangeError('eagerAttentionWasm: S must be a multiple of 4 and d of 8');
  const delta = options.blockMask.qOffset - options.blockMask.kvOffset;
  const lo = Math.max(-BAND_CLAMP, band.lo), hi = Math.min(BAND_CLAMP, band.hi);
  const sinks = options.sinks ?? null;
  const budget = options.budgetBytes;
  const elems = T * S;
  const f4 = 4;

  // Wasm workspace: two [T × S] staging matrices and Kᵀ / Vᵀ of one kv head.
  const wsTag = 'attn.eager.workspace';
  const wsBytes = (2 * elems + 2 * d * S) * f4;
  if (budget !== undefined && engineMemory.liveBytes + wsBytes > budget) throw new EagerBudgetError(wsBytes, engineMemory.liveBytes, budget);
  const w1 = rt.alloc(elems * f4, 64, wsTag), w2 = rt.alloc(elems * f4, 64, wsTag);
  const kt = rt.alloc(d * S * f4, 64, wsTag), vt = rt.alloc(d * S * f4, 64, wsTag);
  const freeWorkspace = (): void => { for (const p of [w1, w2, kt, vt]) rt.free(p); };
  const transposeInto = (src: Tensor, g: number, dst: number): void => {
    const a = src.data().subarray(g * S * d, (g + 1) * S * d);
    const out = rt.f32(dst, d * S);
    for (let j = 0; j < S; j++) for (let e = 0; e < d; e++) out[e * S + j] = a[j * d + e];
  };
  const mm = (a: number, ars: number, acs: number, b: number, ldb: number, c: number, ldc: number, m: number, n: number, kk: number, acc: boolean): void =>
    rt.parallel('attnMmRows', [a, ars * f4, acs * f4, b, ldb * f4, c, ldc * f4, m, n, kk, acc ? 1 : 0]);
  const qPtr = (h: number): number => q.ptr + h * T * d * f4;
  const kvPtr = (x: Tensor, g: number): number => x.ptr + g * S * d * f4;

  const o = Tensor.empty([hq, T, d], { tag: 'attn.out' });
  const lse = Tensor.empty([hq, T], { tag: 'attn.lse' });
  let probs: HeadMatrices | undefined;
  try {
    // scores = Q Kᵀ for every head (scale and mask are applied with the softmax)
    const scores = new HeadMatrices('attn.eager.scores', hq, elems, budget);
    try {
      for (let g = 0; g < hkv; g++) {
        transposeInto(k, g, kt);
        for (let h = g * group; h < (g + 1) * group; h++) {
          mm(qPtr(h), d, 1, kt, S, w1, S, T, S, d, false);
          scores.heads[h].set(rt.f32(w1, elems));
        }
      }
      probs = new HeadMatrices('attn.eager.probs', hq, elems, budget);
      for (let h = 0; h < hq; h++) {
        rt.f32(w1, elems).set(scores.heads[h]);
        rt.parallel('attnEagerSoftmax', [w1, lse.ptr + h * T * f4, T, S, sinks ? sinks[h] : 0, sinks ? 1 : 0, lo, hi, delta, scale]);
        probs.heads[h].set(rt.f32(w1, elems));
        mm(w1, S, 1, kvPtr(v, Math.floor(h / group)), d, o.ptr + h * T * d * f4, d, T, d, S, false);
      }
    } finally {
      scores.free();
    }
  } catch (err) {
    probs?.free();
    freeWorkspace();
    o.dispose(); lse.dispose();
    throw err;
  }
  const P = probs!;
  let done = false;
  const release = (): void => { if (!done) { done = true; P.free(); freeWorkspace(); } };

  return {
    o, lse,
    backward(dO: Tensor): FlexWasmGrads {
      if (done) throw new Error('eagerAttentionWasm: backward after dispose()');
      expectShape('dO', headView('dO', dO), [hq, T, d]);
      const dq = Tensor.empty([hq, T, d], { tag: 'attn.grad' });
      const dk = Tensor.zeros([hkv, S, d], { tag: 'attn.grad' });
      const dv = Tensor.zeros([hkv, S, d], { tag: 'attn.grad' });
      const D = Tensor.empty([T], { tag: 'attn.stats' });
      const dsinks = sinks ? new Float32Array(hq) : null;
      let dP: HeadMatrices | undefined, dS: HeadMatrices | undefined;
      try {
        dP = new HeadMatrices('attn.eager.dprobs', hq, elems, budget);
        for (let g = 0; g < hkv; g++) {
          transposeInto(v, g, vt);
          for (let h = g * group; h < (g + 1) * group; h++) {
            mm(dO.ptr + h * T * d * f4, d, 1, vt, S, w1, S, T, S, d, false);
            dP.heads[h].set(rt.f32(w1, elems));
          }
        }
        dS = new HeadMatrices('attn.eager.dscores', hq, elems, budget);
        for (let h = 0; h < hq; h++) {
          rt.f32(w1, elems).set(P.heads[h]);
          rt.f32(w2, elems).set(dP.heads[h]);
          rt.parallel('attnEagerDs', [w1, w2, D.ptr, T, S, scale]);
          dS.heads[h].set(rt.f32(w2, elems));
          if (dsinks && sinks) {
            const Dv = D.data(), L = lse.data().subarray(h * T, (h + 1) * T);
            let acc = 0;
            for (let i = 0; i < T; i++) acc -= Math.exp(sinks[h] - L[i]) * Dv[i];
            dsinks[h] = acc;
          }
        }
        dP.free();
        for (let h = 0; h < hq; h++) {
          const g = Math.floor(h / group);
          rt.f32(w1, elems).set(P.heads[h]);
          rt.f32(w2, elems).set(dS.heads[h]);
          const dOh = dO.ptr + h * T * d * f4;
          mm(w1, 1, S, dOh, d, kvPtr(dv, g), d, S, d, T, true); // dV += Pᵀ dO
          mm(w2, S, 1, kvPtr(k, g), d, dq.ptr + h * T * d * f4, d, T, d, S, false); // dQ = (c·dS) K
          mm(w2, 1, S, qPtr(h), d, kvPtr(dk, g), d, S, d, T, true); // dK += (c·dS)ᵀ Q
        }
        return { dq, dk, dv, dsinks };
      } catch (err) {
        dq.dispose(); dk.dispose(); dv.dispose();
        throw err;
      } finally {
        dP?.free();
        dS?.free();
        D.dispose();
        release();
      }
    },
    dispose() {
      release();
      o.dispose();
      lse.dispose();
    },
  };
}
