/**
 * `longrun serve trainer`: our in-process engine (`GptOssBackend`, src/rl/backend.ts) behind the Tinker HTTP API, as
 * the official Python SDK `tinker` speaks it: the protobuf protocol of SDK ≥ 0.25 (tested with 0.38.0) and the JSON
 * protocol of 0.24.x (tested with 0.24.1).
 *
 * Wire formats: `forward_backward` (and `forward`) take a JSON body or a `tinker_public.ForwardBackwardRequest`
 * (`Content-Type: application/x-protobuf`; `forward_only` runs a forward), either one optionally zstd-compressed
 * (`Content-Encoding: zstd`, inflated with a bound: over `maxBodyBytes` decompressed is a 413). A retrieve that
 * accepts `application/x-protobuf` gets forward/backward and sample results as `ForwardBackwardOutput` /
 * `SampleResponse` bytes (SDK ≥ 0.25 reads those types only so); everything else is JSON. `/api/v1/client/config`
 * announces what the server honours (`proto_compress_fwdbwd`, `fwd_via_fwdbwd`, `parallel_fwdbwd_chunks`, the chunk
 * limits), and `proto_write_fwdbwd` only to SDKs ≥ 0.25 unless `protobuf.oldSdks` offers it to 0.24.x too.
 *
 * Every training call returns a future `{request_id, model_id}`; `/api/v1/retrieve_future` answers its result, an
 * `{error, category}` failure, or `{type: "try_again"}` while it runs (after waiting up to `longPollMs` for it to end,
 * so a client's next poll usually gets the result). Calls on one model execute in `seq_id` order
 * (a call that arrives early waits for its predecessors), whatever order they arrive in. Sessions are created and
 * kept alive by heartbeats. Weights: `save_weights` writes weights + optimizer state under the checkpoint folder and
 * answers a `tinker://<model_id>/weights/<name>` path that `load_weights` reads back; `save_weights_for_sampler`
 * snapshots the weights (base and LoRA adapters) in memory for sampling sessions. Sampling is `sampleModel`'s
 * (src/rl/backend.ts): one sample with seed s draws exactly what the in-process rollout engine draws for seed s.
 *
 * Robustness: bodies are bounded (`maxBodyBytes`, 413), JSON depth is bounded, every field is checked (400 with the
 * field named), unknown ids are 404, and an exception inside a call fails that call's future, never the server.
 */
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { applyLora, type LoraTarget } from '../model/lora.ts';
import type { GptOssModel } from '../model/model.ts';
import { DEFAULT_ADAM, GptOssBackend, LOSS_FNS, sampleModel, type AdamParams, type Datum, type LossConfig, type LossFn, type LossInputs } from '../rl/backend.ts';
import { GptOssPolicy } from '../rl/model-policy.ts';
import { badRequest, HttpError, notFound } from './http-errors.ts';
import { jsonDepthExceeds, readRawBody, sendError, sendJson, tokenMatches } from './http-util.ts';
import { decodeForwardBackwardRequest, encodeForwardBackwardOutput, encodeSampleResponse, inflateZstd, PROTO_CONTENT_TYPE, WireError } from '../rl/tinker/proto/wire.ts';

/** Tinker's LoRA config, as create_model takes it. */
export interface TinkerLoraConfig {
  rank: number;
  seed?: number;
  train_unembed?: boolean;
  train_mlp?: boolean;
  train_attn?: boolean;
}

/** LoRA's α is not part of Tinker's API; this server uses 32 (as SkyRL's Tinker server does). */
export const LORA_ALPHA = 32;

/** A fresh training model for `create_model`: the base from `makeBase`, with adapters when a LoRA config is given. */
export function createTrainingModel(makeBase: () => GptOssModel, lora: TinkerLoraConfig | null): GptOssModel {
  const model = makeBase();
  if (lora) {
    const targets: LoraTarget[] = [];
    if (lora.train_attn ?? true) targets.push('q_proj', 'k_proj', 'v_proj', 'o_proj');
    if (lora.train_mlp ?? true) targets.push('experts');
    if (targets.length === 0) throw badRequest('invalid_lora_config', 'lora_config trains nothing: train_attn and train_mlp are both false (this server has no unembedding adapter)');
    applyLora(model, { rank: lora.rank, alpha: LORA_ALPHA, targets, seed: lora.seed ?? 0 });
  }
  return model;
}

export interface TrainerServerOptions {
  host?: string;
  port?: number;
  /** Required `X-API-Key` value; without one any key is accepted (the SDK always sends one). */
  apiKey?: string;
  /** The base model name clients ask for (`base_model`). */
  baseModel: string;
  /** Builds the base model (same weights every call). */
  makeBase: () => GptOssModel;
  /** Where `save_weights` writes. */
  checkpointDir: string;
  maxBodyBytes?: number;
  maxModels?: number;
  /** Testing the clients' retry paths: the first retrieve of every future answers this HTTP status (408 or 200 + try_again). */
  firstRetrieve?: 'try_again' | 408;
  /**
   * How long `retrieve_future` waits for a future that is not done before answering `try_again` (long polling, as the
   * hosted service does; the SDK waits up to 45 s for an answer). Default 10 000 ms; 0 answers at once.
   */
  longPollMs?: number;
  /**
   * The protobuf protocol. `compress` (default true): announce `proto_compress_fwdbwd`, so SDKs ≥ 0.25 zstd-compress
   * forward_backward bodies (compressed bodies are taken either way). `oldSdks` (default false): also announce
   * `proto_write_fwdbwd` to SDKs 0.24.x, which then send protobuf instead of JSON.
   */
  protobuf?: { compress?: boolean; oldSdks?: boolean };
  /** Chunk limits announced to clients (`fwdbwd_max_chunk_len`, `fwdbwd_max_chunk_bytes_count`); default the SDK's 1024 and 5 MB. */
  chunk?: { maxDatums?: number; maxBytes?: number };
  /** Longest datum, in input tokens (default 131 072): a longer one is refused with 413 before anything runs. */
  maxDatumTokens?: number;
}

interface ModelEntry {
  id: string;
  backend: GptOssBackend;
  lora: TinkerLoraConfig | null;
  nextSeq: number;
  waiting: Map<number, () => void>;
  chain: Promise<unknown>;
}

interface FutureEntry {
  done: boolean;
  /** Called once when the future resolves (long-polling retrieves wait on it). */
  waiters: (() => void)[];
  result?: unknown;
  error?: { error: string; category: 'user' | 'server' };
  retrieved: number;
  /** Results that go out as protobuf to a retrieve that accepts it. */
  kind?: 'fwdbwd' | 'sample';
}

/** A reply sent as protobuf bytes rather than JSON. */
class ProtoReply {
  constructor(readonly bytes: Uint8Array) {}
}

/** `a.b.c` SDK version ≥ 0.25 (the protobuf protocol); a missing or unreadable version counts as current. */
export function sdkSpeaksProtobuf(version: unknown): boolean {
  if (typeof version !== 'string') return true;
  const m = /^(\d+)\.(\d+)/.exec(version);
  if (!m) return true;
  return Number(m[1]) > 0 || Number(m[2]) >= 25;
}

const MAX_SEQ_AHEAD = 10_000;
/** Sampling-session snapshots kept per training model (older sessions answer 404). */
const SESSION_SNAPSHOTS = 4;
/** Endpoints the SDK reads with GET. */
const GET_ROUTES = new Set(['/api/v1/healthz', '/api/v1/get_server_capabilities']);

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function field<T>(body: Record<string, unknown>, name: string, check: (v: unknown) => v is T, what: string, optional = false): T | undefined {
  const v = body[name];
  if (v === undefined || v === null) {
    if (optional) return undefined;
    throw badRequest('invalid_request', `'${name}' is required (${what})`);
  }
  if (!check(v)) throw badRequest('invalid_request', `'${name}' must be ${what}`);
  return v;
}
const isStr = (v: unknown): v is string => typeof v === 'string' && v.length > 0 && v.length <= 1000;
const isInt = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;
const isNum = (v: unknown): v is number => typeof v === 'number' && Number.isFinite(v);
const isBool = (v: unknown): v is boolean => typeof v === 'boolean';

function numbers(name: string, v: unknown, int: boolean): number[] {
  if (!Array.isArray(v)) throw badRequest('invalid_datum', `${name} must be an array of numbers`);
  for (let i = 0; i < v.length; i++) {
    const x: unknown = v[i];
    if (typeof x !== 'number' || !Number.isFinite(x) || (int && !Number.isInteger(x))) throw badRequest('invalid_datum', `${name}[${i}] must be a finite ${int ? 'integer' : 'number'}`);
  }
  return v as number[];
}

function modelInputTokens(name: string, v: unknown): number[] {
  if (!isObj(v) || !Array.isArray(v.chunks)) throw badRequest('invalid_datum', `${name} must be {chunks: [...]}`);
  const out: number[] = [];
  v.chunks.forEach((c: unknown, j: number) => {
    if (!isObj(c) || (c.type !== undefined && c.type !== 'encoded_text')) throw badRequest('invalid_datum', `${name}.chunks[${j}]: only encoded_text chunks are supported (got ${isObj(c) ? JSON.stringify(c.type) : typeof c})`);
    out.push(...numbers(`${name}.chunks[${j}].tokens`, c.tokens, true));
  });
  return out;
}

const LOSS_INPUT_KEYS = ['target_tokens', 'weights', 'logprobs', 'advantages', 'clip_low_threshold', 'clip_high_threshold'] as const;

export function parseDatum(v: unknown, k: number): Datum {
  const name = `data[${k}]`;
  if (!isObj(v)) throw badRequest('invalid_datum', `${name} must be an object`);
  const tokens = modelInputTokens(`${name}.model_input`, v.model_input);
  if (!isObj(v.loss_fn_inputs)) throw badRequest('invalid_datum', `${name}.loss_fn_inputs must be an object`);
  const inputs: Partial<Record<(typeof LOSS_INPUT_KEYS)[number], number[]>> = {};
  for (const [key, t] of Object.entries(v.loss_fn_inputs)) {
    if (!(LOSS_INPUT_KEYS as readonly string[]).includes(key)) throw badRequest('invalid_datum', `${name}.loss_fn_inputs.${key} is not a loss input this server knows (${LOSS_INPUT_KEYS.join(', ')})`);
    if (!isObj(t)) throw badRequest('invalid_datum', `${name}.loss_fn_inputs.${key} must be a TensorData object {data, dtype, shape}`);
    if (t.sparse_crow_indices != null || t.sparse_col_indices != null) throw badRequest('invalid_datum', `${name}.loss_fn_inputs.${key}: sparse tensors are not supported; send dense data`);
    if (t.dtype !== 'int64' && t.dtype !== 'float32') throw badRequest('invalid_datum', `${name}.loss_fn_inputs.${key}.dtype must be int64 or float32`);
    const data = numbers(`${name}.loss_fn_inputs.${key}.data`, t.data, key === 'target_tokens');
    if (t.shape != null && !(Array.isArray(t.shape) && t.shape.length === 1 && t.shape[0] === data.length)) throw badRequest('invalid_datum', `${name}.loss_fn_inputs.${key}.shape must be [${data.length}] (1-D, one value per input token)`);
    inputs[key as (typeof LOSS_INPUT_KEYS)[number]] = data;
  }
  if (!inputs.target_tokens) throw badRequest('invalid_datum', `${name}.loss_fn_inputs.target_tokens is required`);
  return { tokens, lossInputs: inputs as LossInputs };
}

function tensor(data: ArrayLike<number>, dtype: 'float32' | 'int64') {
  return { data: Array.from(data), dtype, shape: [data.length] };
}

export interface TrainerServer {
  url: string;
  server: Server;
  /** Counts of what arrived and left: protobuf and JSON forward/forward_backward bodies, zstd bodies, protobuf results. */
  stats: { protobufBodies: number; jsonFwdBodies: number; zstdBodies: number; protobufReplies: number };
  close(): Promise<void>;
}

export async function startTrainerServer(o: TrainerServerOptions): Promise<TrainerServer> {
  const maxBody = o.maxBodyBytes ?? 64 * 1024 * 1024;
  const maxModels = o.maxModels ?? 8;
  const longPollMs = o.longPollMs ?? 10_000;
  const maxDatumTokens = o.maxDatumTokens ?? 131_072;
  const compress = o.protobuf?.compress ?? true;
  const chunkDatums = o.chunk?.maxDatums ?? 1024;
  const chunkBytes = Math.min(o.chunk?.maxBytes ?? 5_000_000, maxBody);
  if (!(Number.isInteger(chunkDatums) && chunkDatums >= 1 && chunkBytes >= 1)) throw new Error(`trainer server: chunk limits must be positive (got ${chunkDatums} datums, ${chunkBytes} bytes)`);
  /** Per training model id, its LoRA config: checkpoints stay loadable after their model is unloaded. */
  const checkpointOwners = new Map<string, TinkerLoraConfig | null>();
  const stats = { protobufBodies: 0, jsonFwdBodies: 0, zstdBodies: 0, protobufReplies: 0 };
  const sessions = new Map<string, { lastHeartbeat: number; models: number }>();
  const models = new Map<string, ModelEntry>();
  const futures = new Map<string, FutureEntry>();
  const samplerWeights = new Map<string, { lora: TinkerLoraConfig | null; weights: Map<string, Float32Array> }>();
  const samplingSessions = new Map<string, string>();
  /**
   * One sampling model per LoRA config (built once from `makeBase`), holding the snapshot it was last given; a sample
   * runs to completion before the next request is handled, so swapping a snapshot in never meets a sample in flight.
   */
  const samplerModels = new Map<string, { model: GptOssModel; loaded: string | null }>();
  let baseSampler: GptOssModel | null = null;
  /** Per training model, the sampler snapshots made for sampling sessions (the newest few are kept). */
  const sessionSnapshots = new Map<string, string[]>();

  const newFuture = (run: () => Promise<unknown>, kind?: FutureEntry['kind']): string => {
    const id = randomUUID();
    const f: FutureEntry = { done: false, retrieved: 0, waiters: [], kind };
    futures.set(id, f);
    const settle = () => {
      f.done = true;
      for (const w of f.waiters.splice(0)) w();
    };
    run().then((result) => {
      f.result = result;
      settle();
    }, (err: unknown) => {
      const user = err instanceof HttpError || err instanceof RangeError || (err instanceof Error && /^(datum|loss_fn_config|sample|forward_backward|generation request|unknown loss)|AdamW|LoRA/.test(err.message));
      f.error = { error: err instanceof Error ? err.message : String(err), category: user ? 'user' : 'server' };
      settle();
    });
    return id;
  };

  /** Runs `fn` on the model's queue in seq_id order. */
  const ordered = (m: ModelEntry, seq: number | undefined, fn: () => Promise<unknown>, kind?: FutureEntry['kind']): string => {
    if (seq !== undefined) {
      if (seq < m.nextSeq || m.waiting.has(seq)) throw new HttpError(409, 'seq_id_reused', `seq_id ${seq} of model ${m.id} was already submitted (next expected: ${m.nextSeq})`);
      if (seq > m.nextSeq + MAX_SEQ_AHEAD) throw badRequest('seq_id_gap', `seq_id ${seq} is more than ${MAX_SEQ_AHEAD} ahead of the next expected ${m.nextSeq}`);
    }
    return newFuture(() => new Promise((resolve, reject) => {
      const start = () => {
        const next = m.chain.then(fn);
        m.chain = next.catch(() => undefined);
        next.then(resolve, reject);
      };
      if (seq === undefined) return start();
      m.waiting.set(seq, start);
      while (m.waiting.has(m.nextSeq)) {
        const go = m.waiting.get(m.nextSeq)!;
        m.waiting.delete(m.nextSeq);
        m.nextSeq++;
        go();
      }
    }), kind);
  };

  const model = (body: Record<string, unknown>): ModelEntry => {
    const id = field(body, 'model_id', isStr, 'a model id from create_model')!;
    const m = models.get(id);
    if (!m) throw notFound('unknown_model', `no model ${JSON.stringify(id.slice(0, 100))} on this server (create it with create_model)`);
    return m;
  };
  const seqOf = (body: Record<string, unknown>) => field(body, 'seq_id', isInt, 'a non-negative integer', true);

  const parseFwdBwd = (input: unknown): { data: Datum[]; lossFn: LossFn; config: LossConfig | undefined } => {
    if (!isObj(input)) throw badRequest('invalid_request', 'forward_backward_input must be an object {data, loss_fn, loss_fn_config}');
    if (!Array.isArray(input.data) || input.data.length === 0) throw badRequest('invalid_request', 'forward_backward_input.data must be a non-empty array of datums');
    const lossFn = input.loss_fn;
    if (typeof lossFn !== 'string' || !(LOSS_FNS as readonly string[]).includes(lossFn)) throw badRequest('unknown_loss_fn', `loss_fn must be one of ${LOSS_FNS.join(', ')} (got ${JSON.stringify(lossFn)})`);
    let config: LossConfig | undefined;
    if (input.loss_fn_config != null) {
      if (!isObj(input.loss_fn_config)) throw badRequest('invalid_request', 'loss_fn_config must be an object of numbers');
      config = input.loss_fn_config as LossConfig;
    }
    const data = input.data.map(parseDatum);
    data.forEach((d, k) => {
      if (d.tokens.length > maxDatumTokens) throw new HttpError(413, 'datum_too_large', `data[${k}] has ${d.tokens.length} input tokens, over this server's limit of ${maxDatumTokens} per datum`);
    });
    return { data, lossFn: lossFn as LossFn, config };
  };

  const fwdBwdOutput = (r: { logprobs: Float32Array[]; metrics: Record<string, number> }) => ({
    loss_fn_output_type: 'ArrayRecord',
    loss_fn_outputs: r.logprobs.map((lp) => ({ logprobs: tensor(lp, 'float32') })),
    metrics: r.metrics,
  });

  const adamOf = (v: unknown): AdamParams => {
    if (!isObj(v)) throw badRequest('invalid_request', 'adam_params must be an object');
    const num = (k: string, d: number) => {
      const x = v[k];
      if (x === undefined || x === null) return d;
      if (!isNum(x)) throw badRequest('invalid_request', `adam_params.${k} must be a finite number`);
      return x;
    };
    return {
      learningRate: num('learning_rate', DEFAULT_ADAM.learningRate), beta1: num('beta1', DEFAULT_ADAM.beta1), beta2: num('beta2', DEFAULT_ADAM.beta2),
      eps: num('eps', DEFAULT_ADAM.eps), weightDecay: num('weight_decay', DEFAULT_ADAM.weightDecay), gradClipNorm: num('grad_clip_norm', DEFAULT_ADAM.gradClipNorm),
    };
  };

  const checkpointPath = (modelId: string, name: string) => join(o.checkpointDir, modelId.replace(/[^A-Za-z0-9_.-]/g, '_'), name);
  const addModel = (sid: string, seq: number, lora: TinkerLoraConfig | null): ModelEntry => {
    const id = `${sid}:train:${seq}`;
    if (models.has(id)) throw new HttpError(409, 'model_exists', `model ${id} exists already (model_seq_id ${seq} was used in this session)`);
    if (models.size >= maxModels) throw new HttpError(429, 'too_many_models', `this server holds at most ${maxModels} models; unload one first`);
    const m: ModelEntry = { id, backend: new GptOssBackend(new GptOssPolicy(createTrainingModel(o.makeBase, lora), { optimizer: { ...toAdamW(DEFAULT_ADAM) }, reference: null })), lora, nextSeq: 1, waiting: new Map(), chain: Promise.resolve() };
    models.set(id, m);
    checkpointOwners.set(id, lora);
    return m;
  };
  const nameOf = (body: Record<string, unknown>, fallback: string) => {
    const p = field(body, 'path', isStr, 'a checkpoint name', true) ?? fallback;
    if (!/^[A-Za-z0-9_.-]{1,200}$/.test(p) || p.startsWith('.')) throw badRequest('invalid_path', `checkpoint name ${JSON.stringify(p.slice(0, 100))} must be 1-200 of [A-Za-z0-9_.-], not starting with a dot`);
    return p;
  };

  const samplerFor = (path: string): GptOssModel => {
    const snap = samplerWeights.get(path);
    if (!snap) throw notFound('unknown_model_path', `no sampler weights at ${JSON.stringify(path.slice(0, 200))} (save them with save_weights_for_sampler; a sampling session's weights are kept for its model's ${SESSION_SNAPSHOTS} newest sessions)`);
    const key = JSON.stringify(snap.lora);
    let s = samplerModels.get(key);
    if (!s) {
      s = { model: createTrainingModel(o.makeBase, snap.lora), loaded: null };
      samplerModels.set(key, s);
    }
    if (s.loaded !== path) {
      for (const [name, p] of [...s.model.parameters(), ...s.model.extraParameters()]) {
        const w = snap.weights.get(name);
        if (w) p.data().set(w);
      }
      s.loaded = path;
    }
    return s.model;
  };

  const sampleWith = async (modelRef: GptOssModel, body: Record<string, unknown>) => {
    const prompt = modelInputTokens('prompt', body.prompt);
    const n = field(body, 'num_samples', isInt, 'a positive integer', true) ?? 1;
    if (n < 1 || n > 256) throw badRequest('invalid_request', 'num_samples must be in [1, 256]');
    const sp = body.sampling_params;
    if (!isObj(sp)) throw badRequest('invalid_request', 'sampling_params must be an object');
    const maxTokens = field(sp, 'max_tokens', isInt, 'a positive integer (this server needs max_tokens)')!;
    if (maxTokens < 1 || maxTokens > 4096) throw badRequest('invalid_request', 'sampling_params.max_tokens must be in [1, 4096]');
    let stop: number[] | undefined;
    if (sp.stop != null) {
      if (!Array.isArray(sp.stop) || sp.stop.some((x) => typeof x !== 'number')) throw badRequest('invalid_request', 'sampling_params.stop must be a list of token ids (this server has no tokenizer for string stops)');
      stop = numbers('sampling_params.stop', sp.stop, true);
    }
    const topK = field(sp, 'top_k', (v): v is number => typeof v === 'number' && Number.isInteger(v), 'an integer', true);
    for (const k of ['topk_prompt_logprobs', 'topk_sample_logprobs', 'prompt_alt_tokens_k'] as const) {
      if (body[k] != null && body[k] !== 0) throw badRequest('unsupported', `${k} is not supported by this server (top-k log-probs and alternative draws are not computed)`);
    }
    if (body.target_prompt_logprobs != null) throw badRequest('unsupported', 'target_prompt_logprobs is not supported by this server');
    const wantPrompt = field(body, 'prompt_logprobs', isBool, 'a boolean', true) ?? false;
    const lastN = field(body, 'prompt_logprobs_last_n', isInt, 'a positive integer', true);
    if (lastN !== undefined && !(wantPrompt && lastN >= 1 && lastN <= prompt.length - 1)) throw badRequest('invalid_request', `prompt_logprobs_last_n needs prompt_logprobs and must be in [1, ${prompt.length - 1}]`);
    const seqs = await sampleModel(modelRef, prompt, n, {
      maxTokens, temperature: field(sp, 'temperature', isNum, 'a number', true) ?? 1, topK: topK !== undefined && topK > 0 ? topK : undefined,
      topP: field(sp, 'top_p', isNum, 'a number', true), seed: field(sp, 'seed', isInt, 'a non-negative integer', true), stopTokens: stop,
    });
    let promptLogprobs: (number | null)[] | null = null;
    if (wantPrompt) {
      // log p(prompt[i] | prompt[<i]) at temperature 1; none for the first token (and before the last N when asked).
      promptLogprobs = [null];
      if (prompt.length > 1) {
        const L = prompt.length - 1;
        const r = modelRef.forward({ tokens: Int32Array.from(prompt.slice(0, L)), docIds: new Int32Array(L), targets: Int32Array.from(prompt.slice(1)) }, { grad: false });
        for (let i = 0; i < L; i++) promptLogprobs.push(lastN !== undefined && i < L - lastN ? null : r.logprobs[i]);
      }
    }
    return { type: 'sample', sequences: seqs.map((s) => ({ tokens: s.tokens, logprobs: s.logprobs, stop_reason: s.stopReason })), prompt_logprobs: promptLogprobs };
  };

  type Handler = (body: Record<string, unknown>, req: IncomingMessage) => Promise<unknown> | unknown;
  const routes: Record<string, Handler> = {
    // What this server honours. SDK ≥ 0.25 always sends protobuf forward_backward bodies (and forward as
    // forward_backward with forward_only); 0.24.x sends them only when proto_write_fwdbwd is on. Not offered: JWT
    // exchange, the batched retrieve_futures poller, server-side custom losses, join_sampling_session.
    '/api/v1/client/config': (b) => {
      const proto = sdkSpeaksProtobuf(b.sdk_version) || o.protobuf?.oldSdks === true;
      return {
        pjwt_auth_enabled: false, proto_write_fwdbwd: proto, proto_compress_fwdbwd: proto && compress, fwd_via_fwdbwd: proto,
        parallel_fwdbwd_chunks: true, fwdbwd_max_chunk_len: chunkDatums, fwdbwd_max_chunk_bytes_count: chunkBytes,
        create_model_via_load_weights: true, use_pyqwest_transport: false, sample_use_retrieve_futures: false, custom_loss_server_side: false, sample_join_sampling_session: false,
      };
    },
    '/api/v1/healthz': () => ({ status: 'ok' }),
    '/api/v1/get_server_capabilities': () => ({ supported_models: [{ model_name: o.baseModel }] }),
    '/api/v1/telemetry': () => ({ status: 'accepted' }),
    '/api/v1/create_session': () => {
      const id = randomUUID();
      sessions.set(id, { lastHeartbeat: Date.now(), models: 0 });
      return { type: 'create_session', session_id: id };
    },
    '/api/v1/session_heartbeat': (b) => {
      const id = field(b, 'session_id', isStr, 'a session id')!;
      const s = sessions.get(id);
      if (!s) throw notFound('unknown_session', `no session ${JSON.stringify(id.slice(0, 100))}`);
      s.lastHeartbeat = Date.now();
      return { type: 'session_heartbeat' };
    },
    '/api/v1/create_model': (b) => {
      const sid = field(b, 'session_id', isStr, 'a session id')!;
      if (!sessions.has(sid)) throw notFound('unknown_session', `no session ${JSON.stringify(sid.slice(0, 100))}`);
      const seq = field(b, 'model_seq_id', isInt, 'a non-negative integer')!;
      const base = field(b, 'base_model', isStr, 'a model name')!;
      if (base !== o.baseModel) throw notFound('unknown_base_model', `this server trains ${JSON.stringify(o.baseModel)}, not ${JSON.stringify(base.slice(0, 100))}`);
      let lora: TinkerLoraConfig | null = null;
      if (b.lora_config != null) {
        if (!isObj(b.lora_config)) throw badRequest('invalid_lora_config', 'lora_config must be an object');
        const rank = field(b.lora_config, 'rank', isInt, 'a positive integer')!;
        if (rank < 1 || rank > 1024) throw badRequest('invalid_lora_config', 'lora_config.rank must be in [1, 1024]');
        lora = { rank, seed: field(b.lora_config, 'seed', isInt, 'a non-negative integer', true), train_attn: field(b.lora_config, 'train_attn', isBool, 'a boolean', true), train_mlp: field(b.lora_config, 'train_mlp', isBool, 'a boolean', true), train_unembed: field(b.lora_config, 'train_unembed', isBool, 'a boolean', true) };
      }
      const m = addModel(sid, seq, lora);
      return { request_id: newFuture(async () => ({ type: 'create_model', model_id: m.id })), model_id: m.id };
    },
    '/api/v1/get_info': (b) => {
      const m = model(b);
      return { type: 'get_info', model_id: m.id, model_data: { arch: 'gpt_oss', model_name: o.baseModel }, is_lora: m.lora !== null, lora_rank: m.lora?.rank ?? null, model_name: o.baseModel };
    },
    '/api/v1/unload_model': (b) => {
      const m = model(b);
      return { request_id: ordered(m, seqOf(b), async () => {
        models.delete(m.id);
        return { type: 'unload_model', model_id: m.id };
      }), model_id: m.id };
    },
    '/api/v1/forward_backward': (b) => {
      const m = model(b);
      const { data, lossFn, config } = parseFwdBwd(b.forward_backward_input);
      const forwardOnly = field(b, 'forward_only', isBool, 'a boolean', true) ?? false;
      return { request_id: ordered(m, seqOf(b), async () => fwdBwdOutput(await (forwardOnly ? m.backend.forward(data, lossFn, config) : m.backend.forwardBackward(data, lossFn, config))), 'fwdbwd'), model_id: m.id };
    },
    '/api/v1/forward': (b) => {
      const m = model(b);
      const { data, lossFn, config } = parseFwdBwd(b.forward_input);
      return { request_id: ordered(m, seqOf(b), async () => fwdBwdOutput(await m.backend.forward(data, lossFn, config)), 'fwdbwd'), model_id: m.id };
    },
    '/api/v1/optim_step': (b) => {
      const m = model(b);
      const adam = adamOf(b.adam_params);
      return { request_id: ordered(m, seqOf(b), async () => ({ type: 'optim_step', metrics: (await m.backend.optimStep(adam)).metrics })), model_id: m.id };
    },
    '/api/v1/save_weights': (b) => {
      const m = model(b);
      const name = nameOf(b, `step-${Date.now()}`);
      return { request_id: ordered(m, seqOf(b), async () => {
        await m.backend.saveState(checkpointPath(m.id, name));
        return { type: 'save_weights', path: `tinker://${m.id}/weights/${name}` };
      }), model_id: m.id };
    },
    '/api/v1/load_weights': (b) => {
      const path = field(b, 'path', isStr, 'a tinker:// path from save_weights')!;
      const optimizer = field(b, 'optimizer', isBool, 'a boolean')!;
      const match = /^tinker:\/\/(.+)\/weights\/([A-Za-z0-9_.-]{1,200})$/.exec(path);
      const owner = match ? checkpointOwners.get(match[1]) : undefined;
      if (!match || owner === undefined || match[2].startsWith('.')) throw notFound('unknown_checkpoint', `no checkpoint ${JSON.stringify(path.slice(0, 200))} on this server`);
      const dir = checkpointPath(match[1], match[2]);
      // SDK ≥ 0.25's create_training_client_from_state: no model_id, a new model (the checkpoint's LoRA config) from the checkpoint.
      if (b.model_id == null) {
        const sid = field(b, 'session_id', isStr, 'a session id (or give model_id)')!;
        if (!sessions.has(sid)) throw notFound('unknown_session', `no session ${JSON.stringify(sid.slice(0, 100))}`);
        const base = field(b, 'base_model', isStr, 'a model name', true);
        if (base !== undefined && base !== o.baseModel) throw notFound('unknown_base_model', `this server trains ${JSON.stringify(o.baseModel)}, not ${JSON.stringify(base.slice(0, 100))}`);
        const m = addModel(sid, field(b, 'model_seq_id', isInt, 'a non-negative integer')!, owner);
        return { request_id: ordered(m, undefined, async () => {
          await m.backend.loadState(dir, { optimizer });
          return { type: 'load_weights', path };
        }), model_id: m.id };
      }
      const m = model(b);
      return { request_id: ordered(m, seqOf(b), async () => {
        await m.backend.loadState(dir, { optimizer });
        return { type: 'load_weights', path };
      }), model_id: m.id };
    },
    '/api/v1/save_weights_for_sampler': (b) => {
      const m = model(b);
      const sampling = field(b, 'sampling_session_seq_id', isInt, 'a non-negative integer', true);
      const name = sampling !== undefined ? `sampler-${randomUUID()}` : nameOf(b, `sampler-${Date.now()}`);
      return { request_id: ordered(m, seqOf(b), async () => {
        const path = `tinker://${m.id}/sampler_weights/${name}`;
        // Base weights and LoRA adapters.
        const tensors = [...m.backend.model.parameters(), ...m.backend.model.extraParameters()];
        samplerWeights.set(path, { lora: m.lora, weights: new Map(tensors.map(([k, t]) => [k, Float32Array.from(t.data())])) });
        for (const s of samplerModels.values()) if (s.loaded === path) s.loaded = null;
        if (sampling === undefined) return { type: 'save_weights_for_sampler', path };
        // A trainer makes one of these per optimizer step: only the newest few are kept, so memory stays bounded.
        const kept = sessionSnapshots.get(m.id) ?? [];
        kept.push(path);
        while (kept.length > SESSION_SNAPSHOTS) {
          const old = kept.shift()!;
          samplerWeights.delete(old);
          for (const [sid, p] of samplingSessions) if (p === old) samplingSessions.delete(sid);
          for (const s of samplerModels.values()) if (s.loaded === old) s.loaded = null;
        }
        sessionSnapshots.set(m.id, kept);
        const sid = randomUUID();
        samplingSessions.set(sid, path);
        return { type: 'save_weights_for_sampler', path, sampling_session_id: sid };
      }), model_id: m.id };
    },
    '/api/v1/create_sampling_session': (b) => {
      field(b, 'session_id', isStr, 'a session id');
      const path = field(b, 'model_path', isStr, 'a tinker:// sampler path', true);
      const base = field(b, 'base_model', isStr, 'a model name', true);
      if (path === undefined && base !== o.baseModel) throw badRequest('invalid_request', `give model_path or base_model ${JSON.stringify(o.baseModel)}`);
      if (path !== undefined) samplerFor(path);
      const sid = randomUUID();
      samplingSessions.set(sid, path ?? `base:${o.baseModel}`);
      return { type: 'create_sampling_session', sampling_session_id: sid };
    },
    '/api/v1/asample': (b) => {
      const sid = field(b, 'sampling_session_id', isStr, 'a sampling session id', true);
      let path = field(b, 'model_path', isStr, 'a tinker:// sampler path', true);
      if (sid !== undefined) {
        path = samplingSessions.get(sid);
        if (!path) throw notFound('unknown_sampling_session', `no sampling session ${JSON.stringify(sid.slice(0, 100))}`);
      }
      const ref = path === undefined || path.startsWith('base:') ? null : path;
      if (ref === null && path === undefined && field(b, 'base_model', isStr, 'a model name', true) !== o.baseModel) throw badRequest('invalid_request', `give sampling_session_id, model_path or base_model ${JSON.stringify(o.baseModel)}`);
      const sampler = ref ? samplerFor(ref) : (baseSampler ??= o.makeBase());
      const n = field(b, 'num_samples', isInt, 'a positive integer', true) ?? 1;
      if (n < 1 || n > 256) throw badRequest('invalid_request', 'num_samples must be in [1, 256]');
      // SDK ≥ 0.25 stamps these ids (fixed at submission, one per sample) onto the sequences it returns.
      return { request_id: newFuture(() => sampleWith(sampler, b), 'sample'), sample_sequence_ids: Array.from({ length: n }, () => randomUUID()) };
    },
    '/api/v1/retrieve_future': async (b, req) => {
      const id = field(b, 'request_id', isStr, 'a request id')!;
      const f = futures.get(id);
      if (!f) throw notFound('unknown_request', `no request ${JSON.stringify(id.slice(0, 100))} on this server`);
      f.retrieved++;
      if (o.firstRetrieve === 408 && f.retrieved === 1) throw new HttpError(408, 'request_timeout', 'not done yet; retry');
      if (o.firstRetrieve === 'try_again' && f.retrieved === 1) return { type: 'try_again', request_id: id, queue_state: 'active' };
      if (!f.done && longPollMs > 0) {
        await new Promise<void>((resolve) => {
          const t = setTimeout(done, longPollMs);
          function done() {
            clearTimeout(t);
            const k = f!.waiters.indexOf(done);
            if (k >= 0) f!.waiters.splice(k, 1);
            resolve();
          }
          f.waiters.push(done);
        });
      }
      if (!f.done) return { type: 'try_again', request_id: id, queue_state: 'active' };
      if (f.error) return f.error;
      if (f.kind && /application\/x-protobuf/i.test(req.headers.accept ?? '')) {
        return new ProtoReply(f.kind === 'fwdbwd' ? encodeForwardBackwardOutput(f.result as ReturnType<typeof fwdBwdOutput>) : encodeSampleResponse(f.result as Awaited<ReturnType<typeof sampleWith>>));
      }
      return f.result;
    },
  };

  const samplerInfo = (sid: string) => {
    const path = samplingSessions.get(sid);
    if (!path) throw notFound('unknown_sampling_session', `no sampling session ${JSON.stringify(sid.slice(0, 100))}`);
    return { sampler_id: sid, base_model: o.baseModel, model_path: path.startsWith('base:') ? null : path };
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    try {
      const url = new URL(req.url ?? '/', 'http://localhost');
      // GET /api/v1/samplers/{sampling_session_id}: what SDK ≥ 0.25 asks about a sampler it did not create itself.
      const sampler = /^\/api\/v1\/samplers\/([^/]{1,200})$/.exec(url.pathname);
      const route = sampler ? () => samplerInfo(decodeURIComponent(sampler[1])) : routes[url.pathname];
      if (!route) throw notFound('not_found', `no endpoint ${req.method} ${url.pathname.slice(0, 200)} (this server speaks the Tinker API under /api/v1)`);
      if (url.pathname !== '/api/v1/healthz' && o.apiKey !== undefined) {
        const key = req.headers['x-api-key'];
        if (typeof key !== 'string' || !tokenMatches(key, o.apiKey)) throw new HttpError(401, 'unauthorized', 'missing or wrong X-API-Key header');
      }
      const getOk = GET_ROUTES.has(url.pathname) || sampler !== null;
      if (req.method !== 'POST' && !(req.method === 'GET' && getOk)) throw new HttpError(405, 'method_not_allowed', `${url.pathname} takes ${getOk ? 'GET or POST' : 'POST'}`);
      const b = req.method === 'POST' ? await readBody(req, url.pathname) : {};
      const reply = await route(b, req);
      if (reply instanceof ProtoReply) {
        if (res.writableEnded || res.destroyed) return;
        stats.protobufReplies++;
        res.writeHead(200, { 'content-type': PROTO_CONTENT_TYPE, 'content-length': reply.bytes.byteLength });
        res.end(reply.bytes);
        return;
      }
      sendJson(res, 200, reply);
    } catch (err) {
      if (err instanceof WireError) return sendError(res, new HttpError(err.status, err.code, err.message));
      if (err instanceof HttpError) {
        if (err.status === 499) return;
        return sendError(res, err);
      }
      sendError(res, new HttpError(500, 'internal_error', err instanceof Error ? err.message : String(err)));
    }
  };

  /**
   * A POST body as the route's object: JSON, or (forward_backward and forward only) a protobuf
   * `ForwardBackwardRequest`; `Content-Encoding: zstd` is inflated first, within `maxBody` decompressed bytes.
   */
  const readBody = async (req: IncomingMessage, path: string): Promise<Record<string, unknown>> => {
    let raw: Uint8Array = await readRawBody(req, maxBody);
    const encoding = String(req.headers['content-encoding'] ?? 'identity').trim().toLowerCase();
    if (encoding === 'zstd') {
      raw = inflateZstd(raw, maxBody);
      stats.zstdBodies++;
    }
    else if (encoding !== 'identity' && encoding !== '') throw new HttpError(415, 'unsupported_encoding', `Content-Encoding ${JSON.stringify(encoding.slice(0, 50))} is not supported (zstd or none)`);
    const ctype = String(req.headers['content-type'] ?? '').toLowerCase();
    if (ctype.includes('protobuf')) {
      if (path !== '/api/v1/forward_backward' && path !== '/api/v1/forward') throw new HttpError(415, 'unsupported_media_type', `${path} takes JSON; protobuf bodies are taken by forward_backward and forward`);
      const r = decodeForwardBackwardRequest(raw);
      stats.protobufBodies++;
      return path === '/api/v1/forward' ? { model_id: r.model_id, seq_id: r.seq_id, forward_input: r.forward_backward_input } : { ...r };
    }
    const text = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('utf8');
    if (text.trim() === '') return {};
    if (path === '/api/v1/forward_backward' || path === '/api/v1/forward') stats.jsonFwdBodies++;
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch (e) {
      throw new HttpError(400, 'malformed_json', `The request body is not valid JSON: ${(e as Error).message}`);
    }
    if (jsonDepthExceeds(body, 16)) throw badRequest('too_deep', 'the JSON body nests deeper than 16 levels');
    if (!isObj(body)) throw badRequest('invalid_request', 'the body must be a JSON object');
    return body;
  };

  const server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 0, o.host ?? '127.0.0.1', () => resolve());
  });
  const addr = server.address() as AddressInfo;
  const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  return {
    url: `http://${host}:${addr.port}`,
    server,
    stats,
    close: () => new Promise<void>((resolve) => {
      // Long-polling retrieves end now (their connections are closed below), so no timer outlives the server.
      for (const f of futures.values()) for (const w of f.waiters.splice(0)) w();
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

/** Tinker's Adam defaults as our AdamW's options (each optim_step sets them again from its request). */
export function toAdamW(a: AdamParams) {
  return { lr: a.learningRate, beta1: a.beta1, beta2: a.beta2, eps: a.eps, weightDecay: a.weightDecay };
}
