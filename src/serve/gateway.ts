/**
 * The trajectory gateway: an OpenAI-compatible chat-completions endpoint per rollout, served by the policy being
 * trained (any `InferenceEngine`: the in-process model, a Tinker backend's sampler, a vLLM server), that records
 * every call token-exactly for training. An agent program needs no change beyond its base URL:
 *
 *   POST /rollouts                              {task_id?, seed?} → {rollout_id, base_url}   (or `openRollout` in process)
 *   POST /rollouts/{id}/v1/chat/completions     messages + tools, streaming (SSE) or not; the reply carries
 *                                               `tool_calls`, `reasoning_content`, and longrun's `prompt_token_ids`,
 *                                               `token_ids`, `logprobs` extensions
 *   GET  /rollouts/{id}/v1/models
 *   POST /rollouts/{id}/reward                  {reward, info?}: the program's own score (once)
 *   GET  /rollouts/{id}                         status, calls, rows, splits
 *   POST /rollouts/{id}/finish                  ends the rollout; its record (rows with ids) as JSON
 *   GET  /health
 *
 * Recording (src/rollout/gateway-recorder.ts): a call whose messages extend an earlier call's conversation continues
 * that call's row on its exact ids (prompt + sampled, never re-tokenised); any other call starts a new row and the
 * reason is recorded (reasoning removed, system prompt changed, history edited, …).
 *
 * What a program asks that training cannot honour is decided here, in the open:
 * - sampling: a rollout opened with `sampling` (training) samples at that temperature / top-p / top-k whatever the
 *   program sends, since the trainer recomputes log-probs at its own temperature; the override is counted;
 * - seeds: a rollout opened with a `seed` derives each call's seed from it (a program that always sends `seed: 42`
 *   would otherwise make every sample of a GRPO group the same);
 * - `tool_choice` (`auto`, `none`, `required`, a named function) is accepted but not enforced at sampling: the
 *   tools stay in the prompt (dropping them would change the prompt and split the row) and the policy samples
 *   freely, as on-policy training needs; a reply without a call is returned as text;
 * - streaming replies are the finished completion sent as server-sent-event chunks (the engine interface returns
 *   whole completions): role, reasoning, text, one chunk per tool call, the finish reason, usage on request, `[DONE]`.
 * - `n > 1`, text `stop` strings and non-text content parts are 400s.
 *
 * Bad input never touches other rollouts: an invalid body is a 400, an unknown rollout a 404, a call or reward after
 * the rollout ended a 409 `rollout_ended`, a second reward a 409, a prompt over the context a 400
 * `context_length_exceeded`, a conversation past the response budget a 400 `response_budget_exceeded` (the rollout
 * is then truncated and scores 0, as the agent loop's `max_response_tokens`). Each is also kept in the rollout's
 * `errors`.
 */
import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { z } from 'zod';
import type { ChatFormat, CompletionParse } from '../llm/chat-format.ts';
import type { ChatMessage, ToolSpec } from '../llm/messages.ts';
import { CallRefused, RolloutRecorder, type RecordedRow, type SplitReason } from '../rollout/gateway-recorder.ts';
import type { GenerationResult, InferenceEngine } from '../rollout/inference.ts';
import { describeZodError } from './env-protocol.ts';
import { badRequest, conflict, HttpError, notFound } from './http-errors.ts';
import { checkBearer, checkLocalRequest, decodePathParams, isLoopbackHost, readJsonBody, requestPath, sendJson } from './http-util.ts';
import { toChatMessages } from './model-server.ts';
import { ChatMessageBody } from './model-protocol.ts';

export interface GatewaySampling {
  temperature: number;
  topP?: number;
  topK?: number;
}

export interface GatewayOptions {
  engine: InferenceEngine;
  format: ChatFormat;
  /** Longest prompt + completion of one call, in tokens. */
  contextLength: number;
  /** The id `/v1/models` lists; requests may name any model (programs often hard-code one). */
  modelName?: string;
  /** Most tokens after a row's first prompt (the trainer's `rollout.maxResponseTokens`); default no cap. */
  maxResponseTokens?: number;
  /** Cap on one call's new tokens (the trainer's `rollout.maxTokensPerTurn`); default none beyond the budgets. */
  maxTokensPerCall?: number;
  /** Most model calls in one rollout (default 256); more is a 400 and the rollout is truncated. */
  maxCallsPerRollout?: number;
  host?: string;
  port?: number;
  /** A bearer token programs must send as their API key; null/absent: none (loopback only). */
  token?: string | null;
  maxBodyBytes?: number;
  /** Called with each rollout's record when it finishes over HTTP (`POST /rollouts/{id}/finish`). */
  onFinish?: (record: RolloutRecord) => void;
  log?: (line: string) => void;
}

export interface OpenRolloutOptions {
  /** Default: a random id. Ids are path segments: letters, digits, `-`, `_`, `.`. */
  id?: string;
  taskId?: string;
  /** Each call's sampling seed derives from it (call index); absent: the program's seed, if any. */
  seed?: number;
  /** Overrides the program's sampling settings (training); absent: the program's (temperature default 1). */
  sampling?: GatewaySampling;
}

export interface CallLog {
  row: number;
  /** Ids sent to the engine. */
  promptTokens: number;
  /** Of those, ids rendered for this call (the rest were the row's, reused). */
  renderedTokens: number;
  completionTokens: number;
  finishReason: string;
  toolCalls: number;
  parseError: boolean;
  splitReason: SplitReason | null;
  stream: boolean;
  ms: number;
}

export interface RolloutRecord {
  id: string;
  taskId?: string;
  rows: RecordedRow[];
  calls: CallLog[];
  splits: { call: number; reason: SplitReason }[];
  /** The reward the program posted, if it did. */
  reward: { value: number; info?: Record<string, unknown> } | null;
  /** Requests refused (status, code, message), in order. */
  errors: { status: number; code: string; message: string }[];
  /** Set when the gateway cut the rollout short: it scores 0, as the agent loop's truncated episodes. */
  truncated: 'max_response_tokens' | 'max_calls' | 'context_length' | null;
  /** Calls where the program's sampling settings were replaced by the rollout's. */
  samplingOverridden: number;
  startedAt: number;
  endedAt: number;
}

export interface GatewayStats {
  openRollouts: number;
  finishedRollouts: number;
  calls: number;
  renderedTokens: number;
  reusedTokens: number;
  splits: Partial<Record<SplitReason, number>>;
}

export interface GatewayHandle {
  url: string;
  port: number;
  /** Opens a rollout; `baseUrl` is what the program's OpenAI client takes (`…/rollouts/{id}/v1`). */
  openRollout(options?: OpenRolloutOptions): { id: string; baseUrl: string };
  /** Ends a rollout (later calls get 409) and returns its record; waits for its calls in flight to settle. */
  finishRollout(id: string): Promise<RolloutRecord>;
  stats(): GatewayStats;
  close(): Promise<void>;
}

const ID_PATTERN = /^[A-Za-z0-9._-]{1,128}$/;

const toolChoice = z.union([
  z.enum(['auto', 'none', 'required']),
  z.looseObject({ type: z.literal('function'), function: z.looseObject({ name: z.string() }) }),
], 'tool_choice must be "auto", "none", "required" or {"type": "function", "function": {"name": …}}');

export const GatewayChatBody = z.looseObject({
  model: z.string().optional(),
  messages: z.array(ChatMessageBody).min(1),
  tools: z
    .array(z.looseObject({ type: z.literal('function'), function: z.looseObject({ name: z.string().min(1), description: z.string().optional(), parameters: z.record(z.string(), z.unknown()).optional() }) }))
    .nullable()
    .optional(),
  tool_choice: toolChoice.nullable().optional(),
  max_tokens: z.number().int().min(1).nullable().optional(),
  max_completion_tokens: z.number().int().min(1).nullable().optional(),
  temperature: z.number().min(0).max(10).nullable().optional(),
  top_p: z.number().gt(0).max(1).nullable().optional(),
  top_k: z.number().int().nullable().optional(),
  seed: z.number().int().nullable().optional(),
  n: z.number().int().min(1).max(1, 'n > 1 is not supported; send separate requests').nullable().optional(),
  stream: z.boolean().nullable().optional(),
  stream_options: z.looseObject({ include_usage: z.boolean().optional() }).nullable().optional(),
  logprobs: z.boolean().nullable().optional(),
  stop: z.union([z.string(), z.array(z.string())]).nullable().optional(),
});
type GatewayChatBody = z.infer<typeof GatewayChatBody>;

const RewardBody = z.object({ reward: z.number().refine(Number.isFinite, 'reward must be a finite number'), info: z.record(z.string(), z.unknown()).optional() }).strict();

interface Rollout {
  id: string;
  taskId?: string;
  seed?: number;
  sampling?: GatewaySampling;
  recorder: RolloutRecorder;
  calls: CallLog[];
  reward: RolloutRecord['reward'];
  errors: RolloutRecord['errors'];
  truncated: RolloutRecord['truncated'];
  samplingOverridden: number;
  startedAt: number;
  inFlight: Set<Promise<unknown>>;
  callIds: number;
}

function sendOpenAIError(res: ServerResponse, err: HttpError): void {
  const type = err.status >= 500 ? 'server_error' : err.status === 401 ? 'authentication_error' : 'invalid_request_error';
  sendJson(res, err.status, { error: { message: err.message, type, code: err.code, param: null } }, err.headers);
}

/** Tool messages get the name of the call they answer (from the program's own assistant messages), so every format renders them. */
function withToolNames(messages: ChatMessage[]): ChatMessage[] {
  const names = new Map<string, string>();
  return messages.map((m) => {
    for (const c of m.toolCalls ?? []) if (c.id) names.set(c.id, c.name);
    if (m.role === 'tool' && m.name === undefined && m.toolCallId !== undefined && names.has(m.toolCallId)) return { ...m, name: names.get(m.toolCallId) };
    return m;
  });
}

export async function startGateway(o: GatewayOptions): Promise<GatewayHandle> {
  const token = o.token ?? null;
  const maxBody = o.maxBodyBytes ?? 8 << 20;
  const maxCalls = o.maxCallsPerRollout ?? 256;
  const modelName = o.modelName ?? 'policy';
  const localOnly = token === null && isLoopbackHost(o.host ?? '127.0.0.1');
  const log = o.log ?? (() => {});
  const rollouts = new Map<string, Rollout>();
  /** Ids of finished rollouts (so a late call gets 409, not 404), oldest dropped past 100,000. */
  const ended = new Set<string>();
  const stats: GatewayStats = { openRollouts: 0, finishedRollouts: 0, calls: 0, renderedTokens: 0, reusedTokens: 0, splits: {} };
  let closing = false;
  let url = '';

  function openRollout(options: OpenRolloutOptions = {}): { id: string; baseUrl: string } {
    const id = options.id ?? `r-${randomBytes(9).toString('base64url')}`;
    if (!ID_PATTERN.test(id)) throw new Error(`rollout id ${JSON.stringify(id)}: use 1–128 letters, digits, '-', '_' or '.'`);
    if (rollouts.has(id) || ended.has(id)) throw new Error(`rollout id ${JSON.stringify(id)} is already in use`);
    rollouts.set(id, {
      id, taskId: options.taskId, seed: options.seed, sampling: options.sampling,
      recorder: new RolloutRecorder(o.format, { contextLength: o.contextLength, maxResponseTokens: o.maxResponseTokens }),
      calls: [], reward: null, errors: [], truncated: null, samplingOverridden: 0, startedAt: Date.now(), inFlight: new Set(), callIds: 0,
    });
    stats.openRollouts++;
    return { id, baseUrl: `${url}/rollouts/${id}/v1` };
  }

  async function finishRollout(id: string): Promise<RolloutRecord> {
    const r = rollouts.get(id);
    if (!r) throw new Error(ended.has(id) ? `rollout ${id} has already finished` : `no rollout ${id}`);
    rollouts.delete(id);
    ended.add(id);
    if (ended.size > 100_000) ended.delete(ended.values().next().value!);
    stats.openRollouts--;
    stats.finishedRollouts++;
    // Calls still sampling are discarded at commit (the rollout is over); wait so their rows are closed.
    await Promise.allSettled([...r.inFlight]);
    const rows = r.recorder.rowsForTraining();
    for (let i = 0; i < r.recorder.rowCount; i++) o.engine.endSession?.(`${id}#${i}`);
    return {
      id, taskId: r.taskId, rows, calls: r.calls, splits: [...r.recorder.splitLog()], reward: r.reward, errors: r.errors,
      truncated: r.truncated, samplingOverridden: r.samplingOverridden, startedAt: r.startedAt, endedAt: Date.now(),
    };
  }

  function rolloutOf(id: string): Rollout {
    const r = rollouts.get(id);
    if (r) return r;
    if (ended.has(id)) throw conflict('rollout_ended', `Rollout ${id} has ended; it takes no more calls or rewards`);
    throw notFound('unknown_rollout', `No rollout ${id}: open one with POST /rollouts (or the runner does it for you) and use its base_url`);
  }

  function refuse(r: Rollout, err: HttpError): HttpError {
    r.errors.push({ status: err.status, code: err.code, message: err.message });
    return err;
  }

  /** One chat completion of rollout `r`; writes the reply (JSON or SSE) itself. */
  async function chat(r: Rollout, raw: unknown, res: ServerResponse, gone: AbortSignal): Promise<void> {
    const t0 = performance.now();
    const parsed = GatewayChatBody.safeParse(raw ?? {});
    if (!parsed.success) throw refuse(r, badRequest('invalid_body', `Invalid /v1/chat/completions body: ${describeZodError(parsed.error)}`));
    const b: GatewayChatBody = parsed.data;
    const stops = b.stop === null || b.stop === undefined ? [] : Array.isArray(b.stop) ? b.stop : [b.stop];
    if (stops.length) throw refuse(r, badRequest('unsupported_parameter', 'text stop strings are not supported by the gateway (the chat format decides where a turn ends)'));
    if (r.calls.length >= maxCalls) {
      r.truncated ??= 'max_calls';
      throw refuse(r, badRequest('too_many_calls', `Rollout ${r.id} has made ${maxCalls} model calls, the most one rollout may make (maxCallsPerRollout); it is truncated and scores 0`));
    }
    const tools = (b.tools ?? []) as ToolSpec[];
    let messages: ChatMessage[];
    try {
      messages = withToolNames(toChatMessages(b.messages));
    } catch (err) {
      throw refuse(r, err instanceof HttpError ? err : badRequest('invalid_messages', (err as Error).message));
    }
    let prepared;
    try {
      prepared = r.recorder.prepare(messages, tools);
    } catch (err) {
      if (err instanceof CallRefused) {
        r.truncated ??= err.code === 'context_length_exceeded' ? 'context_length' : 'max_response_tokens';
        throw refuse(r, badRequest(err.code, err.message));
      }
      throw refuse(r, badRequest('invalid_messages', `The conversation cannot be rendered in ${o.format.name}: ${(err as Error).message}`));
    }
    const asked = b.max_completion_tokens ?? b.max_tokens ?? Infinity;
    const maxNewTokens = Math.min(asked, o.maxTokensPerCall ?? Infinity, prepared.room);
    const own = { temperature: b.temperature ?? 1, topP: b.top_p ?? undefined, topK: b.top_k !== null && b.top_k !== undefined && b.top_k > 0 ? b.top_k : undefined };
    const sampling = r.sampling ?? own;
    if (r.sampling && ((b.temperature ?? null) !== null && b.temperature !== r.sampling.temperature || (b.top_p ?? null) !== null && b.top_p !== (r.sampling.topP ?? 1))) r.samplingOverridden++;
    const callIndex = r.callIds++;
    const seed = r.seed !== undefined ? (r.seed * 1_000_003 + callIndex * 7919) % 2_147_483_647 : (b.seed ?? undefined);
    let result: GenerationResult;
    const job = o.engine.generate([{ tokens: prepared.tokens, maxNewTokens, stop: [...o.format.stopTokenIds], ...sampling, seed, session: `${r.id}#${prepared.row}` }]);
    r.inFlight.add(job);
    try {
      result = (await job)[0];
    } catch (err) {
      r.recorder.commit(prepared, null);
      throw refuse(r, new HttpError(500, 'generation_failed', `Generation failed: ${(err as Error).message}`));
    } finally {
      r.inFlight.delete(job);
    }
    if (!rollouts.has(r.id)) {
      r.recorder.commit(prepared, null);
      throw conflict('rollout_ended', `Rollout ${r.id} ended while this call was sampling; its completion is discarded`);
    }
    if (gone.aborted) {
      r.recorder.commit(prepared, null);
      return;
    }
    const parse = r.recorder.commit(prepared, result)!;
    const reply = replyFor(r, parse);
    const finish = result.finishReason === 'length' ? 'length' : reply.toolCalls.length ? 'tool_calls' : result.finishReason === 'aborted' ? 'abort' : 'stop';
    const usage = { prompt_tokens: prepared.tokens.length, completion_tokens: result.tokens.length, total_tokens: prepared.tokens.length + result.tokens.length };
    r.calls.push({
      row: prepared.row, promptTokens: prepared.tokens.length, renderedTokens: prepared.renderedTokens, completionTokens: result.tokens.length,
      finishReason: finish, toolCalls: reply.toolCalls.length, parseError: !parse.ok, splitReason: prepared.splitReason, stream: b.stream === true, ms: performance.now() - t0,
    });
    stats.calls++;
    stats.renderedTokens += prepared.renderedTokens;
    stats.reusedTokens += prepared.tokens.length - prepared.renderedTokens;
    if (prepared.splitReason) stats.splits[prepared.splitReason] = (stats.splits[prepared.splitReason] ?? 0) + 1;
    const id = `chatcmpl-${randomBytes(12).toString('hex')}`;
    const created = Math.floor(Date.now() / 1000);
    const model = b.model ?? modelName;
    const extras = { rollout_id: r.id, row: prepared.row, split_reason: prepared.splitReason, ...(parse.ok ? {} : { parse_error: { kind: parse.kind, message: parse.message } }) };
    const logprobs = b.logprobs ? { content: result.tokens.map((t, i) => ({ token: `token_id:${t}`, logprob: result.logprobs[i], bytes: null, top_logprobs: [] })) } : null;
    if (b.stream) {
      res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache', connection: 'keep-alive' });
      const chunk = (delta: Record<string, unknown>, finishReason: string | null = null, more: Record<string, unknown> = {}) =>
        res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason, ...more }] })}\n\n`);
      chunk({ role: 'assistant', content: '' });
      if (reply.reasoning !== undefined) chunk({ reasoning_content: reply.reasoning });
      if (reply.content) chunk({ content: reply.content });
      reply.toolCalls.forEach((c, index) => chunk({ tool_calls: [{ index, ...c }] }));
      chunk({}, finish, { token_ids: result.tokens, logprobs, longrun: extras });
      if (b.stream_options?.include_usage) res.write(`data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage })}\n\n`);
      res.end('data: [DONE]\n\n');
      return;
    }
    const message: Record<string, unknown> = {
      role: 'assistant',
      content: reply.content ?? (reply.toolCalls.length ? null : ''),
      ...(reply.reasoning !== undefined ? { reasoning_content: reply.reasoning } : {}),
      ...(reply.toolCalls.length ? { tool_calls: reply.toolCalls } : {}),
    };
    sendJson(res, 200, {
      id, object: 'chat.completion', created, model, prompt_token_ids: prepared.tokens,
      choices: [{ index: 0, message, finish_reason: finish, token_ids: result.tokens, logprobs, longrun: extras }],
      usage,
    });
  }

  /** The OpenAI message a completion stands for: exactly what the recorder keys the row on (recorder.replyMessage). */
  function replyFor(r: Rollout, parse: CompletionParse): { content?: string; reasoning?: string; toolCalls: { id: string; type: 'function'; function: { name: string; arguments: string } }[] } {
    if (!parse.ok) return { content: parse.text, toolCalls: [] };
    const toolCalls = (parse.toolCalls ?? []).map((c, i) => ({ id: `call_${r.id.slice(-8)}_${r.calls.length}_${i}`, type: 'function' as const, function: { name: c.name, arguments: JSON.stringify(c.arguments) } }));
    return { content: parse.content, reasoning: parse.reasoning, toolCalls };
  }

  function summary(r: Rollout): unknown {
    return {
      rollout_id: r.id, task_id: r.taskId ?? null, status: 'open', calls: r.calls.length, rows: r.recorder.rowsForTraining().length,
      splits: r.recorder.splitLog(), reward: r.reward, errors: r.errors, truncated: r.truncated,
    };
  }

  async function route(req: IncomingMessage, res: ServerResponse, path: string, gone: AbortSignal): Promise<unknown> {
    const method = req.method ?? '';
    const parts = path.split('/').filter(Boolean);
    if (path === '/health') return { status: 'ok', model: modelName, open_rollouts: stats.openRollouts };
    if (parts[0] !== 'rollouts') throw notFound('not_found', `No route ${method} ${path}: agent programs use ${url}/rollouts/{id}/v1 as their base URL`);
    if (parts.length === 1) {
      if (method !== 'POST') throw new HttpError(405, 'method_not_allowed', `${method} is not allowed on /rollouts`, { allow: 'POST' });
      const body = (await readJsonBody(req, maxBody)) ?? {};
      const p = z.object({ task_id: z.string().optional(), seed: z.number().int().min(0).optional(), id: z.string().regex(ID_PATTERN).optional() }).strict().safeParse(body);
      if (!p.success) throw badRequest('invalid_body', `Invalid /rollouts body: ${describeZodError(p.error)}`);
      try {
        const { id, baseUrl } = openRollout({ id: p.data.id, taskId: p.data.task_id, seed: p.data.seed });
        return { rollout_id: id, base_url: baseUrl };
      } catch (err) {
        throw conflict('rollout_exists', (err as Error).message);
      }
    }
    const [id] = decodePathParams([parts[1]]);
    const rest = parts.slice(2).join('/');
    if (rest === 'finish' && method === 'POST') {
      rolloutOf(id);
      const record = await finishRollout(id);
      o.onFinish?.(record);
      return record;
    }
    const r = rolloutOf(id);
    const allow = (m: string) => {
      if (method !== m) throw new HttpError(405, 'method_not_allowed', `${method} is not allowed on ${path}`, { allow: m });
    };
    switch (rest) {
      case '':
        allow('GET');
        return summary(r);
      case 'reward': {
        allow('POST');
        const p = RewardBody.safeParse(await readJsonBody(req, maxBody));
        if (!p.success) throw refuse(r, badRequest('invalid_body', `Invalid reward body (want {"reward": number, "info"?: object}): ${describeZodError(p.error)}`));
        if (r.reward !== null) throw refuse(r, conflict('reward_already_posted', `Rollout ${id} already has a reward (${r.reward.value}); a rollout is scored once`));
        r.reward = { value: p.data.reward, ...(p.data.info ? { info: p.data.info } : {}) };
        return { ok: true };
      }
      case 'v1/models':
        allow('GET');
        return { object: 'list', data: [{ id: modelName, object: 'model', created: 0, owned_by: 'longrun', max_model_len: o.contextLength }] };
      case 'v1/chat/completions': {
        allow('POST');
        let raw: unknown;
        try {
          raw = await readJsonBody(req, maxBody);
        } catch (err) {
          if (err instanceof HttpError && err.status !== 499) throw refuse(r, err);
          throw err;
        }
        await chat(r, raw, res, gone);
        return undefined;
      }
      default:
        throw notFound('not_found', `No route ${method} ${path} (a rollout has v1/chat/completions, v1/models, reward, finish)`);
    }
  }

  const server = createServer((req, res) => {
    res.on('error', () => {});
    void (async () => {
      try {
        if (closing) throw new HttpError(503, 'shutting_down', 'The gateway is shutting down');
        if (localOnly) checkLocalRequest(req);
        const path = requestPath(req);
        if (token !== null && path !== '/health') checkBearer(req, token);
        const gone = new AbortController();
        res.on('close', () => {
          if (!res.writableFinished) gone.abort();
        });
        const body = await route(req, res, path, gone.signal);
        if (body !== undefined) sendJson(res, 200, body);
      } catch (err) {
        req.resume();
        if (err instanceof HttpError) {
          if (err.status === 499) return;
          sendOpenAIError(res, err);
        } else {
          log(`500 ${req.method} ${req.url}: ${(err as Error)?.stack ?? String(err)}`);
          sendOpenAIError(res, new HttpError(500, 'internal_error', `Internal error: ${(err as Error)?.message ?? String(err)}`));
        }
      }
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.port ?? 0, o.host ?? '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const host = o.host ?? '127.0.0.1';
  url = `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
  log(`longrun gateway listening on ${url} (chat format ${o.format.name}); programs use ${url}/rollouts/{id}/v1`);
  return {
    url,
    port,
    openRollout,
    finishRollout,
    stats: () => ({ ...stats, splits: { ...stats.splits } }),
    close: async () => {
      closing = true;
      const stopped = new Promise<void>((r) => server.close(() => r()));
      server.closeIdleConnections();
      setTimeout(() => server.closeAllConnections(), 2000).unref();
      await stopped;
    },
  };
}
