/**
 * The in-process gpt-oss model as an `InferenceEngine`: `modelGenerateBatch` runs one batch of requests with a
 * packed prefill and KV-cached decode steps (src/model/generate.ts building blocks), honouring each request's own
 * sampling settings, token cap, stop ids and seed; `createModelEngine` puts it behind the batching scheduler so
 * concurrent agent loops share batches.
 *
 * Log-probs: `sampleToken`'s convention (temperature-scaled, full vocabulary), which is what `GptOssPolicy` recomputes.
 * A request's tokens depend only on its prompt, settings and seed, not on which batch it ran in.
 */
import { Mulberry32Rng } from '../engine/index.ts';
import { createCaches, decodeStep, MAX_DECODE_CHUNK, prefill, type SequenceCache } from '../model/generate.ts';
import type { GptOssModel } from '../model/model.ts';
import { sampleToken } from '../model/sampling.ts';
import { BatchingEngine, type GenerateBatchFn } from './batching.ts';
import { StepBatchingEngine, type StepModel } from './step-batching.ts';
import type { FinishReason, GenerationRequest, GenerationResult } from './inference.ts';
import { validateRequest } from './inference.ts';

export interface ModelEngineOptions {
  /**
   * Step level: positions reserved for a trajectory's KV cache so later turns extend it instead of prefilling again
   * (default: the first turn's prompt + maxNewTokens, which covers the whole episode when turns are not capped).
   */
  sessionCapacity?: number;
  /** Requests per batch (request level), or sequences decoding at once (step level). */
  maxBatchSize?: number;
  maxBatchTokens?: number;
  /** Run LoRA adapters (default true). */
  adapters?: boolean;
  /** Step level: most tokens of a session's new context fed per decode step (default MAX_DECODE_CHUNK; 1 = one per step). */
  decodeChunk?: number;
  /** Decode attention kernel (default 'wasm' on the Wasm backend; 'js' is the reference loop, for benchmarks). */
  decodeKernel?: 'wasm' | 'js';
  /**
   * Step level, Wasm kernel: chunks of at least this many tokens run their full-attention layers as query tiles
   * (default DEFAULT_TILE_MIN; above MAX_DECODE_CHUNK = never, for benchmarks).
   */
  decodeTileMin?: number;
}

export function modelGenerateBatch(model: GptOssModel, adapters = true): GenerateBatchFn {
  return async (requests: GenerationRequest[]): Promise<GenerationResult[]> => {
    if (requests.length === 0) return [];
    const V = model.config.vocab_size;
    for (const r of requests) {
      validateRequest(r);
      const end = r.tokens.length + r.maxNewTokens;
      if (end > model.config.max_position_embeddings) throw new RangeError(`generation request needs ${end} positions, the model has max_position_embeddings ${model.config.max_position_embeddings}`);
      for (const t of r.tokens) if (!(Number.isInteger(t) && t >= 0 && t < V)) throw new RangeError(`generation request: token id ${t} is outside the model's vocabulary of ${V}`);
    }
    const prompts = requests.map((r) => Int32Array.from(r.tokens));
    const samplers = requests.map(requestSampler);
    const caches = requests.map((r) => createCaches(model, r.tokens.length + r.maxNewTokens));
    const out = requests.map(() => ({ tokens: [] as number[], logprobs: [] as number[], finishReason: 'length' as FinishReason }));
    try {
      let logits = prefill(model, prompts, caches, adapters);
      let active = requests.map((_, b) => b);
      while (active.length > 0) {
        const next: number[] = [];
        const nextTokens: number[] = [];
        active.forEach((b, row) => {
          const r = requests[b];
          const s = samplers[b](logits.subarray(row * V, (row + 1) * V));
          out[b].tokens.push(s.token);
          out[b].logprobs.push(s.logprob);
          if (r.stop.includes(s.token)) out[b].finishReason = 'stop';
          else if (out[b].tokens.length < r.maxNewTokens) {
            next.push(b);
            nextTokens.push(s.token);
          }
        });
        active = next;
        if (active.length > 0) logits = decodeStep(model, Int32Array.from(nextTokens), active.map((b) => caches[b]), adapters);
      }
    } finally {
      for (const c of caches) for (const l of c) l.dispose();
    }
    return out;
  };
}

/** The model as a `StepModel`: one KV cache per sequence, packed prefill, batched decode steps. */
export function gptOssStepModel(model: GptOssModel, adapters = true, options: Pick<ModelEngineOptions, 'decodeChunk' | 'decodeKernel' | 'decodeTileMin'> = {}): StepModel<SequenceCache> {
  const chunk = options.decodeChunk ?? MAX_DECODE_CHUNK;
  if (!(Number.isInteger(chunk) && chunk >= 1 && chunk <= MAX_DECODE_CHUNK)) throw new RangeError(`decodeChunk must be an integer in 1–${MAX_DECODE_CHUNK}, got ${chunk}`);
  const tileMin = options.decodeTileMin;
  if (tileMin !== undefined && !(Number.isInteger(tileMin) && tileMin >= 1)) throw new RangeError(`decodeTileMin must be a positive integer, got ${tileMin}`);
  const decodeOptions = { kernel: options.decodeKernel, tileMin };
  return {
    vocabSize: model.config.vocab_size,
    prefill(prompts, capacities) {
      for (const c of capacities) if (c > model.config.max_position_embeddings) throw new RangeError(`generation request needs ${c} positions, the model has max_position_embeddings ${model.config.max_position_embeddings}`);
      const states = capacities.map((c) => createCaches(model, c));
      try {
        return { states, logits: prefill(model, prompts, states, adapters) };
      } catch (e) {
        for (const s of states) for (const l of s) l.dispose();
        throw e;
      }
    },
    decode: (tokens, states, counts) => decodeStep(model, tokens, states, adapters, counts, decodeOptions),
    maxFeedPerStep: chunk,
    release: (state) => {
      for (const l of state) l.dispose();
    },
  };
}

/** `sampleToken` with a generator seeded by the request (the same convention as `modelGenerateBatch`). */
export function requestSampler(r: GenerationRequest): (logits: Float32Array) => { token: number; logprob: number } {
  const rng = new Mulberry32Rng(r.seed ?? 0);
  const options = { temperature: r.temperature, topK: r.topK !== undefined && r.topK > 0 ? r.topK : undefined, topP: r.topP };
  return (logits) => sampleToken(logits, options, rng);
}

/** Request-level batching over `modelGenerateBatch`. */
export function createModelEngine(model: GptOssModel, options: ModelEngineOptions = {}): BatchingEngine {
  return new BatchingEngine({ generateBatch: modelGenerateBatch(model, options.adapters ?? true), maxBatchSize: options.maxBatchSize ?? 16, maxBatchTokens: options.maxBatchTokens });
}

/** Iteration-level continuous batching: `maxBatchSize` sequences decoding at once. */
export function createStepModelEngine(model: GptOssModel, options: ModelEngineOptions = {}): StepBatchingEngine<SequenceCache> {
  return new StepBatchingEngine(gptOssStepModel(model, options.adapters ?? true, options), {
    maxActive: options.maxBatchSize ?? 16,
    maxActiveTokens: options.maxBatchTokens,
    sampler: requestSampler,
    sessionCapacity: options.sessionCapacity !== undefined ? Math.min(options.sessionCapacity, model.config.max_position_embeddings) : undefined,
  });
}
