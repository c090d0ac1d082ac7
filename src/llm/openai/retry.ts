/**
 * Retries with exponential backoff and full jitter for OpenAI-compatible calls: 429, 5xx, 408/409, timeouts and
 * connection failures are retried; other 4xx (bad request, auth) are not. A `Retry-After` header, when present and
 * shorter than the cap, is honoured. Jitter comes from a seeded generator so runs are reproducible.
 */
import { APIConnectionError, APIError } from 'openai';
import { mulberry32 } from '../../engine/random.ts';

export interface RetryOptions {
  /** Retries after the first attempt (default 4). */
  maxRetries?: number;
  /** First backoff in ms (default 500); doubles each retry. */
  baseDelayMs?: number;
  /** Longest single wait in ms (default 20 000). */
  maxDelayMs?: number;
  /** Seed of the jitter generator (default 0). */
  seed?: number;
  /** Replaced in tests to avoid real waiting. */
  sleep?: (ms: number) => Promise<void>;
  onRetry?: (info: { attempt: number; delayMs: number; error: unknown }) => void;
}

export function isRetryable(err: unknown): boolean {
  if (err instanceof APIConnectionError) return true; // includes APIConnectionTimeoutError
  if (err instanceof APIError) {
    const s = err.status;
    return s === undefined || s === 408 || s === 409 || s === 429 || s >= 500;
  }
  return false;
}

function retryAfterMs(err: unknown): number | null {
  if (!(err instanceof APIError) || !err.headers) return null;
  const raw = err.headers.get?.('retry-after');
  if (!raw) return null;
  const s = Number(raw);
  return Number.isFinite(s) && s >= 0 ? s * 1000 : null;
}

export class Retrier {
  readonly maxRetries: number;
  private readonly base: number;
  private readonly cap: number;
  private readonly rand: () => number;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly onRetry?: RetryOptions['onRetry'];
  retries = 0;

  constructor(o: RetryOptions = {}) {
    this.maxRetries = o.maxRetries ?? 4;
    this.base = o.baseDelayMs ?? 500;
    this.cap = o.maxDelayMs ?? 20_000;
    this.rand = mulberry32(o.seed ?? 0);
    this.sleep = o.sleep ?? ((ms) => new Promise((r) => setTimeout(r, ms)));
    this.onRetry = o.onRetry;
  }

  /** Full jitter: uniform in [0, min(cap, base·2^attempt)]; a Retry-After under the cap wins. */
  delayFor(attempt: number, err: unknown): number {
    const hinted = retryAfterMs(err);
    if (hinted !== null && hinted <= this.cap) return hinted;
    return Math.round(this.rand() * Math.min(this.cap, this.base * 2 ** attempt));
  }

  async run<T>(fn: (attempt: number) => Promise<T>): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await fn(attempt);
      } catch (err) {
        if (attempt >= this.maxRetries || !isRetryable(err)) throw err;
        const delayMs = this.delayFor(attempt, err);
        this.retries++;
        this.onRetry?.({ attempt, delayMs, error: err });
        await this.sleep(delayMs);
      }
    }
  }
}
