/**
 * A decode step's attention on the Wasm kernels (assembly/decode.ts): every new token of every sequence at once,
 * work items (token, kv head) shared by the engine's threads. Same formula as decode-attention.ts; the caches must
 * live in Wasm memory.
 */
import { getRuntime } from '../../engine/runtime.ts';
import type { Tensor } from '../../engine/tensor.ts';
import type { LayerKvCache } from '../kvcache.ts';

export interface DecodeQuery {
  cache: LayerKvCache;
  /** Positions the token sees, inclusive. */
  lo: number;
  hi: number;
}

/** q [Hq, N, d] head-major (token t = queries[t]), sinks [Hq] (null: no sink term) → out [N, Hq·d]. */
export function decodeAttentionWasm(q: Tensor, queries: readonly DecodeQuery[], sinks: Tensor | null, hq: number, hkv: number, d: number,
  scale: number, out: Tensor): void {
  if (d % 4 !== 0) throw new RangeError(`decodeAttentionWasm: head dim ${d} must be a multiple of 4`);
  const rt = getRuntime(), n = queries.length;
  let maxSpan = 1;
  for (const s of queries) maxSpan = Math.max(maxSpan, s.hi - s.lo + 1);
  // a token's scores and the kernel's eight accumulator vectors (assembly/decode.ts: decodeScratchBytes)
  const scratchPer = Math.ceil(Number(rt.exports.decodeScratchBytes(maxSpan)) / 64) * 64;
  const table = rt.alloc(n * 20, 16, 'engine.temp');
  const scratch = rt.alloc(scratchPer * rt.threads, 64, 'engine.temp');
  try {
    const t32 = rt.i32(table, n * 5);
    queries.forEach((s, i) => {
      t32[i * 5] = s.cache.k.ptr; t32[i * 5 + 1] = s.cache.v.ptr; t32[i * 5 + 2] = s.cache.slots;
      t32[i * 5 + 3] = s.lo; t32[i * 5 + 4] = s.hi;
    });
    let work = 0;
    for (const s of queries) work += (s.hi - s.lo + 1) * hq * d;
    rt.run('decodeAttention', [rt.workCounter, n, table, q.ptr, hq, hkv, d, sinks ? sinks.ptr : 0, scale, out.ptr, scratch, scratchPer], 2 * work);
  } finally {
    rt.free(scratch);
    rt.free(table);
  }
}
