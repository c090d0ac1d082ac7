/**
 * A chat-completions client for any OpenAI-compatible server (OpenAI, vLLM, SGLang, llama.cpp…) on the official
 * `openai` package, with our own retry policy (retry.ts), a per-request timeout, an optional shared concurrency
 * limiter and token-usage accounting. The SDK's own retries are off so there is exactly one policy.
 */
import OpenAI from 'openai';
import type { ChatCompletion, ChatCompletionCreateParamsNonStreaming } from 'openai/resources/chat/completions';
import { ConcurrencyLimiter } from './limiter.ts';
import { Retrier, type RetryOptions } from './retry.ts';

export interface ChatClientOptions {
  baseUrl: string;
  model: string;
  /** Default: env OPENAI_API_KEY; local servers usually need none. */
  apiKey?: string | null;
  /** Per-request timeout in ms (default 120 000). */
  timeoutMs?: number;
  retry?: RetryOptions;
  /** Shared across the clients of one run to cap requests in flight. */
  limiter?: ConcurrencyLimiter;
  /** Sampling parameters sent with every request (e.g. temperature, max_tokens). */
  params?: Partial<Omit<ChatCompletionCreateParamsNonStreaming, 'model' | 'messages'>>;
}

export interface TokenUsage {
  requests: number;
  promptTokens: number;
  completionTokens: number;
  retries: number;
  failures: number;
}

export type ChatRequest = Omit<ChatCompletionCreateParamsNonStreaming, 'model'>;

export class ChatClient {
  readonly model: string;
  readonly baseUrl: string;
  readonly usage: TokenUsage = { requests: 0, promptTokens: 0, completionTokens: 0, retries: 0, failures: 0 };
  private readonly sdk: OpenAI;
  private readonly retrier: Retrier;
  private readonly limiter: ConcurrencyLimiter | null;
  private readonly params: ChatClientOptions['params'];
  private readonly timeoutMs: number;

  constructor(o: ChatClientOptions) {
    if (!o.baseUrl) throw new Error('An OpenAI-compatible client needs a base URL (e.g. http://127.0.0.1:8000/v1)');
    if (!o.model) throw new Error('An OpenAI-compatible client needs a model name');
    this.model = o.model;
    this.baseUrl = o.baseUrl;
    this.timeoutMs = o.timeoutMs ?? 120_000;
    // Local servers take any key; the SDK insists on one, so an absent or empty key is sent as 'EMPTY' (vLLM's convention).
    const apiKey = o.apiKey || process.env.OPENAI_API_KEY || 'EMPTY';
    this.sdk = new OpenAI({ baseURL: o.baseUrl, apiKey, maxRetries: 0, timeout: this.timeoutMs });
    this.retrier = new Retrier(o.retry);
    this.limiter = o.limiter ?? null;
    this.params = o.params;
  }

  /** One chat completion, retried per the policy; the first choice must exist. */
  async complete(request: ChatRequest): Promise<ChatCompletion> {
    const call = () =>
      this.retrier.run(async () => {
        this.usage.requests++;
        return this.sdk.chat.completions.create({ ...this.params, ...request, model: this.model, stream: false }, { timeout: this.timeoutMs });
      });
    let result: ChatCompletion;
    try {
      result = await (this.limiter ? this.limiter.run(call) : call());
    } catch (err) {
      this.usage.failures++;
      throw new Error(`Chat completion at ${this.baseUrl} (model ${this.model}) failed: ${(err as Error).message}`, { cause: err });
    } finally {
      this.usage.retries = this.retrier.retries;
    }
    if (!result?.choices?.length) throw new Error(`Chat completion at ${this.baseUrl} returned no choices`);
    this.usage.promptTokens += result.usage?.prompt_tokens ?? 0;
    this.usage.completionTokens += result.usage?.completion_tokens ?? 0;
    return result;
  }
}

export function sumUsage(...all: TokenUsage[]): TokenUsage {
  const out: TokenUsage = { requests: 0, promptTokens: 0, completionTokens: 0, retries: 0, failures: 0 };
  for (const u of all) for (const k of Object.keys(out) as (keyof TokenUsage)[]) out[k] += u[k];
  return out;
}
