/**
 * A decode step's attention for a *chunk* of one sequence's new tokens (an observation fed into a session's cache)
 * as query tiles: the blockwise sink-aware kernel the trainer runs (src/attention/wasm.ts, assembly/attention.ts)
 * over the sequence's full-attention cache, instead of one query at a time (decode-attention-wasm.ts).
 *
 * The chunk's c tokens sit at positions p0 … p0 + c − 1 and are already in the cache, so the keys are the cache's
 * first p0 + c positions and the mask is causal with the queries offset by p0 (`createBlockMask(..., { qOffset })`).
 * A tile of queries reads each key tile once for all its rows, where the single-query kernel reads every key once
 * per query. Same formula, float32 both; the tile kernel's exp is its base-2 polynomial, so results agree with the
 * single-query kernel to float rounding (test/model/chunk-attention.test.ts), and match the trainer's forward more
 * closely than before.
 *
 * Only full-attention layers: a sliding layer's token sees at most W keys, which the single-query kernel handles
 * cheaply, and its cache is a ring whose slots are not in position order.
 */
import { createBlockMask } from '../../attention/block-mask.ts';
import { causalMask } from '../../attention/masks.ts';
import { flexAttention } from '../../attention/wasm.ts';
import { Tensor } from '../../engine/tensor.ts';
import type { LayerKvCache } from '../kvcache.ts';

const CAUSAL = causalMask();

/**
 * q [Hq, N, d] head-major (all the step's tokens), the chunk = tokens t0 … t0 + c − 1 of the step, which are the
 * cache's last c positions; writes rows t0 … t0 + c − 1 of out [N, Hq·d].
 */
export function chunkAttentionTiles(q: Tensor, t0: number, c: number, cache: LayerKvCache, sinks: Float32Array | null, hq: number,
  hkv: number, d: number, scale: number, block: number, out: Tensor): void {
  if (cache.ring) throw new RangeError('chunkAttentionTiles: full-attention caches only (a ring\'s slots are not in position order)');
  const N = q.shape[1], S = cache.length, p0 = S - c;
  if (!(c >= 1 && p0 >= 0 && t0 >= 0 && t0 + c <= N)) throw new RangeError(`chunkAttentionTiles: chunk ${t0}+${c} of ${N} tokens against ${S} cached positions`);
  const qc = Tensor.empty([hq, c, d], { tag: 'attn.scratch' });
  const kc = Tensor.empty([hkv, S, d], { tag: 'attn.scratch' });
  const vc = Tensor.empty([hkv, S, d], { tag: 'attn.scratch' });
  try {
    // Views after every allocation (Wasm memory may grow and detach older views).
    const qd = q.data(), qcd = qc.data();
    for (let h = 0; h < hq; h++) qcd.set(qd.subarray((h * N + t0) * d, (h * N + t0 + c) * d), h * c * d);
    const K = cache.k.data(), V = cache.v.data(), kcd = kc.data(), vcd = vc.data(), R = cache.slots;
    for (let g = 0; g < hkv; g++) {
      kcd.set(K.subarray(g * R * d, (g * R + S) * d), g * S * d);
      vcd.set(V.subarray(g * R * d, (g * R + S) * d), g * S * d);
    }
    const blockMask = createBlockMask(CAUSAL, c, S, block, { qOffset: p0 });
    const r = flexAttention(qc, kc, vc, { blockMask, sinks, scale, gqa: hq !== hkv, checkFinite: false });
    try {
      const o = r.o.data(), od = out.data(), row = hq * d;
      for (let h = 0; h < hq; h++) {
        for (let i = 0; i < c; i++) od.set(o.subarray((h * c + i) * d, (h * c + i + 1) * d), (t0 + i) * row + h * d);
      }
    } finally {
      r.dispose();
    }
  } finally {
    qc.dispose(); kc.dispose(); vc.dispose();
  }
}
