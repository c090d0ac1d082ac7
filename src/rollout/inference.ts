/**
 * The agent ↔ model seam: token ids in, token ids + log-probs out (as verl's agent loop asks of its
 * servers, https://verl.readthedocs.io/en/latest/advance/agent_loop.html). The agent loop never sends
 * text, so nothing is ever re-tokenized.
 *
 * Implementations:
 * - `ScriptedEngine` (this file): replays given completions, for tests.
 * - `BatchingEngine` (batching.ts): continuous batching over any `generateBatch` function (the in-process model).
 * - `OpenAICompatibleEngine` (openai-engine.ts): a vLLM/SGLang-style `/v1/completions` server.
 */

export interface GenerationRequest {
  /** The whole context so far (prompt + every earlier turn and observation). */
  tokens: readonly number[];
  maxNewTokens: number;
  /** 0 = greedy. Log-probs are reported under the temperature-scaled distribution. */
  temperature: number;
  /** Default 1 (off). */
  topP?: number;
  /** Default −1 / undefined (off). */
  topK?: number;
  /** Generation ends after one of these ids is sampled (the stop token is part of the output). */
  stop: readonly number[];
  /** Sampling seed: the same request and seed give the same tokens (engines that support it). */
  seed?: number;
  /**
   * The trajectory this turn belongs to (verl's sticky request id). Engines that keep a session's KV cache between
   * turns only process the tokens added since its last turn; others ignore it.
   */
  session?: string;
}

export type FinishReason = 'stop' | 'length' | 'aborted';

export interface GenerationResult {
  /** New tokens only, stop token included when there was one. */
  tokens: number[];
  /** One log-prob per new token, under the temperature-scaled full-vocabulary distribution. */
  logprobs: number[];
  finishReason: FinishReason;
}

export interface InferenceEngine {
  /** Results are in request order. A request may be sent alone or with others; engines batch as they see fit. */
  generate(requests: readonly GenerationRequest[]): Promise<GenerationResult[]>;
  /** The session's trajectory is over: its cached state may be freed. */
  endSession?(session: string): void;
  close?(): Promise<void>;
}

/**
 * The engine with every request's session id removed, so that each turn is a fresh request and the whole conversation
 * is prefilled again (the plain sampling loop: no KV cache kept across turns). Run files select it with
 * `engine.kvCache: reprefill`; the rollout-dataflow ablation compares it with the kept caches (docs/results/ablations/).
 * `inner` is the wrapped engine (its statistics, e.g. the step engine's prefilled and reused tokens).
 */
export function withoutSessions<E extends InferenceEngine>(inner: E): InferenceEngine & { readonly inner: E } {
  return {
    inner,
    generate: (requests: readonly GenerationRequest[]): Promise<GenerationResult[]> => inner.generate(requests.map(({ session: _session, ...r }) => r)),
    ...(inner.close ? { close: () => inner.close!() } : {}),
  };
}

export function validateRequest(r: GenerationRequest): void {
  if (!Array.isArray(r.tokens) && !ArrayBuffer.isView(r.tokens)) throw new TypeError('generation request: tokens must be an array of token ids');
  if (r.tokens.length === 0) throw new Error('generation request: the prompt has no tokens');
  if (!(Number.isInteger(r.maxNewTokens) && r.maxNewTokens >= 1)) throw new RangeError(`generation request: maxNewTokens must be a positive integer, got ${r.maxNewTokens}`);
  if (!(r.temperature >= 0)) throw new RangeError(`generation request: temperature must be ≥ 0, got ${r.temperature}`);
  if (r.topP !== undefined && !(r.topP > 0 && r.topP <= 1)) throw new RangeError(`generation request: topP must be in (0, 1], got ${r.topP}`);
}

/**
 * Replays completions: `respond(request, callIndex)` returns the tokens (and optionally log-probs) to emit.
 * Output is cut at the first stop token and at `maxNewTokens`, like a real engine. Log-probs default to −1 each.
 */
export class ScriptedEngine implements InferenceEngine {
  readonly requests: GenerationRequest[] = [];

  constructor(private readonly respond: (request: GenerationRequest, callIndex: number) => { tokens: number[]; logprobs?: number[] }) {}

  async generate(requests: readonly GenerationRequest[]): Promise<GenerationResult[]> {
    return requests.map((r) => {
      validateRequest(r);
      const index = this.requests.length;
      this.requests.push(r);
      const out = this.respond(r, index);
      const lps = out.logprobs ?? out.tokens.map(() => -1);
      if (lps.length !== out.tokens.length) throw new Error(`scripted engine: ${out.tokens.length} tokens but ${lps.length} log-probs`);
      const tokens: number[] = [];
      const logprobs: number[] = [];
      let finishReason: FinishReason = 'length';
      for (let i = 0; i < out.tokens.length && tokens.length < r.maxNewTokens; i++) {
        tokens.push(out.tokens[i]);
        logprobs.push(lps[i]);
        if (r.stop.includes(out.tokens[i])) {
          finishReason = 'stop';
          break;
        }
      }
      return { tokens, logprobs, finishReason };
    });
  }
}
