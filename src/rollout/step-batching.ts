/**
 * Iteration-level continuous batching with per-trajectory KV-cache reuse.
 *
 * Each iteration: admit waiting requests (up to `maxActive` sequences and `maxActiveTokens` reserved positions),
 * prefill the new ones together, run ONE batched decode step for every sequence already running, sample, and retire
 * finished sequences. A short request never waits for a long one (unlike request-level batching, batching.ts).
 *
 * Sessions (verl's sticky request ids): when a request names a `session` whose cache from the previous turn covers a
 * prefix of the new context, the sequence skips the prefill and instead feeds only the new tokens (the last sampled
 * token and the observation) through decode steps alongside the others, in chunks of the model's `maxFeedPerStep`
 * tokens per iteration (1 by default); it samples once they are all in. The result equals a fresh prefill (KV-cached decode computes the same logits as a full forward). A context
 * that does not extend the cached one, or would overflow its capacity, falls back to a fresh prefill. Sessions are
 * freed by `endSession` (the agent loop calls it when the episode ends) or evicted least-recently-used beyond
 * `maxSessions`.
 *
 * Generic over `StepModel`, so it is tested with a fake model; `model-engine.ts` adapts gpt-oss.
 */
import type { GenerationRequest, GenerationResult, InferenceEngine } from './inference.ts';
import { validateRequest } from './inference.ts';

export interface StepModel<S> {
  /** Starts sequences with one packed prefill. `capacities[i]` = positions to reserve. Returns [n, V] logits. */
  prefill(prompts: Int32Array[], capacities: number[]): { states: S[]; logits: Float32Array };
  /**
   * One decode step: sequence i is fed `counts[i]` tokens (all 1 when `counts` is absent), in order from `tokens`.
   * Returns [n, V] logits, row i after sequence i's last fed token.
   */
  decode(tokens: Int32Array, states: S[], counts?: number[]): Float32Array;
  /** Most tokens one sequence may feed in a decode step (default 1): a session's new context goes in chunks this big. */
  readonly maxFeedPerStep?: number;
  /** Frees a sequence's state (KV cache). */
  release(state: S): void;
  readonly vocabSize: number;
}

/** Per-request sampler: picks a token from a logits row and reports its log-prob (seeded by the request). */
export type SamplerFactory = (request: GenerationRequest) => (logits: Float32Array) => { token: number; logprob: number };

export interface StepBatchingOptions {
  /** Most sequences decoding at once. */
  maxActive: number;
  /** Most reserved positions of the running sequences; a single larger request still runs. */
  maxActiveTokens?: number;
  sampler: SamplerFactory;
  /** Positions reserved for a session's cache (default: the first request's prompt + maxNewTokens). */
  sessionCapacity?: number;
  /** Idle session caches kept (least recently used evicted first), default 64. */
  maxSessions?: number;
}

interface Sequence<S> {
  request: GenerationRequest;
  sample: (logits: Float32Array) => { token: number; logprob: number };
  state?: S;
  capacity: number;
  /** Tokens whose keys/values are in the cache. */
  fed: number[];
  /** Tokens still to feed before the next sample (the session delta, then each sampled token). */
  toFeed: number[];
  tokens: number[];
  logprobs: number[];
  resolve: (r: GenerationResult) => void;
  reject: (e: unknown) => void;
}

interface CachedSession<S> {
  state: S;
  fed: number[];
  capacity: number;
}

export interface StepBatchingStats {
  /** Sequences advanced in each iteration. */
  activePerIteration: number[];
  /** Newcomers prefilled in each iteration. */
  admittedPerIteration: number[];
  /** Prompt tokens run through prefill. */
  prefilledTokens: number;
  /** Context tokens served from a session cache instead of being prefilled again. */
  reusedTokens: number;
  /** Tokens run through decode steps (sampled tokens fed back, and sessions' new context). */
  decodedTokens: number;
}

const reserve = (r: GenerationRequest) => r.tokens.length + r.maxNewTokens;

function isPrefix(prefix: readonly number[], of: readonly number[]): boolean {
  if (prefix.length >= of.length) return false;
  for (let i = 0; i < prefix.length; i++) if (prefix[i] !== of[i]) return false;
  return true;
}

export class StepBatchingEngine<S> implements InferenceEngine {
  readonly stats: StepBatchingStats = { activePerIteration: [], admittedPerIteration: [], prefilledTokens: 0, reusedTokens: 0, decodedTokens: 0 };
  private readonly waiting: Sequence<S>[] = [];
  private active: Sequence<S>[] = [];
  private running = false;
  /** Idle session caches, in least-recently-used order (Map keeps insertion order). */
  private readonly sessions = new Map<string, CachedSession<S>>();

  constructor(private readonly model: StepModel<S>, private readonly options: StepBatchingOptions) {
    if (!(Number.isInteger(options.maxActive) && options.maxActive >= 1)) throw new RangeError(`maxActive must be a positive integer, got ${options.maxActive}`);
  }

  generate(requests: readonly GenerationRequest[]): Promise<GenerationResult[]> {
    return Promise.all(requests.map((r) => this.submit(r)));
  }

  submit(request: GenerationRequest): Promise<GenerationResult> {
    try {
      validateRequest(request);
    } catch (e) {
      return Promise.reject(e);
    }
    return new Promise((resolve, reject) => {
      this.waiting.push({ request, sample: this.options.sampler(request), capacity: 0, fed: [], toFeed: [], tokens: [], logprobs: [], resolve, reject });
      if (!this.running) {
        this.running = true;
        setTimeout(() => void this.loop(), 0);
      }
    });
  }

  endSession(session: string): void {
    const cached = this.sessions.get(session);
    if (!cached) return;
    this.sessions.delete(session);
    this.model.release(cached.state);
  }

  /** Idle session caches held. */
  get sessionCount(): number {
    return this.sessions.size;
  }

  private admit(): Sequence<S>[] {
    const out: Sequence<S>[] = [];
    let used = this.active.reduce((a, s) => a + reserve(s.request), 0);
    while (this.waiting.length > 0 && this.active.length + out.length < this.options.maxActive) {
      const c = reserve(this.waiting[0].request);
      const empty = this.active.length + out.length === 0;
      if (!empty && this.options.maxActiveTokens !== undefined && used + c > this.options.maxActiveTokens) break;
      out.push(this.waiting.shift()!);
      used += c;
    }
    return out;
  }

  /** Takes over the session's cache when it covers a prefix of the new context and has room; else frees it. */
  private resume(seq: Sequence<S>): boolean {
    const id = seq.request.session;
    if (id === undefined) return false;
    const cached = this.sessions.get(id);
    if (!cached) return false;
    this.sessions.delete(id);
    const tokens = seq.request.tokens;
    if (!isPrefix(cached.fed, tokens) || reserve(seq.request) > cached.capacity) {
      this.model.release(cached.state);
      return false;
    }
    seq.state = cached.state;
    seq.capacity = cached.capacity;
    seq.fed = cached.fed;
    seq.toFeed = tokens.slice(cached.fed.length);
    this.stats.reusedTokens += cached.fed.length;
    return true;
  }

  /** A sequence is done: keep its cache for the session's next turn, or free it. */
  private retire(seq: Sequence<S>): void {
    if (seq.state === undefined) return;
    const id = seq.request.session;
    if (id === undefined) {
      this.model.release(seq.state);
      return;
    }
    const old = this.sessions.get(id);
    if (old) this.model.release(old.state);
    this.sessions.delete(id);
    this.sessions.set(id, { state: seq.state, fed: seq.fed, capacity: seq.capacity });
    const max = this.options.maxSessions ?? 64;
    while (this.sessions.size > max) {
      const [oldest, entry] = this.sessions.entries().next().value as [string, CachedSession<S>];
      this.sessions.delete(oldest);
      this.model.release(entry.state);
    }
  }

  /** Consumes the logits after the sequence's last fed token: samples when nothing is left to feed. Returns true when finished. */
  private advance(seq: Sequence<S>, row: Float32Array): boolean {
    if (seq.toFeed.length > 0) return false;
    const { token, logprob } = seq.sample(row);
    seq.tokens.push(token);
    seq.logprobs.push(logprob);
    const stop = seq.request.stop.includes(token);
    if (!stop && seq.tokens.length < seq.request.maxNewTokens) {
      seq.toFeed.push(token);
      return false;
    }
    this.retire(seq);
    seq.resolve({ tokens: seq.tokens, logprobs: seq.logprobs, finishReason: stop ? 'stop' : 'length' });
    return true;
  }

  private async loop(): Promise<void> {
    const V = this.model.vocabSize;
    try {
      while (this.active.length > 0 || this.waiting.length > 0) {
        const admitted = this.admit();
        const resumed = admitted.filter((s) => this.resume(s));
        const fresh = admitted.filter((s) => !resumed.includes(s));
        // Every running or resumed sequence feeds its next token, or the next chunk of its new context, this iteration.
        const stepping = [...this.active, ...resumed];
        const next: Sequence<S>[] = [];
        try {
          if (stepping.length > 0) {
            const chunk = Math.max(1, this.model.maxFeedPerStep ?? 1);
            const feeds = stepping.map((s) => s.toFeed.splice(0, chunk));
            const counts = feeds.map((f) => f.length);
            const tokens = Int32Array.from(feeds.flat());
            const logits = chunk > 1
              ? this.model.decode(tokens, stepping.map((s) => s.state!), counts)
              : this.model.decode(tokens, stepping.map((s) => s.state!));
            this.stats.decodedTokens += tokens.length;
            stepping.forEach((s, i) => {
              s.fed.push(...feeds[i]);
              if (!this.advance(s, logits.subarray(i * V, (i + 1) * V))) next.push(s);
            });
          }
          if (fresh.length > 0) {
            const capacities = fresh.map((s) => Math.max(reserve(s.request), s.request.session !== undefined ? this.options.sessionCapacity ?? 0 : 0));
            const { states, logits } = this.model.prefill(fresh.map((s) => Int32Array.from(s.request.tokens)), capacities);
            this.stats.prefilledTokens += fresh.reduce((a, s) => a + s.request.tokens.length, 0);
            fresh.forEach((s, i) => {
              s.state = states[i];
              s.capacity = capacities[i];
              s.fed = [...s.request.tokens];
              if (!this.advance(s, logits.subarray(i * V, (i + 1) * V))) next.push(s);
            });
          }
        } catch (e) {
          // A failed model call fails every sequence of the iteration; later requests still run.
          for (const s of [...stepping, ...fresh]) {
            if (s.state !== undefined) this.model.release(s.state);
            s.state = undefined;
            s.reject(e);
          }
          this.active = [];
          continue;
        }
        this.stats.activePerIteration.push(stepping.length + fresh.length);
        this.stats.admittedPerIteration.push(admitted.length);
        this.active = next;
        // Let resolved callers submit their next turn before the next iteration.
        await new Promise((r) => setTimeout(r, 0));
      }
    } finally {
      this.running = false;
    }
  }
}
