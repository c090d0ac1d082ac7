/**
 * Decode / chunked prefill against a KV cache: n new query rows whose keys and values are already appended to
 * the cache (cache length S), so query i sits at absolute position S − n + i. Layers whose mask is a window of
 * W keys only read the last W + n − 1 cache entries (the keys any of the n rows can see).
 */
import { blockwiseForward } from './blockwise.ts';
import { createBlockMask } from './block-mask.ts';
import type { AttentionMask } from './masks.ts';
import type { AttentionOptions, AttentionResult, FloatArray, HeadTensor } from './types.ts';

export interface DecodeOptions {
  readonly mask: AttentionMask;
  readonly sinks?: FloatArray | null;
  readonly scale?: number;
  readonly gqa?: boolean;
  readonly blockSize?: number;
  /** The forward implementation to use (default: the TypeScript blockwise path). */
  readonly forward?: <A extends FloatArray>(q: HeadTensor<A>, k: HeadTensor<A>, v: HeadTensor<A>, o: AttentionOptions) => AttentionResult<A>;
}

/** Keys a causal window mask can reach behind the query (W − 1), or Infinity when the mask has no such bound. */
export function lookback(mask: AttentionMask): number {
  const band = mask.band;
  return band && band.lo >= 0 && Number.isFinite(band.hi) ? band.hi : Infinity;
}

function sliceKeys<A extends FloatArray>(x: HeadTensor<A>, from: number): HeadTensor<A> {
  const [h, s, d] = x.shape;
  if (from === 0) return x;
  const n = s - from;
  const out = new (x.data.constructor as { new(n: number): A })(h * n * d);
  for (let g = 0; g < h; g++) out.set(x.data.subarray((g * s + from) * d, (g + 1) * s * d), g * n * d);
  return { data: out, shape: [h, n, d] };
}

/** Attention of the last n = q.shape[1] positions against the whole cache (kCache, vCache: [Hkv, S, d]). */
export function decodeAttention<A extends FloatArray>(q: HeadTensor<A>, kCache: HeadTensor<A>, vCache: HeadTensor<A>, options: DecodeOptions): AttentionResult<A> {
  if (q.shape.length !== 3 || kCache.shape.length !== 3) throw new RangeError('decodeAttention: q and the cache must be [heads, length, dim]');
  const n = q.shape[1];
  const S = kCache.shape[1];
  if (n > S) throw new RangeError(`decodeAttention: ${n} query rows but only ${S} cached positions; append the new keys to the cache first`);
  const back = lookback(options.mask);
  const from = Number.isFinite(back) ? Math.max(0, S - n - back) : 0;
  const k = sliceKeys(kCache, from), v = sliceKeys(vCache, from);
  const blockMask = createBlockMask(options.mask, n, S - from, options.blockSize ?? 64, { qOffset: S - n, kvOffset: from });
  const forward = options.forward ?? blockwiseForward;
  return forward(q, k, v, { blockMask, sinks: options.sinks, scale: options.scale, gqa: options.gqa });
}
