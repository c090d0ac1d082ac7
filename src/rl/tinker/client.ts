/**
 * A client of the Tinker training API (Thinking Machines, https://tinker-docs.thinkingmachines.ai/), over HTTP.
 *
 * PROTOCOL VERSION: by default the protobuf protocol of the official Python SDK `tinker` ≥ 0.25 (its behaviour
 * followed from 0.38.0, https://pypi.org/project/tinker/0.38.0/): it announces itself at `/api/v1/client/config`
 * as `sdk_version` 0.38.0 and sends forward/forward_backward as `tinker_public.ForwardBackwardRequest` bytes
 * (`Content-Type: application/x-protobuf`; a forward is a forward_backward with `forward_only`), zstd-compressed
 * (`Content-Encoding: zstd`) when the server sets `proto_compress_fwdbwd`, in chunks of at most the server's
 * `fwdbwd_max_chunk_len` datums and `fwdbwd_max_chunk_bytes_count` bytes (estimated as the SDK does: 4 per token,
 * the dtype's size per loss-input value); results are asked for as protobuf (`Accept: application/x-protobuf,
 * application/json`) and read in either form. It falls back to the JSON protocol of SDK 0.24.x when the server says
 * it does not take protobuf (`proto_write_fwdbwd: false`) or has no `/api/v1/client/config` (SkyRL tx 0.3), or when
 * `wire: 'json'` asks for it (then it announces itself as 0.24.1).
 *
 * What it does, in the order the SDK does it:
 * - **Base URL and key**: `baseUrl` (default `TINKER_BASE_URL`, else the hosted service); the API key goes in the
 *   `X-API-Key` header (default `TINKER_API_KEY`). When the server's config sets `pjwt_auth_enabled`, the key is
 *   exchanged for a short-lived JWT at `/api/v1/auth/token` (sent in the same header, renewed a minute before its
 *   `exp`).
 * - **Session**: `/api/v1/create_session`, then `/api/v1/session_heartbeat` every 10 s until `close()`; a heartbeat
 *   that fails is logged, never thrown (after two minutes without one the log says so).
 * - **Models**: `/api/v1/create_model` with `model_seq_id` counting from 0 in the session and an optional
 *   `lora_config {rank, seed, train_unembed, train_mlp, train_attn}`.
 * - **Ordered requests**: each training call of a model (forward, forward_backward, optim_step, save/load weights,
 *   save_weights_for_sampler) takes the model's next `seq_id`, counting from 1, at the moment it is called; the server
 *   runs a model's calls in `seq_id` order. Sampling requests carry their sampling session's own counter, from 0.
 * - **Futures**: every call answers `{request_id}`; `/api/v1/retrieve_future` is polled until it gives the result.
 *   `{"type": "try_again"}` and HTTP 408 mean "not done, ask again"; HTTP 410 means the server lost the promise: a
 *   sampling request is submitted again (it has no side effects), a training call fails with a `TinkerError` whose
 *   `code` is `expired` (it may or may not have run, so resubmitting could apply it twice); `{error, category}` fails
 *   the call with that category.
 * - **Retries**: submissions and retrievals that meet a connection error, 429 or 5xx are retried with exponential
 *   backoff (1 s doubling up to 30 s, for at most 5 minutes, as the SDK does; all configurable). A 409 is not
 *   retried (on a seq_id it means the server already has that call).
 * - **Chunking**: a forward/forward_backward over many datums is sent as consecutive requests of at most 1024
 *   datums and about 5 MB each (estimated as 10 bytes per token and per loss-input value, the SDK's estimate); the
 *   chunks take consecutive seq_ids, their outputs are concatenated in order and their metrics reduced by the
 *   suffix of the name (`:sum` summed, `:mean` weighted by datums, `:min`, `:max`; others from the first chunk).
 *   The server accumulates gradients across them, so a chunked call is the same as one call.
 *
 * Errors: every failure is a `TinkerError` naming the endpoint, the HTTP status or the server's error, and what to do.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { decodeForwardBackwardOutput, decodeSampleResponse, deflateZstd, encodeForwardBackwardRequest, PROTO_CONTENT_TYPE } from './proto/wire.ts';

/** The SDK release whose JSON protocol this client speaks with `wire: 'json'` (and as a fallback). */
export const TINKER_SDK_PROTOCOL = '0.24.1';
/** The SDK release whose protobuf protocol this client speaks by default (its schema: proto/PROVENANCE.md). */
export const TINKER_SDK_PROTOBUF = '0.38.0';
/** The hosted service, the SDK's default base URL. */
export const DEFAULT_TINKER_BASE_URL = 'https://tinker.thinkingmachines.dev/services/tinker-prod';
/** The SDK's chunk limits for forward/forward_backward. */
export const MAX_CHUNK_DATUMS = 1024;
export const MAX_CHUNK_BYTES = 5_000_000;

export class TinkerError extends Error {
  constructor(
    message: string,
    /** HTTP status, when the failure was one. */
    readonly status?: number,
    /** The server's error code, `expired` (HTTP 410 on a training call) or `unreachable`. */
    readonly code?: string,
    /** For failed futures: `user` (bad input), `server`, or `unknown`. */
    readonly category?: string,
  ) {
    super(message);
    this.name = 'TinkerError';
  }
}

export interface RetryOptions {
  /** First backoff in ms (doubles per retry). Default 1000. */
  baseMs?: number;
  /** Longest backoff in ms. Default 30 000. */
  maxMs?: number;
  /** Give up after retrying this long (ms). Default 300 000. */
  totalMs?: number;
}

export interface TinkerClientOptions {
  /** Default: env `TINKER_BASE_URL`, else the hosted service. */
  baseUrl?: string;
  /** Default: env `TINKER_API_KEY`. */
  apiKey?: string;
  /** Heartbeat period in ms (default 10 000; 0 = none). */
  heartbeatMs?: number;
  retry?: RetryOptions;
  /** Polling a future that is not done: first wait and longest wait in ms (default 1 and 100). */
  poll?: { minMs?: number; maxMs?: number };
  /** A future not done after this long (ms) fails; default: wait as long as the server says try again. */
  futureTimeoutMs?: number;
  /** One HTTP request's timeout in ms (default 120 000; servers long-poll retrieve_future for up to ~45 s). */
  requestTimeoutMs?: number;
  /** Chunk limits for forward/forward_backward (default: the server's announced limits, else the SDK's, 1024 datums and 5 MB). */
  chunk?: { maxDatums?: number; maxBytes?: number };
  /** Wire format of forward/forward_backward: `protobuf` (default; JSON where the server does not take it) or `json`. */
  wire?: 'protobuf' | 'json';
  /** zstd-compress protobuf bodies: default as the server's `proto_compress_fwdbwd` says. */
  compress?: boolean;
  /** Session tags (the SDK reads them from `TINKER_TAGS`). */
  tags?: string[];
  /** Where warnings go (failed heartbeats, protocol notes). Default: stderr. */
  log?: (line: string) => void;
}

/** Tinker's LoRA config as `create_model` takes it. */
export interface TinkerLora {
  rank: number;
  seed?: number;
  train_unembed?: boolean;
  train_mlp?: boolean;
  train_attn?: boolean;
}

/** Tinker's `TensorData`, the JSON form of a loss input or output. */
export interface TensorData {
  data: number[];
  dtype: 'int64' | 'float32';
  shape: number[];
}

/** A datum in the JSON form of SDK ≤ 0.24. */
export interface WireDatum {
  model_input: { chunks: { type: 'encoded_text'; tokens: number[] }[] };
  loss_fn_inputs: Record<string, TensorData>;
}

export interface ForwardBackwardOutput {
  loss_fn_output_type: string;
  loss_fn_outputs: Record<string, TensorData>[];
  metrics: Record<string, number>;
}

export interface WireAdamParams {
  learning_rate: number;
  beta1: number;
  beta2: number;
  eps: number;
  weight_decay: number;
  grad_clip_norm: number;
}

export interface WireSamplingParams {
  max_tokens: number;
  seed?: number;
  stop?: number[];
  temperature?: number;
  top_k?: number;
  top_p?: number;
}

export interface WireSampledSequence {
  tokens: number[];
  logprobs: number[] | null;
  stop_reason: string;
}

const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function envString(name: string): string | undefined {
  const v = process.env[name];
  return v === undefined || v === '' ? undefined : v;
}

/** Seconds until a JWT's `exp` claim (0 when it has none or cannot be read). */
function jwtSecondsLeft(jwt: string): number {
  try {
    const payload = jwt.split('.')[1];
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { exp?: unknown };
    return typeof claims.exp === 'number' ? claims.exp - Date.now() / 1000 : 0;
  } catch {
    return 0;
  }
}

/** The reply's error message: our servers' `{error: {code, message}}`, FastAPI's `{detail}`, or the text. */
function errorText(body: string): { code?: string; message: string } {
  try {
    const j = JSON.parse(body) as unknown;
    if (isObj(j) && isObj(j.error) && typeof j.error.message === 'string') return { code: typeof j.error.code === 'string' ? j.error.code : undefined, message: j.error.message };
    if (isObj(j) && typeof j.error === 'string') return { message: j.error };
    if (isObj(j) && j.detail !== undefined) return { message: typeof j.detail === 'string' ? j.detail : JSON.stringify(j.detail) };
  } catch {
    // not JSON
  }
  return { message: body.slice(0, 500) || '(empty body)' };
}

/** Estimated request bytes of a JSON datum, as SDK 0.24 estimates them (10 per token and per loss-input value). */
export function estimateDatumBytes(d: WireDatum): number {
  let n = 0;
  for (const c of d.model_input.chunks) n += c.tokens.length * 10;
  for (const t of Object.values(d.loss_fn_inputs)) n += t.data.length * 10;
  return n;
}

/** Estimated request bytes of a protobuf datum, as SDK 0.38 estimates them (4 per int32 token, 4 or 8 per loss-input value by dtype). */
export function estimateDatumBytesProto(d: WireDatum): number {
  let n = 0;
  for (const c of d.model_input.chunks) n += c.tokens.length * 4;
  for (const t of Object.values(d.loss_fn_inputs)) n += t.data.length * (t.dtype === 'int64' ? 8 : 4);
  return n;
}

/** Consecutive chunks of at most `maxDatums` datums and `maxBytes` estimated bytes (a bigger datum goes alone). */
export function chunkDatums<T extends WireDatum>(data: readonly T[], maxDatums = MAX_CHUNK_DATUMS, maxBytes = MAX_CHUNK_BYTES, estimate: (d: WireDatum) => number = estimateDatumBytes): T[][] {
  const out: T[][] = [];
  let cur: T[] = [];
  let bytes = 0;
  for (const d of data) {
    const b = estimate(d);
    if (cur.length > 0 && (cur.length >= maxDatums || bytes + b > maxBytes)) {
      out.push(cur);
      cur = [];
      bytes = 0;
    }
    cur.push(d);
    bytes += b;
  }
  if (cur.length) out.push(cur);
  return out;
}

/** Chunk outputs as one: outputs concatenated, metrics reduced by their name's suffix. */
export function combineForwardBackward(parts: readonly ForwardBackwardOutput[]): ForwardBackwardOutput {
  if (parts.length === 1) return parts[0];
  const weights = parts.map((p) => p.loss_fn_outputs.length);
  const total = weights.reduce((a, b) => a + b, 0);
  const metrics: Record<string, number> = {};
  for (const key of Object.keys(parts[0].metrics)) {
    if (!parts.every((p) => typeof p.metrics[key] === 'number')) continue;
    const values = parts.map((p) => p.metrics[key]);
    const kind = key.slice(key.lastIndexOf(':') + 1);
    if (kind === 'sum') metrics[key] = values.reduce((a, b) => a + b, 0);
    else if (kind === 'mean') metrics[key] = total > 0 ? values.reduce((a, v, i) => a + v * weights[i], 0) / total : values[0];
    else if (kind === 'min') metrics[key] = Math.min(...values);
    else if (kind === 'max') metrics[key] = Math.max(...values);
    else metrics[key] = values[0];
  }
  return { loss_fn_output_type: parts[0].loss_fn_output_type, loss_fn_outputs: parts.flatMap((p) => p.loss_fn_outputs), metrics };
}

/** A protobuf reply body. */
class ProtoBody {
  constructor(readonly bytes: Uint8Array) {}
}

interface Submitted {
  request_id: string;
  model_id?: string;
}

/**
 * One Tinker session: `TinkerClient.connect` runs the handshake and creates the session; `createModel` returns a
 * `TinkerTrainingClient`; `close()` stops the heartbeats.
 */
export class TinkerClient {
  readonly baseUrl: string;
  private readonly apiKey: string | undefined;
  private jwt: string | undefined;
  private jwtEnabled = false;
  private sessionIdValue: string | undefined;
  private heartbeat: ReturnType<typeof setInterval> | undefined;
  /** The heartbeat in flight (one at a time), which `close()` waits for. */
  private beating: Promise<void> | undefined;
  private lastHeartbeat = Date.now();
  private warnedHeartbeat = false;
  private modelSeq = 0;
  private samplingSeq = 0;
  private idempotency = 0;
  private closed = false;
  readonly log: (line: string) => void;
  /** The server's `/api/v1/client/config` answer. */
  serverConfig: Record<string, unknown> = {};
  /** Whether forward/forward_backward go as protobuf (else JSON), and zstd-compressed. */
  protobuf = false;
  compress = false;
  /** The chunk limits in force (options, else the server's, else the SDK's defaults). */
  chunkLimits = { maxDatums: MAX_CHUNK_DATUMS, maxBytes: MAX_CHUNK_BYTES };
  /** Bytes of forward/forward_backward bodies sent (after compression) and their count, for benchmarks. */
  readonly sent = { bodies: 0, bytes: 0 };

  private constructor(private readonly o: TinkerClientOptions) {
    const url = o.baseUrl ?? envString('TINKER_BASE_URL') ?? DEFAULT_TINKER_BASE_URL;
    let parsed: URL;
    try {
      parsed = new URL(url);
    } catch {
      throw new TinkerError(`Tinker base URL ${JSON.stringify(url)} is not a URL (give http(s)://host[:port][/prefix])`, undefined, 'bad_base_url');
    }
    if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') throw new TinkerError(`Tinker base URL ${JSON.stringify(url)} must be http:// or https://`, undefined, 'bad_base_url');
    this.baseUrl = url.replace(/\/+$/, '');
    this.apiKey = o.apiKey ?? envString('TINKER_API_KEY');
    if (this.apiKey === undefined && this.baseUrl === DEFAULT_TINKER_BASE_URL) {
      throw new TinkerError('the hosted Tinker service needs an API key: set TINKER_API_KEY (or pass apiKey)', undefined, 'no_api_key');
    }
    this.log = o.log ?? ((line) => console.error(line));
  }

  /** Handshake (`client/config`, the JWT exchange when asked for), `create_session`, heartbeats. */
  static async connect(options: TinkerClientOptions = {}): Promise<TinkerClient> {
    const c = new TinkerClient(options);
    if (options.wire !== undefined && options.wire !== 'protobuf' && options.wire !== 'json') throw new TinkerError(`wire must be 'protobuf' or 'json', got ${JSON.stringify(options.wire)}`);
    let config: unknown = {};
    let hasConfig = true;
    try {
      config = await c.post('/api/v1/client/config', { sdk_version: options.wire === 'json' ? TINKER_SDK_PROTOCOL : TINKER_SDK_PROTOBUF });
    } catch (e) {
      // Servers older than the endpoint (SkyRL tx 0.3) have no feature flags to give: go on with none, in JSON.
      if (!(e instanceof TinkerError && e.status === 404)) throw e;
      hasConfig = false;
      c.log(`tinker: ${c.baseUrl} has no /api/v1/client/config; going on without server feature flags, with the JSON protocol of SDK ${TINKER_SDK_PROTOCOL}`);
    }
    c.serverConfig = isObj(config) ? config : {};
    // SDK ≥ 0.25 sends protobuf whatever the flag says; a server that sets it false explicitly takes JSON only.
    c.protobuf = options.wire !== 'json' && hasConfig && c.serverConfig.proto_write_fwdbwd !== false;
    if (options.wire !== 'json' && hasConfig && !c.protobuf) c.log(`tinker: ${c.baseUrl} does not take protobuf forward_backward bodies (proto_write_fwdbwd: false); sending JSON, as SDK ${TINKER_SDK_PROTOCOL} does`);
    c.compress = c.protobuf && (options.compress ?? c.serverConfig.proto_compress_fwdbwd === true);
    const announced = (k: string) => (typeof c.serverConfig[k] === 'number' && Number.isInteger(c.serverConfig[k]) && (c.serverConfig[k] as number) > 0 ? (c.serverConfig[k] as number) : undefined);
    c.chunkLimits = { maxDatums: options.chunk?.maxDatums ?? announced('fwdbwd_max_chunk_len') ?? MAX_CHUNK_DATUMS, maxBytes: options.chunk?.maxBytes ?? announced('fwdbwd_max_chunk_bytes_count') ?? MAX_CHUNK_BYTES };
    if (c.serverConfig.pjwt_auth_enabled === true) {
      if (c.apiKey === undefined) throw new TinkerError(`${c.baseUrl} exchanges API keys for JWTs (pjwt_auth_enabled); set TINKER_API_KEY`, undefined, 'no_api_key');
      c.jwtEnabled = true;
      await c.refreshJwt();
    }
    const tags = options.tags ?? envString('TINKER_TAGS')?.split(',') ?? [];
    const s = await c.post('/api/v1/create_session', { tags, user_metadata: {}, sdk_version: TINKER_SDK_PROTOCOL, type: 'create_session' });
    if (!isObj(s) || typeof s.session_id !== 'string') throw new TinkerError(`${c.baseUrl}/api/v1/create_session answered without a session_id: ${JSON.stringify(s).slice(0, 200)}`);
    c.sessionIdValue = s.session_id;
    for (const k of ['info_message', 'warning_message', 'error_message'] as const) if (typeof s[k] === 'string' && s[k]) c.log(`tinker: ${s[k]}`);
    const period = options.heartbeatMs ?? 10_000;
    if (period > 0) {
      c.heartbeat = setInterval(() => {
        if (c.beating === undefined) c.beating = c.beat().finally(() => { c.beating = undefined; });
      }, period);
      c.heartbeat.unref();
    }
    return c;
  }

  get sessionId(): string {
    if (this.sessionIdValue === undefined) throw new TinkerError('tinker: no session (use TinkerClient.connect)');
    return this.sessionIdValue;
  }

  private async beat(): Promise<void> {
    try {
      await this.post('/api/v1/session_heartbeat', { session_id: this.sessionId, type: 'session_heartbeat' }, { retry: false });
      this.lastHeartbeat = Date.now();
      this.warnedHeartbeat = false;
    } catch (e) {
      const silent = (Date.now() - this.lastHeartbeat) / 1000;
      if (silent > 120 && !this.warnedHeartbeat) {
        this.warnedHeartbeat = true;
        this.log(`tinker: no heartbeat of session ${this.sessionIdValue} got through for ${Math.round(silent)} s (last error: ${(e as Error).message}); the server may end the session`);
      }
    }
  }

  private async refreshJwt(): Promise<void> {
    const r = await this.post('/api/v1/auth/token', {}, { auth: 'key' });
    if (!isObj(r) || typeof r.jwt !== 'string') throw new TinkerError(`${this.baseUrl}/api/v1/auth/token answered without a jwt`);
    this.jwt = r.jwt;
  }

  private async authHeader(kind: 'auto' | 'key'): Promise<Record<string, string>> {
    if (kind === 'auto' && this.jwtEnabled) {
      if (this.jwt === undefined || jwtSecondsLeft(this.jwt) <= 60) await this.refreshJwt();
      return { 'X-API-Key': this.jwt! };
    }
    return this.apiKey === undefined ? {} : { 'X-API-Key': this.apiKey };
  }

  private backoff(attempt: number): number {
    const r = this.o.retry ?? {};
    return Math.min((r.baseMs ?? 1000) * 2 ** attempt, r.maxMs ?? 30_000);
  }

  /**
   * POST a JSON body; retries connection errors, 408, 429 and 5xx with backoff when `retry` (the default). Returns the
   * parsed JSON, or `{status}` for the statuses in `pass` (the caller handles those).
   */
  async post(path: string, body: unknown, opts: { retry?: boolean; auth?: 'auto' | 'key'; pass?: readonly number[]; raw?: { bytes: Uint8Array; headers: Record<string, string> }; accept?: string } = {}): Promise<unknown> {
    const url = `${this.baseUrl}${path}`;
    const retry = opts.retry ?? true;
    const totalMs = this.o.retry?.totalMs ?? 300_000;
    const idem = `longrun-${this.sessionIdValue ?? 'nosession'}-${this.idempotency++}`;
    const text = opts.raw ? opts.raw.bytes : JSON.stringify(body);
    const contentHeaders = opts.raw ? opts.raw.headers : { 'content-type': 'application/json' };
    if (path === '/api/v1/forward_backward' || path === '/api/v1/forward') {
      this.sent.bodies++;
      this.sent.bytes += typeof text === 'string' ? Buffer.byteLength(text) : text.byteLength;
    }
    let attempt = 0;
    let firstFailure = 0;
    const again = async (why: string): Promise<void> => {
      if (firstFailure === 0) firstFailure = Date.now();
      if (!retry || Date.now() - firstFailure > totalMs) throw new TinkerError(`${path}: ${why}${retry ? ` (gave up after retrying for ${Math.round((Date.now() - firstFailure) / 1000)} s)` : ''}`, undefined, 'unreachable');
      await sleep(this.backoff(attempt++));
    };
    while (true) {
      if (this.closed) throw new TinkerError(`${path}: the client was closed`);
      let res: Response;
      try {
        res = await fetch(url, {
          method: 'POST',
          headers: { ...contentHeaders, accept: opts.accept ?? 'application/json', 'X-Idempotency-Key': idem, ...(await this.authHeader(opts.auth ?? 'auto')) },
          body: text,
          signal: AbortSignal.timeout(this.o.requestTimeoutMs ?? 120_000),
        });
      } catch (e) {
        if (e instanceof TinkerError) throw e;
        const cause = (e as { cause?: { code?: string; message?: string } }).cause;
        await again(`cannot reach ${url}: ${cause?.code ?? cause?.message ?? (e as Error).message}`);
        continue;
      }
      if (opts.pass?.includes(res.status)) {
        await res.arrayBuffer();
        return { status: res.status };
      }
      if (res.status === 408 || res.status === 429 || res.status >= 500) {
        const err = errorText(await res.text());
        await again(`HTTP ${res.status} from ${url}: ${err.message}`);
        continue;
      }
      if (res.ok && (res.headers.get('content-type') ?? '').includes(PROTO_CONTENT_TYPE)) return new ProtoBody(new Uint8Array(await res.arrayBuffer()));
      const raw = await res.text();
      if (!res.ok) {
        const err = errorText(raw);
        const hint = res.status === 401 ? ' (check TINKER_API_KEY)' : res.status === 404 && err.code === undefined ? ` (is ${this.baseUrl} a Tinker API base URL?)` : '';
        throw new TinkerError(`${path}: HTTP ${res.status}: ${err.message}${hint}`, res.status, err.code);
      }
      try {
        return JSON.parse(raw) as unknown;
      } catch {
        throw new TinkerError(`${path}: the answer is not JSON: ${raw.slice(0, 200)}`, res.status);
      }
    }
  }

  /** Submits a call and waits for its future. `resubmittable`: on HTTP 410 the call is submitted again. */
  async call(path: string, body: Record<string, unknown>, opts: { resubmittable?: boolean; proto?: 'fwdbwd' | 'sample' } = {}): Promise<Record<string, unknown>> {
    const submit = async (): Promise<Submitted> => {
      const r = await this.post(path, body);
      if (!isObj(r) || typeof r.request_id !== 'string') throw new TinkerError(`${path}: the answer has no request_id: ${JSON.stringify(r).slice(0, 200)}`);
      return r as unknown as Submitted;
    };
    return this.await(path, await submit(), opts.resubmittable ? submit : undefined, opts.proto);
  }

  /** Polls `retrieve_future` until the future resolves. */
  async await(path: string, submitted: Submitted, resubmit?: () => Promise<Submitted>, proto?: 'fwdbwd' | 'sample'): Promise<Record<string, unknown>> {
    let requestId = submitted.request_id;
    const minMs = this.o.poll?.minMs ?? 1;
    const maxMs = this.o.poll?.maxMs ?? 100;
    let delay = minMs;
    const started = Date.now();
    while (true) {
      if (this.o.futureTimeoutMs !== undefined && Date.now() - started > this.o.futureTimeoutMs) {
        throw new TinkerError(`${path}: request ${requestId} was not done after ${this.o.futureTimeoutMs} ms`, undefined, 'timeout');
      }
      const r = await this.post('/api/v1/retrieve_future', { request_id: requestId, allow_metadata_only: false }, { pass: [408, 410], accept: proto ? `${PROTO_CONTENT_TYPE}, application/json` : undefined });
      if (r instanceof ProtoBody) {
        if (!proto) throw new TinkerError(`${path}: retrieve_future answered protobuf for a result that has no protobuf form`);
        try {
          return (proto === 'fwdbwd' ? decodeForwardBackwardOutput(r.bytes) : decodeSampleResponse(r.bytes)) as unknown as Record<string, unknown>;
        } catch (e) {
          throw new TinkerError(`${path}: the protobuf result cannot be read: ${(e as Error).message}`);
        }
      }
      if (isObj(r) && r.status === 408 && Object.keys(r).length === 1) continue;
      if (isObj(r) && r.status === 410 && Object.keys(r).length === 1) {
        if (!resubmit) throw new TinkerError(`${path}: the server lost request ${requestId} (HTTP 410); it may or may not have run, so it is not sent again. Reload the last saved state to continue.`, 410, 'expired');
        requestId = (await resubmit()).request_id;
        continue;
      }
      if (!isObj(r)) throw new TinkerError(`${path}: retrieve_future answered ${JSON.stringify(r).slice(0, 200)}`);
      if (r.type === 'try_again') {
        await sleep(delay);
        delay = Math.min(Math.max(delay * 2, 1), maxMs);
        continue;
      }
      if (r.status === 'complete_metadata') continue; // only sent when allow_metadata_only is true; ask for the payload
      if ('error' in r) {
        const category = typeof r.category === 'string' ? r.category : 'unknown';
        throw new TinkerError(`${path} failed (${category} error): ${typeof r.error === 'string' ? r.error : JSON.stringify(r.error)}`, undefined, 'request_failed', category);
      }
      return r;
    }
  }

  /** `create_model`: a training client for `baseModel`, with LoRA when `lora` is given (full weights otherwise, where the server allows it). */
  async createModel(baseModel: string, lora?: TinkerLora): Promise<TinkerTrainingClient> {
    if (typeof baseModel !== 'string' || baseModel === '') throw new TinkerError('create_model: base_model must be a model name');
    if (lora !== undefined && !(Number.isInteger(lora.rank) && lora.rank >= 1)) throw new TinkerError(`create_model: lora rank must be a positive integer, got ${lora.rank}`);
    const body: Record<string, unknown> = { session_id: this.sessionId, model_seq_id: this.modelSeq++, base_model: baseModel, user_metadata: null, type: 'create_model' };
    if (lora) body.lora_config = { rank: lora.rank, seed: lora.seed ?? null, train_unembed: lora.train_unembed ?? true, train_mlp: lora.train_mlp ?? true, train_attn: lora.train_attn ?? true };
    const r = await this.call('/api/v1/create_model', body);
    if (typeof r.model_id !== 'string') throw new TinkerError(`create_model: the result has no model_id: ${JSON.stringify(r).slice(0, 200)}`);
    return new TinkerTrainingClient(this, r.model_id, this.chunkLimits);
  }

  /** The next `sampling_session_seq_id` of this session. */
  nextSamplingSessionSeq(): number {
    return this.samplingSeq++;
  }

  /** `create_sampling_session` for a saved sampler path or the base model. */
  async createSamplingSession(source: { modelPath: string } | { baseModel: string }): Promise<TinkerSamplingClient> {
    const body: Record<string, unknown> = { session_id: this.sessionId, sampling_session_seq_id: this.nextSamplingSessionSeq(), type: 'create_sampling_session' };
    if ('modelPath' in source) body.model_path = source.modelPath;
    else body.base_model = source.baseModel;
    const r = await this.post('/api/v1/create_sampling_session', body);
    if (!isObj(r) || typeof r.sampling_session_id !== 'string') throw new TinkerError(`create_sampling_session: the answer has no sampling_session_id: ${JSON.stringify(r).slice(0, 200)}`);
    return new TinkerSamplingClient(this, r.sampling_session_id);
  }

  /** Stops the heartbeats (waiting for one in flight); later calls fail. */
  async close(): Promise<void> {
    this.closed = true;
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
    await this.beating;
  }
}

/** One sampling session: `asample` requests with the session's own seq ids (from 0). */
export class TinkerSamplingClient {
  private seq = 0;

  constructor(private readonly client: TinkerClient, readonly samplingSessionId: string) {}

  async sample(prompt: readonly number[], numSamples: number, params: WireSamplingParams): Promise<WireSampledSequence[]> {
    if (!(Number.isInteger(numSamples) && numSamples >= 1)) throw new TinkerError(`asample: num_samples must be a positive integer, got ${numSamples}`);
    const body = {
      sampling_session_id: this.samplingSessionId, seq_id: this.seq++, num_samples: numSamples,
      prompt: { chunks: [{ type: 'encoded_text', tokens: Array.from(prompt) }] }, sampling_params: params,
      prompt_logprobs: false, topk_prompt_logprobs: 0, type: 'sample',
    };
    const r = await this.client.call('/api/v1/asample', body, { resubmittable: true, proto: 'sample' });
    if (!Array.isArray(r.sequences)) throw new TinkerError(`asample: the result has no sequences: ${JSON.stringify(r).slice(0, 200)}`);
    return r.sequences.map((s: unknown, i: number) => {
      if (!isObj(s) || !Array.isArray(s.tokens)) throw new TinkerError(`asample: sequence ${i} has no tokens`);
      return { tokens: s.tokens as number[], logprobs: Array.isArray(s.logprobs) ? (s.logprobs as number[]) : null, stop_reason: String(s.stop_reason) };
    });
  }
}

/**
 * One training model: its ordered calls. Every method takes the next seq_id when it is called. A submission the
 * server refuses (after any retries) gives its seq_id back when no later call has taken one, so the server never
 * waits for a seq_id that will not come; otherwise the client is out of step with the server and refuses further
 * calls with a message.
 */
export class TinkerTrainingClient {
  private seq = 1;
  private broken: string | undefined;
  private readonly maxDatums: number;
  private readonly maxBytes: number;

  constructor(readonly client: TinkerClient, readonly modelId: string, chunk: TinkerClientOptions['chunk'] = {}) {
    this.maxDatums = chunk.maxDatums ?? MAX_CHUNK_DATUMS;
    this.maxBytes = chunk.maxBytes ?? MAX_CHUNK_BYTES;
    if (!(Number.isInteger(this.maxDatums) && this.maxDatums >= 1)) throw new TinkerError(`chunk.maxDatums must be a positive integer, got ${this.maxDatums}`);
    if (!(this.maxBytes > 0)) throw new TinkerError(`chunk.maxBytes must be positive, got ${this.maxBytes}`);
  }

  /** The seq_id the next training call will take. */
  get nextSeqId(): number {
    return this.seq;
  }

  /** Submits one ordered request with the next seq_id (`encode` makes a protobuf body of it); returns the accepted submission. */
  private async submit(path: string, body: Record<string, unknown>, encode?: (seq: number) => Promise<{ bytes: Uint8Array; headers: Record<string, string> }>): Promise<Submitted> {
    if (this.broken) throw new TinkerError(`${path}: ${this.broken}`, undefined, 'out_of_step');
    const seq = this.seq++;
    try {
      const raw = encode ? await encode(seq) : undefined;
      const r = await this.client.post(path, { model_id: this.modelId, seq_id: seq, ...body }, { raw });
      if (!isObj(r) || typeof r.request_id !== 'string') throw new TinkerError(`${path}: the answer has no request_id: ${JSON.stringify(r).slice(0, 200)}`);
      return r as unknown as Submitted;
    } catch (e) {
      if (this.seq === seq + 1) this.seq = seq;
      else this.broken ??= `seq_id ${seq} of model ${this.modelId} was never accepted (${(e as Error).message}) after later calls took seq_ids; the server would wait for it. Create a new model and load the last saved state.`;
      throw e;
    }
  }

  private async ordered(path: string, body: Record<string, unknown>): Promise<Record<string, unknown>> {
    return this.client.await(path, await this.submit(path, body));
  }

  private async fwd(path: '/api/v1/forward' | '/api/v1/forward_backward', key: 'forward_input' | 'forward_backward_input', data: readonly WireDatum[], lossFn: string, config?: Record<string, number>): Promise<ForwardBackwardOutput> {
    if (data.length === 0) throw new TinkerError(`${path}: no datums`);
    const proto = this.client.protobuf;
    const chunks = this.chunksOf(data);
    const forwardOnly = key === 'forward_input';
    // Protobuf: a forward is a forward_backward with forward_only, as SDK ≥ 0.25 sends it.
    const target = proto ? '/api/v1/forward_backward' : path;
    // The chunks go out in seq_id order, each once the one before is accepted; then all are awaited together.
    const submitted: Submitted[] = [];
    for (const chunk of chunks) {
      const encode = proto ? async (seq: number) => {
        let bytes: Uint8Array;
        try {
          bytes = encodeForwardBackwardRequest({ model_id: this.modelId, seq_id: seq, forward_only: forwardOnly, forward_backward_input: { data: chunk, loss_fn: lossFn, loss_fn_config: config ?? null } });
        } catch (e) {
          // Values protobuf cannot carry (the JSON protocol leaves them to the server's 400): refused here, before a request.
          throw new TinkerError(`${target}: ${(e as Error).message}`, undefined, 'invalid_datum');
        }
        const headers: Record<string, string> = { 'content-type': PROTO_CONTENT_TYPE };
        if (this.client.compress) {
          bytes = await deflateZstd(bytes);
          headers['content-encoding'] = 'zstd';
        }
        return { bytes, headers };
      } : undefined;
      submitted.push(await this.submit(target, { [key]: { data: chunk, loss_fn: lossFn, loss_fn_config: config ?? null }, type: forwardOnly ? 'forward' : 'forward_backward' }, encode));
    }
    const parts = await Promise.all(submitted.map((s) => this.client.await(path, s, undefined, 'fwdbwd')));
    return combineForwardBackward(parts.map((r, i) => {
      if (!Array.isArray(r.loss_fn_outputs) || r.loss_fn_outputs.length !== chunks[i].length) throw new TinkerError(`${path}: chunk ${i} answered ${Array.isArray(r.loss_fn_outputs) ? r.loss_fn_outputs.length : 'no'} outputs for ${chunks[i].length} datums`);
      return { loss_fn_output_type: String(r.loss_fn_output_type ?? ''), loss_fn_outputs: r.loss_fn_outputs as Record<string, TensorData>[], metrics: isObj(r.metrics) ? (r.metrics as Record<string, number>) : {} };
    }));
  }

  /** Chunks of `data` as they will be sent (for callers that report them). */
  chunksOf<T extends WireDatum>(data: readonly T[]): T[][] {
    return chunkDatums(data, this.maxDatums, this.maxBytes, this.client.protobuf ? estimateDatumBytesProto : estimateDatumBytes);
  }

  forwardBackward(data: readonly WireDatum[], lossFn: string, config?: Record<string, number>): Promise<ForwardBackwardOutput> {
    return this.fwd('/api/v1/forward_backward', 'forward_backward_input', data, lossFn, config);
  }

  forward(data: readonly WireDatum[], lossFn: string, config?: Record<string, number>): Promise<ForwardBackwardOutput> {
    return this.fwd('/api/v1/forward', 'forward_input', data, lossFn, config);
  }

  async optimStep(adam: WireAdamParams): Promise<Record<string, number>> {
    const r = await this.ordered('/api/v1/optim_step', { adam_params: adam, type: 'optim_step' });
    return isObj(r.metrics) ? (r.metrics as Record<string, number>) : {};
  }

  /** `save_weights` (weights + optimizer state): the `tinker://` path to load them from. */
  async saveState(name: string): Promise<string> {
    const r = await this.ordered('/api/v1/save_weights', { path: name, type: 'save_weights' });
    if (typeof r.path !== 'string') throw new TinkerError(`save_weights: the result has no path: ${JSON.stringify(r).slice(0, 200)}`);
    return r.path;
  }

  /** `load_weights`: weights, and the optimizer state when `optimizer`. */
  async loadState(path: string, optimizer: boolean): Promise<void> {
    await this.ordered('/api/v1/load_weights', { path, optimizer, type: 'load_weights' });
  }

  /** `save_weights_for_sampler` into a new sampling session. */
  async samplingClient(): Promise<{ path: string | undefined; sampler: TinkerSamplingClient }> {
    const r = await this.ordered('/api/v1/save_weights_for_sampler', { sampling_session_seq_id: this.client.nextSamplingSessionSeq(), type: 'save_weights_for_sampler' });
    if (typeof r.sampling_session_id === 'string') return { path: typeof r.path === 'string' ? r.path : undefined, sampler: new TinkerSamplingClient(this.client, r.sampling_session_id) };
    if (typeof r.path === 'string') return { path: r.path, sampler: await this.client.createSamplingSession({ modelPath: r.path }) };
    throw new TinkerError(`save_weights_for_sampler: the result has neither a sampling_session_id nor a path: ${JSON.stringify(r).slice(0, 200)}`);
  }
}
