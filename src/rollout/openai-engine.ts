/**
 * `OpenAICompatibleEngine`: token-in/token-out over a vLLM- or SGLang-style `POST {baseUrl}/v1/completions`.
 *
 * Request (one HTTP call per generation request): `prompt` is the token-id array; `max_tokens`, `temperature`,
 * `top_p`, `top_k` (−1 = off), `seed`, `stop_token_ids`, `logprobs: 1`, plus vLLM's `return_tokens_as_token_ids: true`,
 * `return_token_ids: true` and `skip_special_tokens: false` so the sampled ids come back exactly.
 *
 * Accepted response formats for `choices[0]` (checked in this order):
 * 1. `token_ids: number[]` (vLLM `return_token_ids`, also SGLang's `output_ids`), with
 *    `logprobs.token_logprobs: number[]` (missing → log-probs unknown, reported as 0).
 * 2. `logprobs.tokens: ["token_id:123", …]` (vLLM `return_tokens_as_token_ids`) with `logprobs.token_logprobs`.
 * Anything else is an error naming what was missing (text alone is never re-tokenized).
 * `finish_reason` "stop" → 'stop', "length" → 'length', "abort" → 'aborted'. If a server stopped on a stop id
 * (`stop_reason` is that id) but left it out of the ids, it is appended with log-prob 0, so the chat format sees the
 * turn's real end.
 *
 * Robustness: a per-attempt timeout; retries with exponential backoff on network errors, timeouts, HTTP 429 and 5xx
 * (other 4xx fail at once with the server's message); at most `concurrency` requests in flight.
 */
import type { FinishReason, GenerationRequest, GenerationResult, InferenceEngine } from './inference.ts';
import { validateRequest } from './inference.ts';

export interface OpenAICompatibleOptions {
  /** e.g. `http://127.0.0.1:8000` (with or without a trailing `/v1`). */
  baseUrl: string;
  model: string;
  apiKey?: string;
  /** Per attempt, default 120 000 ms. */
  timeoutMs?: number;
  /** Retries after the first attempt, default 3. */
  maxRetries?: number;
  /** First backoff delay, doubled each retry, default 500 ms. */
  backoffMs?: number;
  /** Requests in flight at once, default 16. */
  concurrency?: number;
  /** Extra fields merged into every request body (e.g. `{ repetition_penalty: 1 }`). */
  extraBody?: Record<string, unknown>;
}

export class HttpError extends Error {
  constructor(readonly status: number, readonly body: string) {
    super(`completion server answered HTTP ${status}: ${body.slice(0, 500)}`);
    this.name = 'HttpError';
  }
}

const retryable = (e: unknown) => !(e instanceof HttpError) || e.status === 429 || e.status >= 500;

/** A counting semaphore. */
class Limiter {
  private active = 0;
  private readonly waiting: (() => void)[] = [];
  constructor(private readonly limit: number) {}
  async run<T>(f: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((r) => this.waiting.push(r));
    this.active++;
    try {
      return await f();
    } finally {
      this.active--;
      this.waiting.shift()?.();
    }
  }
}

export function parseCompletionChoice(body: unknown, request: GenerationRequest): GenerationResult {
  const choice = (body as { choices?: unknown[] })?.choices?.[0] as Record<string, unknown> | undefined;
  if (!choice || typeof choice !== 'object') throw new Error('completion response has no choices[0]');
  const lp = choice.logprobs as { tokens?: unknown; token_logprobs?: unknown } | null | undefined;
  let tokens: number[] | undefined;
  const direct = choice.token_ids ?? choice.output_ids;
  if (Array.isArray(direct) && direct.every((t) => Number.isInteger(t))) tokens = direct as number[];
  else if (lp && Array.isArray(lp.tokens)) {
    tokens = lp.tokens.map((t, i) => {
      const m = typeof t === 'string' ? /^token_id:(\d+)$/.exec(t) : null;
      if (!m) throw new Error(`completion response: logprobs.tokens[${i}] is ${JSON.stringify(t)}, expected "token_id:N" (start vLLM with return_tokens_as_token_ids)`);
      return Number(m[1]);
    });
  }
  if (!tokens) throw new Error('completion response carries no token ids: expected choices[0].token_ids or logprobs.tokens as "token_id:N"');
  let logprobs: number[];
  if (lp && Array.isArray(lp.token_logprobs)) {
    if (lp.token_logprobs.length !== tokens.length) throw new Error(`completion response: ${tokens.length} token ids but ${lp.token_logprobs.length} log-probs`);
    logprobs = lp.token_logprobs.map((x) => (typeof x === 'number' ? x : 0));
  } else logprobs = tokens.map(() => 0);
  const fr = choice.finish_reason;
  const finishReason: FinishReason = fr === 'stop' ? 'stop' : fr === 'abort' ? 'aborted' : 'length';
  const stopReason = choice.stop_reason;
  if (finishReason === 'stop' && typeof stopReason === 'number' && request.stop.includes(stopReason) && tokens.at(-1) !== stopReason) {
    tokens = [...tokens, stopReason];
    logprobs = [...logprobs, 0];
  }
  return { tokens, logprobs, finishReason };
}

export class OpenAICompatibleEngine implements InferenceEngine {
  private readonly url: string;
  private readonly limiter: Limiter;
  /** Attempts made (first tries and retries), for tests and logs. */
  attempts = 0;

  constructor(private readonly options: OpenAICompatibleOptions) {
    const base = options.baseUrl.replace(/\/+$/, '').replace(/\/v1$/, '');
    if (!/^https?:\/\//.test(base)) throw new Error(`baseUrl must start with http:// or https://, got ${options.baseUrl}`);
    this.url = `${base}/v1/completions`;
    this.limiter = new Limiter(options.concurrency ?? 16);
  }

  generate(requests: readonly GenerationRequest[]): Promise<GenerationResult[]> {
    return Promise.all(requests.map((r) => this.limiter.run(() => this.one(r))));
  }

  private body(r: GenerationRequest): Record<string, unknown> {
    return {
      model: this.options.model,
      prompt: [...r.tokens],
      max_tokens: r.maxNewTokens,
      temperature: r.temperature,
      top_p: r.topP ?? 1,
      top_k: r.topK ?? -1,
      seed: r.seed,
      stop_token_ids: [...r.stop],
      logprobs: 1,
      return_tokens_as_token_ids: true,
      return_token_ids: true,
      skip_special_tokens: false,
      ...this.options.extraBody,
    };
  }

  private async one(r: GenerationRequest): Promise<GenerationResult> {
    validateRequest(r);
    const retries = this.options.maxRetries ?? 3;
    let last: unknown;
    for (let attempt = 0; attempt <= retries; attempt++) {
      if (attempt > 0) await new Promise((res) => setTimeout(res, (this.options.backoffMs ?? 500) * 2 ** (attempt - 1)));
      this.attempts++;
      try {
        return parseCompletionChoice(await this.post(this.body(r)), r);
      } catch (e) {
        last = e;
        if (!retryable(e) || (e instanceof Error && e.message.startsWith('completion response'))) throw e;
      }
    }
    throw new Error(`completion request failed after ${retries + 1} attempts: ${(last as Error)?.message ?? String(last)}`, { cause: last });
  }

  private async post(body: Record<string, unknown>): Promise<unknown> {
    const controller = new AbortController();
    const timeoutMs = this.options.timeoutMs ?? 120_000;
    const timer = setTimeout(() => controller.abort(), timeoutMs);
    try {
      const headers: Record<string, string> = { 'content-type': 'application/json' };
      if (this.options.apiKey) headers.authorization = `Bearer ${this.options.apiKey}`;
      let res: Response;
      let text: string;
      try {
        res = await fetch(this.url, { method: 'POST', headers, body: JSON.stringify(body), signal: controller.signal });
        text = await res.text();
      } catch (e) {
        if (controller.signal.aborted) throw new Error(`completion request timed out after ${timeoutMs} ms`, { cause: e });
        throw e;
      }
      if (!res.ok) throw new HttpError(res.status, text);
      try {
        return JSON.parse(text);
      } catch (e) {
        throw new Error(`completion response is not JSON: ${text.slice(0, 200)}`, { cause: e });
      }
    } finally {
      clearTimeout(timer);
    }
  }
}
