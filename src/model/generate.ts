/**
 * Batched generation with a KV cache: one packed prefill over all prompts (document mask, so prompts of any
 * lengths share one forward), then decode steps that run the batch's new tokens together through the
 * projections / MoE / head and attend per sequence against its own cache (full layers: every position; sliding
 * layers: a ring buffer of the last W keys).
 *
 * Randomness: sequence b draws from its own generator seeded from (seed, b), so a sequence's tokens depend only
 * on the seed, its index and the model — the same seed gives the same tokens. See sampling.ts for the log-prob
 * definition (temperature-scaled, full vocabulary).
 */
import { Mulberry32Rng, Tensor } from '../engine/index.ts';
import { projectQkv } from './layers/attention.ts';
import { TAG } from './layers/context.ts';
import { embeddingForward } from './layers/embedding.ts';
import { disposeLinearSaved, linearForward } from './layers/linear.ts';
import { denseMlpForward, disposeDenseMlpSaved } from './layers/mlp.ts';
import { disposeMoeSaved, moeForward } from './layers/moe.ts';
import { LayerKvCache } from './kvcache.ts';
import type { GptOssModel } from './model.ts';
import { decodeAttentionOne } from './ops/decode-attention.ts';
import { chunkAttentionTiles } from './ops/chunk-attention-wasm.ts';
import { decodeAttentionWasm } from './ops/decode-attention-wasm.ts';
import { sampleToken, validateSampling, type SamplingOptions } from './sampling.ts';

export interface GenerateOptions extends SamplingOptions {
  maxNewTokens: number;
  /** Generation of a sequence stops after it samples one of these (the stop token is kept in the output). */
  stopTokenIds?: readonly number[];
  seed?: number;
  /** Run LoRA adapters (default true). */
  adapters?: boolean;
}

export interface GeneratedSequence {
  /** New tokens only. */
  tokens: Int32Array;
  /** Log-prob of each new token under the temperature-scaled distribution. */
  logprobs: Float32Array;
  finishReason: 'stop' | 'length';
}

export interface GenerateResult {
  sequences: GeneratedSequence[];
  prefillTokens: number;
  decodeSteps: number;
}

/** Caches of one sequence, one per layer. */
export type SequenceCache = LayerKvCache[];

/**
 * Most tokens one sequence may feed in one decode step (the rings' slack + 1): a session's new observation goes in
 * chunks of this size instead of one token per step.
 */
export const MAX_DECODE_CHUNK = 256;

export function createCaches(model: GptOssModel, capacity: number): SequenceCache {
  const c = model.config, storage = model.ctx.impl === 'wasm' ? 'wasm' : 'js';
  return c.layer_types.map((kind) => (kind === 'sliding_attention'
    ? new LayerKvCache(c.num_key_value_heads, c.head_dim, c.sliding_window, true, MAX_DECODE_CHUNK - 1, storage)
    : new LayerKvCache(c.num_key_value_heads, c.head_dim, capacity, false, 0, storage)));
}

/**
 * Prefill: runs the prompts packed, fills each sequence's caches and returns the logits rows of each prompt's
 * last token as [B, V] log-softmax values (same argmax / softmax as the logits).
 */
export function prefill(model: GptOssModel, prompts: Int32Array[], caches: SequenceCache[], adapters = true): Float32Array {
  const lens = prompts.map((p) => p.length);
  const offsets = lens.map((_, i) => lens.slice(0, i).reduce((a, b) => a + b, 0));
  const tokens = Int32Array.from(prompts.flatMap((p) => [...p]));
  const docIds = lens.flatMap((n, i) => Array<number>(n).fill(i));
  const rows = Int32Array.from(lens.map((n, i) => offsets[i] + n - 1));
  const r = model.forward({ tokens, docIds }, {
    grad: false, adapters, rows, fullLogprobs: true,
    captureKv: (layer, k, v) => {
      const kd = k.data(), vd = v.data(), N = tokens.length;
      for (let b = 0; b < prompts.length; b++) for (let i = 0; i < lens[b]; i++) caches[b][layer].append(kd, vd, N, offsets[b] + i);
    },
  });
  const out = r.fullLogprobs!.toArray();
  r.fullLogprobs!.dispose();
  return out;
}

/**
 * One decode step for B sequences. Sequence b feeds `counts[b]` tokens (default 1; at most MAX_DECODE_CHUNK),
 * taken in order from `tokens`, the first at position caches[b][·].length. Appends their keys and values and
 * returns the logits [B, V] after each sequence's last fed token. The projections, MoE and head run on all fed
 * tokens together; attention is single-query per token against its sequence's cache, on the Wasm kernels when the
 * model runs on them, except that a sequence feeding at least `tileMin` tokens has their full-attention layers run as
 * query tiles (ops/chunk-attention-wasm.ts).
 */
export interface DecodeOptions {
  /** Attention kernel: 'wasm' (default when the model runs on the Wasm kernels) or 'js' (the reference loop; benchmarks). */
  kernel?: 'wasm' | 'js';
  /**
   * Wasm kernel: a sequence feeding at least this many tokens in the step has their full-attention layers computed as
   * query tiles by the blockwise kernel (ops/chunk-attention-wasm.ts) instead of one query at a time. Default
   * DEFAULT_TILE_MIN; a value above MAX_DECODE_CHUNK turns it off (benchmarks).
   */
  tileMin?: number;
}

/** Shortest chunk whose full-layer attention runs as query tiles (`npm run bench:decode` measures chunks of 32 and more). */
export const DEFAULT_TILE_MIN = 32;

/** The single-query Wasm kernel on some of the step's tokens (those not computed as tiles): gathered, run, scattered. */
function decodeSubset(qh: Tensor, tokens: Int32Array, cacheOf: (t: number) => LayerKvCache, positions: Int32Array, sinks: Tensor | null,
  hq: number, hkv: number, d: number, scale: number, orows: Tensor): void {
  const N = qh.shape[1], n = tokens.length, row = hq * d;
  const q = Tensor.empty([hq, n, d], { tag: TAG.act }), o = Tensor.empty([n, row], { tag: TAG.act });
  try {
    const qd = qh.data(), sub = q.data();
    for (let h = 0; h < hq; h++) tokens.forEach((t, i) => sub.set(qd.subarray((h * N + t) * d, (h * N + t + 1) * d), (h * n + i) * d));
    decodeAttentionWasm(q, Array.from(tokens, (t) => {
      const cache = cacheOf(t);
      return { cache, lo: cache.lowest(positions[t]), hi: positions[t] };
    }), sinks, hq, hkv, d, scale, o);
    const od = o.data(), out = orows.data();
    tokens.forEach((t, i) => out.set(od.subarray(i * row, (i + 1) * row), t * row));
  } finally {
    q.dispose(); o.dispose();
  }
}

export function decodeStep(model: GptOssModel, tokens: Int32Array, caches: SequenceCache[], adapters = true, counts?: ArrayLike<number>,
  options: DecodeOptions = {}): Float32Array {
  const cfg = model.config, ctx = model.ctx, be = ctx.backend;
  const B = caches.length, N = tokens.length, { hq, hkv, d } = model.dims;
  const per = counts ? Array.from(counts) : new Array<number>(B).fill(1);
  if (per.length !== B) throw new RangeError(`decodeStep: ${per.length} counts for ${B} sequences`);
  if (per.reduce((a, c) => a + c, 0) !== N) throw new RangeError(`decodeStep: counts add up to ${per.reduce((a, c) => a + c, 0)}, not the ${N} tokens`);
  if (per.some((c) => !Number.isInteger(c) || c < 1 || c > MAX_DECODE_CHUNK)) throw new RangeError(`decodeStep: each sequence feeds 1–${MAX_DECODE_CHUNK} tokens, got ${per.join(', ')}`);
  const seqOf = new Int32Array(N), positions = new Int32Array(N), last = new Int32Array(B);
  for (let b = 0, t = 0; b < B; b++) {
    for (let i = 0; i < per[b]; i++, t++) { seqOf[t] = b; positions[t] = caches[b][0].length + i; }
    last[b] = t - 1;
  }
  const wasm = options.kernel !== 'js' && ctx.impl === 'wasm' && d % 4 === 0;
  const tileMin = options.tileMin ?? DEFAULT_TILE_MIN;
  if (!(Number.isInteger(tileMin) && tileMin >= 1)) throw new RangeError(`decodeStep: tileMin must be a positive integer, got ${tileMin}`);
  // Sequences whose chunk is long enough for query tiles (the blockwise kernel needs d % 8 == 0), and the other tokens.
  const tiled = wasm && d % 8 === 0 ? Array.from({ length: B }, (_, b) => b).filter((b) => per[b] >= tileMin) : [];
  const single = tiled.length === 0 ? null : Int32Array.from({ length: N }, (_, t) => t).filter((t) => per[seqOf[t]] < tileMin);
  const scale = 1 / Math.sqrt(d);
  let scores = new Float64Array(64);
  let x = embeddingForward(ctx, model.param('model.embed_tokens.weight'), tokens);
  for (const L of model.layers) {
    const n1 = be.rmsnorm(x, L.ln1.weight, cfg.rms_norm_eps, { tag: TAG.act });
    const { qh, kh, vh, sq, sk, sv } = projectQkv(ctx, L.attn, model.dims, n1.y, positions, model.rope, adapters);
    n1.y.dispose(); n1.rstd.dispose();
    for (const s of [sq, sk, sv]) disposeLinearSaved(s);
    const orows = Tensor.empty([N, hq * d], { tag: TAG.act });
    const kd = kh.data(), vd = vh.data();
    for (let t = 0; t < N; t++) caches[seqOf[t]][L.index].append(kd, vd, N, t);
    if (wasm && single && !caches[0][L.index].ring) {
      const sinks = L.attn.sinks ? L.attn.sinks.toArray() : null;
      for (const b of tiled) chunkAttentionTiles(qh, last[b] - per[b] + 1, per[b], caches[b][L.index], sinks, hq, hkv, d, scale, ctx.attnBlock, orows);
      if (single.length > 0) decodeSubset(qh, single, (t) => caches[seqOf[t]][L.index], positions, L.attn.sinks, hq, hkv, d, scale, orows);
    } else if (wasm) {
      decodeAttentionWasm(qh, Array.from(positions, (p, t) => {
        const cache = caches[seqOf[t]][L.index];
        return { cache, lo: cache.lowest(p), hi: p };
      }), L.attn.sinks, hq, hkv, d, scale, orows);
    } else {
      // no sink term (sinks: 'ignore') = sink logits of −∞, which the reference loop takes as they are
      const od = orows.data(), qd = qh.data(), sinks = L.attn.sinks ? L.attn.sinks.toArray() : new Float32Array(hq).fill(-Infinity);
      const q = new Float32Array(hq * d);
      for (let t = 0; t < N; t++) {
        const cache = caches[seqOf[t]][L.index], p = positions[t], lo = cache.lowest(p);
        for (let h = 0; h < hq; h++) q.set(qd.subarray((h * N + t) * d, (h * N + t + 1) * d), h * d);
        if (scores.length < p - lo + 1) scores = new Float64Array(p - lo + 1);
        decodeAttentionOne(q, 0, cache.k.data(), cache.v.data(), lo, p, { hq, hkv, d, slots: cache.slots }, sinks, scale, od, t * hq * d, scores);
      }
    }
    qh.dispose(); kh.dispose(); vh.dispose();
    const o = linearForward(ctx, L.attn.o, orows, adapters);
    orows.dispose(); disposeLinearSaved(o.saved);
    const x2 = be.add(x, o.y, { tag: TAG.act });
    o.y.dispose(); x.dispose();
    const n2 = be.rmsnorm(x2, L.ln2.weight, cfg.rms_norm_eps, { tag: TAG.act });
    let m: Tensor;
    if (L.moe) {
      const r = moeForward(ctx, L.moe, n2.y, cfg.num_experts_per_tok, cfg.swiglu_limit, adapters);
      disposeMoeSaved(r.saved); m = r.y;
    } else {
      const r = denseMlpForward(ctx, L.dense!, n2.y, cfg.swiglu_limit, adapters);
      disposeDenseMlpSaved(r.saved); m = r.y;
    }
    n2.y.dispose(); n2.rstd.dispose();
    x = be.add(x2, m, { tag: TAG.act });
    x2.dispose(); m.dispose();
  }
  if (N !== B) {
    // only each sequence's last token reaches the head
    const C = cfg.hidden_size, xd = x.data(), rows = Tensor.empty([B, C], { tag: TAG.act }), rd = rows.data();
    for (let b = 0; b < B; b++) rd.set(xd.subarray(last[b] * C, (last[b] + 1) * C), b * C);
    x.dispose();
    x = rows;
  }
  const fn = be.rmsnorm(x, model.param('model.norm.weight'), cfg.rms_norm_eps, { tag: TAG.act });
  x.dispose();
  const logits = be.matmul(fn.y, model.param('lm_head.weight'), { transB: true, tag: TAG.logits });
  fn.y.dispose(); fn.rstd.dispose();
  const out = logits.toArray();
  logits.dispose();
  return out;
}

export function generate(model: GptOssModel, prompts: readonly (Int32Array | readonly number[])[], options: GenerateOptions): GenerateResult {
  validateSampling(options);
  if (!(Number.isInteger(options.maxNewTokens) && options.maxNewTokens >= 0)) throw new RangeError(`maxNewTokens must be a non-negative integer, got ${options.maxNewTokens}`);
  if (prompts.length === 0) throw new RangeError('generate: no prompts');
  const ps = prompts.map((p, i) => {
    if (p.length === 0) throw new RangeError(`generate: prompt ${i} is empty`);
    return p instanceof Int32Array ? p : Int32Array.from(p);
  });
  const maxLen = Math.max(...ps.map((p) => p.length)) + options.maxNewTokens;
  if (maxLen > model.config.max_position_embeddings) throw new RangeError(`generate: ${maxLen} positions exceed max_position_embeddings ${model.config.max_position_embeddings}`);
  const adapters = options.adapters ?? true;
  const stop = new Set(options.stopTokenIds ?? []);
  const V = model.config.vocab_size;
  const seed = options.seed ?? 0;
  const rngs = ps.map((_, b) => new Mulberry32Rng((Math.imul(seed, 0x9e3779b1) ^ Math.imul(b + 1, 0x85ebca6b)) >>> 0));
  const caches = ps.map((p) => createCaches(model, p.length + options.maxNewTokens));
  const outTokens = ps.map(() => [] as number[]), outLogprobs = ps.map(() => [] as number[]);
  const finish: ('stop' | 'length')[] = ps.map(() => 'length');
  let decodeSteps = 0;
  try {
    if (options.maxNewTokens === 0) return { sequences: ps.map(() => ({ tokens: new Int32Array(0), logprobs: new Float32Array(0), finishReason: 'length' })), prefillTokens: 0, decodeSteps: 0 };
    let logits = prefill(model, ps, caches, adapters);
    let active = ps.map((_, b) => b);
    for (;;) {
      const next: number[] = [], nextTokens: number[] = [];
      active.forEach((b, row) => {
        const s = sampleToken(logits.subarray(row * V, (row + 1) * V), options, rngs[b]);
        outTokens[b].push(s.token);
        outLogprobs[b].push(s.logprob);
        if (stop.has(s.token)) finish[b] = 'stop';
        else if (outTokens[b].length < options.maxNewTokens) { next.push(b); nextTokens.push(s.token); }
      });
      if (next.length === 0) break;
      active = next;
      logits = decodeStep(model, Int32Array.from(nextTokens), active.map((b) => caches[b]), adapters);
      decodeSteps++;
    }
  } finally {
    for (const c of caches) for (const l of c) l.dispose();
  }
  return {
    sequences: ps.map((_, b) => ({ tokens: Int32Array.from(outTokens[b]), logprobs: Float32Array.from(outLogprobs[b]), finishReason: finish[b] })),
    prefillTokens: ps.reduce((a, p) => a + p.length, 0),
    decodeSteps,
  };
}
