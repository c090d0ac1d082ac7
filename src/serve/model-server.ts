/**
 * The model server: an OpenAI-compatible HTTP front for any `InferenceEngine` (the in-process gpt-oss model in
 * `longrun serve model`), shaped like vLLM's so RL clients get token ids and log-probs, never just text:
 *
 *   GET  /health, GET /v1/models
 *   POST /v1/completions        prompt as token ids (or text, with a tokenizer) → choices[i].token_ids,
 *                               logprobs {tokens: ["token_id:N"], token_logprobs}, finish_reason, stop_reason
 *   POST /v1/chat/completions   (with a chat format) messages + tools rendered by the chat format (harmony/hermes),
 *                               the completion parsed back into content / reasoning_content / tool_calls;
 *                               plus prompt_token_ids, choices[0].token_ids and logprobs.content
 *
 * Sampling: temperature (default 1), top_p, top_k (vLLM's -1 = off), seed, max_tokens (default 16 for completions,
 * the rest of the context for chat), stop_token_ids. Unsupported options (n > 1, streaming, echo, text stop strings)
 * are refused with 400 rather than ignored. A chat completion the format cannot parse is returned as plain content
 * with finish_reason "stop" and `longrun.parse_error` describing the problem (nothing is dropped).
 * Errors use OpenAI's shape: `{"error": {"message", "type", "code"}}`.
 *
 * Fairness: one request carries at most `maxPromptsPerRequest` prompts (a 400 names the cap), and the prompts of all
 * requests reach the engine through one round-robin dispatcher (`FairDispatcher`): at most `maxConcurrentPrompts` are
 * in the engine at once, taken one per request in turn, and a request with nothing in the engine may always start one
 * more (RESERVED_SLOTS), so a 1-token request starts at the next decode step instead of queueing behind a batch of
 * thousands. A client that hangs up stops its request's remaining prompts.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ChatFormat } from '../llm/chat-format.ts';
import type { ChatMessage, ToolSpec } from '../llm/messages.ts';
import type { Tokenizer } from '../llm/tokenizer.ts';
import type { GenerationRequest, GenerationResult, InferenceEngine } from '../rollout/inference.ts';
import { describeZodError } from './env-protocol.ts';
import { badRequest, HttpError, notFound } from './http-errors.ts';
import { checkBearer, checkLocalRequest, isLoopbackHost, readJsonBody, requestPath, sendJson } from './http-util.ts';
import { ChatCompletionBody, CompletionBody } from './model-protocol.ts';

export interface ModelServerOptions {
  engine: InferenceEngine;
  /** The model id clients send (`model`); other ids get 404. */
  modelName: string;
  /** Longest prompt + completion, in tokens. */
  contextLength: number;
  /** Needed for text prompts and for `text` in replies. */
  tokenizer?: Tokenizer;
  /** Needed for /v1/chat/completions. */
  chatFormat?: ChatFormat;
  host?: string;
  port?: number;
  token?: string | null;
  maxBodyBytes?: number;
  /** Most prompts in one /v1/completions request (default 128); more is a 400. */
  maxPromptsPerRequest?: number;
  /** Most prompts in the engine at once, over all requests (default 8; match the engine's batch size). */
  maxConcurrentPrompts?: number;
  log?: (line: string) => void;
}

export const MODEL_SERVER_DEFAULTS = { maxPromptsPerRequest: 128, maxConcurrentPrompts: 8 } as const;
/** Slots beyond maxConcurrentPrompts that only a request with nothing in the engine may take. */
export const RESERVED_SLOTS = 2;

interface Job {
  requests: readonly GenerationRequest[];
  next: number;
  inFlight: number;
  remaining: number;
  results: GenerationResult[];
  done: boolean;
  resolve: (r: GenerationResult[]) => void;
  reject: (e: unknown) => void;
}

/**
 * Feeds the prompts of concurrent requests to the engine one at a time, round-robin over the requests, so no request
 * waits for another's whole batch: each free slot goes to the next request in turn.
 */
export class FairDispatcher {
  private readonly ring: Job[] = [];
  private inFlight = 0;

  constructor(
    private readonly submit: (request: GenerationRequest) => Promise<GenerationResult>,
    private readonly slots: number,
    private readonly reserved = RESERVED_SLOTS,
  ) {}

  /** Results in request order; `signal` aborts the prompts not yet started (the promise then rejects with its reason). */
  run(requests: readonly GenerationRequest[], signal?: AbortSignal): Promise<GenerationResult[]> {
    if (requests.length === 0) return Promise.resolve([]);
    return new Promise((resolve, reject) => {
      const job: Job = { requests, next: 0, inFlight: 0, remaining: requests.length, results: [], done: false, resolve, reject };
      signal?.addEventListener('abort', () => this.finish(job, signal.reason ?? new Error('aborted')), { once: true });
      if (signal?.aborted) return this.finish(job, signal.reason ?? new Error('aborted'));
      this.ring.push(job);
      this.pump();
    });
  }

  private finish(job: Job, error?: unknown): void {
    if (job.done) return;
    job.done = true;
    const at = this.ring.indexOf(job);
    if (at >= 0) this.ring.splice(at, 1);
    if (error === undefined) job.resolve(job.results);
    else job.reject(error);
  }

  private pump(): void {
    for (let i = 0; i < this.ring.length; ) {
      const job = this.ring[i];
      const free = this.inFlight < this.slots || (job.inFlight === 0 && this.inFlight < this.slots + this.reserved);
      if (!free) {
        i++;
        continue;
      }
      // Take one prompt of this request, then move it to the back of the ring.
      const index = job.next++;
      this.ring.splice(i, 1);
      if (job.next < job.requests.length) this.ring.push(job);
      this.inFlight++;
      job.inFlight++;
      this.submit(job.requests[index]).then(
        (r) => {
          job.results[index] = r;
          if (--job.remaining === 0) this.finish(job);
        },
        (err) => this.finish(job, err),
      ).finally(() => {
        this.inFlight--;
        job.inFlight--;
        this.pump();
      });
      i = 0;
      if (this.inFlight >= this.slots + this.reserved) return;
    }
  }
}

export interface ModelServerHandle {
  url: string;
  port: number;
  close(): Promise<void>;
}

/** OpenAI's error body (clients such as the `openai` package read `error.message`). */
function sendOpenAIError(res: ServerResponse, err: HttpError): void {
  const type = err.status >= 500 ? 'server_error' : err.status === 401 ? 'authentication_error' : 'invalid_request_error';
  sendJson(res, err.status, { error: { message: err.message, type, code: err.code, param: null } }, err.headers);
}

function textOf(content: unknown): string {
  if (content === null || content === undefined) return '';
  if (typeof content === 'string') return content;
  return (content as { type: string; text?: string }[])
    .map((p) => {
      if (p.type !== 'text' || typeof p.text !== 'string') throw badRequest('unsupported_content', `message content part of type "${p.type}" is not supported (text only)`);
      return p.text;
    })
    .join('');
}

/** OpenAI chat messages → the chat format's messages (tool-call arguments parsed; invalid JSON is a 400). */
export function toChatMessages(messages: ChatCompletionBody['messages']): ChatMessage[] {
  return messages.map((m, i): ChatMessage => {
    switch (m.role) {
      case 'system':
      case 'developer':
        return { role: 'system', content: textOf(m.content) };
      case 'user':
        return { role: 'user', content: textOf(m.content) };
      case 'tool':
        return { role: 'tool', content: textOf(m.content), ...(m.tool_call_id ? { toolCallId: m.tool_call_id } : {}), ...(m.name ? { name: m.name } : {}) };
      case 'assistant': {
        const out: ChatMessage = { role: 'assistant', content: textOf(m.content) };
        if (typeof m.reasoning_content === 'string' && m.reasoning_content !== '') out.reasoning = m.reasoning_content;
        if (m.tool_calls?.length) {
          out.toolCalls = m.tool_calls.map((c, j) => {
            let args: unknown;
            try {
              args = JSON.parse(c.function.arguments || '{}');
            } catch {
              throw badRequest('invalid_tool_arguments', `messages[${i}].tool_calls[${j}].function.arguments is not valid JSON`);
            }
            if (typeof args !== 'object' || args === null || Array.isArray(args)) throw badRequest('invalid_tool_arguments', `messages[${i}].tool_calls[${j}].function.arguments must be a JSON object`);
            return { ...(c.id ? { id: c.id } : {}), name: c.function.name, arguments: args as Record<string, unknown> };
          });
        }
        return out;
      }
    }
  });
}

const finishName = (r: GenerationResult) => (r.finishReason === 'stop' ? 'stop' : r.finishReason === 'aborted' ? 'abort' : 'length');

export async function startModelServer(o: ModelServerOptions): Promise<ModelServerHandle> {
  const token = o.token ?? null;
  const maxBody = o.maxBodyBytes ?? 8 << 20;
  const maxPrompts = o.maxPromptsPerRequest ?? MODEL_SERVER_DEFAULTS.maxPromptsPerRequest;
  const dispatcher = new FairDispatcher(async (r) => (await o.engine.generate([r]))[0], o.maxConcurrentPrompts ?? MODEL_SERVER_DEFAULTS.maxConcurrentPrompts);
  // Without a token, a loopback server answers only loopback-addressed requests that no foreign web page sent.
  const localOnly = token === null && isLoopbackHost(o.host ?? '127.0.0.1');
  const log = o.log ?? (() => {});
  const created = () => Math.floor(Date.now() / 1000);
  let closing = false;

  function checkModel(model: string | undefined): void {
    if (model !== undefined && model !== o.modelName) throw notFound('model_not_found', `The model '${model}' does not exist; this server serves '${o.modelName}'`);
  }

  function checkStops(stop: string | string[] | null | undefined): void {
    const list = stop === null || stop === undefined ? [] : Array.isArray(stop) ? stop : [stop];
    if (list.length) throw badRequest('unsupported_parameter', 'text stop strings are not supported; use stop_token_ids (token-level stops)');
  }

  function sampling(b: { temperature?: number | null; top_p?: number | null; top_k?: number | null; seed?: number | null }): Pick<GenerationRequest, 'temperature' | 'topP' | 'topK' | 'seed'> {
    return { temperature: b.temperature ?? 1, topP: b.top_p ?? undefined, topK: b.top_k !== null && b.top_k !== undefined && b.top_k > 0 ? b.top_k : undefined, seed: b.seed ?? undefined };
  }

  function budget(promptLength: number, maxTokens: number | null | undefined, dflt: number): number {
    const room = o.contextLength - promptLength;
    if (room < 1) throw badRequest('context_length_exceeded', `The prompt has ${promptLength} tokens; the model's context is ${o.contextLength}`);
    const n = maxTokens ?? Math.min(dflt, room);
    if (n > room) throw badRequest('context_length_exceeded', `prompt (${promptLength}) + max_tokens (${n}) exceeds the model's context of ${o.contextLength} tokens`);
    return n;
  }

  async function generate(requests: GenerationRequest[], signal: AbortSignal): Promise<GenerationResult[]> {
    try {
      return await dispatcher.run(requests, signal);
    } catch (err) {
      if (err instanceof HttpError) throw err;
      const msg = (err as Error).message;
      if (err instanceof RangeError || /outside the model's vocabulary|must be/.test(msg)) throw badRequest('invalid_request', msg);
      throw new HttpError(500, 'generation_failed', `Generation failed: ${msg}`);
    }
  }

  async function completions(raw: unknown, signal: AbortSignal): Promise<unknown> {
    const parsed = CompletionBody.safeParse(raw ?? {});
    if (!parsed.success) throw badRequest('invalid_body', `Invalid /v1/completions body: ${describeZodError(parsed.error)}`);
    const b = parsed.data;
    checkModel(b.model);
    checkStops(b.stop);
    // One prompt (ids or text) or a batch of them.
    const prompts: (number[] | string)[] = typeof b.prompt === 'string' ? [b.prompt] : typeof b.prompt[0] === 'number' ? [b.prompt as number[]] : (b.prompt as (number[] | string)[]);
    if (prompts.length > maxPrompts) {
      throw badRequest('too_many_prompts', `This request has ${prompts.length} prompts; the server takes at most ${maxPrompts} per request (--max-prompts). Send the rest in further requests.`);
    }
    const tokenized = prompts.map((p) => {
      if (typeof p !== 'string') return p;
      if (!o.tokenizer) throw badRequest('tokenizer_required', 'Text prompts need the server to have a tokenizer (--tokenizer); send token ids instead');
      return o.tokenizer.encode(p);
    });
    const stop = b.stop_token_ids ?? [...(o.tokenizer?.eosIds ?? [])];
    const requests = tokenized.map((p) => ({ tokens: p, maxNewTokens: budget(p.length, b.max_tokens, 16), stop, ...sampling(b) }));
    const results = await generate(requests, signal);
    const wantLogprobs = b.logprobs !== null && b.logprobs !== undefined;
    return {
      id: `cmpl-${randomBytes(12).toString('hex')}`,
      object: 'text_completion',
      created: created(),
      model: o.modelName,
      choices: results.map((r, i) => ({
        index: i,
        text: o.tokenizer ? o.tokenizer.decode(r.tokens) : '',
        token_ids: r.tokens,
        prompt_token_ids: tokenized[i],
        logprobs: wantLogprobs ? { tokens: r.tokens.map((t) => `token_id:${t}`), token_logprobs: r.logprobs, top_logprobs: null, text_offset: null } : null,
        finish_reason: finishName(r),
        stop_reason: r.finishReason === 'stop' ? (r.tokens.at(-1) ?? null) : null,
      })),
      usage: {
        prompt_tokens: tokenized.reduce((s, p) => s + p.length, 0),
        completion_tokens: results.reduce((s, r) => s + r.tokens.length, 0),
        total_tokens: tokenized.reduce((s, p) => s + p.length, 0) + results.reduce((s, r) => s + r.tokens.length, 0),
      },
    };
  }

  let callCounter = 0;
  async function chatCompletions(raw: unknown, signal: AbortSignal): Promise<unknown> {
    const format = o.chatFormat;
    if (!format) throw notFound('chat_not_available', 'This server has no chat format (start it with --chat-format); use /v1/completions with token ids');
    const parsed = ChatCompletionBody.safeParse(raw ?? {});
    if (!parsed.success) throw badRequest('invalid_body', `Invalid /v1/chat/completions body: ${describeZodError(parsed.error)}`);
    const b = parsed.data;
    checkModel(b.model);
    checkStops(b.stop);
    const tools: ToolSpec[] = b.tool_choice === 'none' ? [] : ((b.tools ?? []) as ToolSpec[]);
    let prompt: number[];
    try {
      prompt = format.render({ messages: toChatMessages(b.messages), tools }, { addGenerationPrompt: true });
    } catch (err) {
      if (err instanceof HttpError) throw err;
      throw badRequest('invalid_messages', `The conversation cannot be rendered in ${format.name}: ${(err as Error).message}`);
    }
    const [r] = await generate([{ tokens: prompt, maxNewTokens: budget(prompt.length, b.max_completion_tokens ?? b.max_tokens, Number.MAX_SAFE_INTEGER), stop: [...format.stopTokenIds], ...sampling(b) }], signal);
    const parse = format.parseCompletion(r!.tokens, tools.length ? tools.map((t) => t.function.name) : undefined);
    const content = parse.ok ? parse : parse.partial;
    const toolCalls = (parse.ok ? parse.toolCalls : undefined) ?? [];
    const message: Record<string, unknown> = {
      role: 'assistant',
      content: parse.ok ? (content.content ?? (toolCalls.length ? null : '')) : parse.text,
      ...(content.reasoning !== undefined ? { reasoning_content: content.reasoning } : {}),
      ...(toolCalls.length ? { tool_calls: toolCalls.map((c) => ({ id: `call_${(callCounter++).toString(36)}`, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.arguments) } })) } : {}),
    };
    const finish = r!.finishReason === 'length' ? 'length' : toolCalls.length ? 'tool_calls' : finishName(r!);
    return {
      id: `chatcmpl-${randomBytes(12).toString('hex')}`,
      object: 'chat.completion',
      created: created(),
      model: o.modelName,
      prompt_token_ids: prompt,
      choices: [
        {
          index: 0,
          message,
          finish_reason: finish,
          token_ids: r!.tokens,
          logprobs: b.logprobs ? { content: r!.tokens.map((t, i) => ({ token: `token_id:${t}`, logprob: r!.logprobs[i], bytes: null, top_logprobs: [] })) } : null,
          ...(parse.ok ? {} : { longrun: { parse_error: { kind: parse.kind, message: parse.message } } }),
        },
      ],
      usage: { prompt_tokens: prompt.length, completion_tokens: r!.tokens.length, total_tokens: prompt.length + r!.tokens.length },
    };
  }

  const routes: Record<string, Record<string, (req: IncomingMessage, signal: AbortSignal) => Promise<unknown>>> = {
    '/health': { GET: async () => ({ status: 'ok', model: o.modelName }) },
    '/v1/models': { GET: async () => ({ object: 'list', data: [{ id: o.modelName, object: 'model', created: 0, owned_by: 'longrun', max_model_len: o.contextLength }] }) },
    '/v1/completions': { POST: async (req, signal) => completions(await readJsonBody(req, maxBody), signal) },
    '/v1/chat/completions': { POST: async (req, signal) => chatCompletions(await readJsonBody(req, maxBody), signal) },
  };

  const server = createServer((req, res) => {
    res.on('error', () => {});
    void (async () => {
      try {
        if (closing) throw new HttpError(503, 'shutting_down', 'The server is shutting down');
        if (localOnly) checkLocalRequest(req);
        const path = requestPath(req);
        const route = routes[path];
        if (!route) throw notFound('not_found', `No route ${req.method} ${path} (routes: ${Object.keys(routes).join(', ')})`);
        const handler = route[req.method ?? ''];
        if (!handler) throw new HttpError(405, 'method_not_allowed', `${req.method} is not allowed on ${path}`, { allow: Object.keys(route).join(', ') });
        if (token !== null && path !== '/health') checkBearer(req, token);
        // A client that hangs up before its reply stops the prompts of its request that have not started.
        const gone = new AbortController();
        res.on('close', () => {
          if (!res.writableFinished) gone.abort(new HttpError(499, 'client_gone', 'The client closed the connection'));
        });
        sendJson(res, 200, await handler(req, gone.signal));
      } catch (err) {
        req.resume();
        if (err instanceof HttpError) {
          if (err.status === 499) return;
          sendOpenAIError(res, err);
        } else {
          log(`500 ${req.method} ${req.url}: ${(err as Error)?.stack ?? String(err)}`);
          sendOpenAIError(res, new HttpError(500, 'internal_error', `Internal server error: ${(err as Error)?.message ?? String(err)}`));
        }
      }
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 8000, o.host ?? '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const host = o.host ?? '127.0.0.1';
  const url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  log(`longrun model server listening on ${url} (model ${o.modelName}${o.chatFormat ? `, chat format ${o.chatFormat.name}` : ', completions only'})`);
  return {
    url,
    port,
    close: async () => {
      closing = true;
      const stopped = new Promise<void>((r) => server.close(() => r()));
      server.closeIdleConnections();
      setTimeout(() => server.closeAllConnections(), 2000).unref();
      await stopped;
      await o.engine.close?.();
    },
  };
}
