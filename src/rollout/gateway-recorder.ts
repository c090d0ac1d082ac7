/**
 * Token-exact recording of an agent program's model calls (the trajectory gateway, src/serve/gateway.ts).
 *
 * A program sends whole conversations (OpenAI chat messages); the policy is trained on token ids. For each call the
 * recorder decides which training row the call belongs to and which ids the engine sees:
 *
 * - A call whose messages extend a row's conversation (the row's messages, its last sampled reply included, are a
 *   prefix of the call's messages, with the same tools) continues that row: only the new messages are rendered (the
 *   chat format's append-only session, src/llm/session.ts) and appended after the row's ids, and the engine is sent
 *   the row's exact ids. The model's own output is never re-tokenised: the row holds the ids it sampled. The row is
 *   then one training sequence with mask 1 on sampled ids and 0 on everything else, as the agent loop's are.
 * - Any other call starts a new row from a full rendering of its messages, and the row records why (`SplitReason`):
 *   the program dropped the reasoning of an earlier reply (Qwen3's template drops earlier `<think>` blocks, so turn k's
 *   prompt is not a prefix of turn k+1's: NVIDIA-NeMo/RL#2821), changed the system prompt or the tools, rewrote one of
 *   the model's replies or another earlier message (chat templates that are not append-only: volcengine/verl#6719,
 *   #6501), cut its history, asked again from an earlier point (a retry), or opened an unrelated conversation.
 *   Training on a re-rendered history would score ids the model never sampled (huggingface/trl#5224); a new row
 *   keeps every row exact.
 *
 * Messages are compared by what they say (role, text, reasoning, tool names and arguments), not by how a client
 * serialises them: `content: null` and `""` are the same, tool-call ids are not compared (the formats do not render
 * them), arguments are compared as JSON values.
 */
import type { ChatFormat, ChatSession, CompletionParse } from '../llm/chat-format.ts';
import { parsedToMessage } from '../llm/chat-format.ts';
import type { ChatMessage, ToolSpec } from '../llm/messages.ts';
import type { GenerationResult } from './inference.ts';

export const SPLIT_REASONS = [
  'tools_changed',
  'system_changed',
  'reasoning_removed',
  'assistant_rewritten',
  'history_edited',
  'history_truncated',
  'branched',
  'parallel_call',
  'new_conversation',
  'render_failed',
] as const;
/** Why a call did not continue an earlier row (see the file comment). */
export type SplitReason = (typeof SPLIT_REASONS)[number];

/** One training row: a prompt and everything after it, as the trainer's `Trajectory` holds them. */
export interface RecordedRow {
  promptIds: number[];
  responseIds: number[];
  /** 1 on sampled ids, 0 on rendered ones. */
  responseMask: number[];
  /** The engine's log-probs of the sampled ids, 0 elsewhere. */
  rolloutLogprobs: number[];
  /** Model calls sampled into this row. */
  calls: number;
  /** Tool calls the model made in this row. */
  toolCalls: number;
  /** Completions the chat format could not parse. */
  parseErrors: number;
  /** Why this row was started instead of continuing an earlier one (null: the rollout's first row). */
  splitReason: SplitReason | null;
  /** The row's conversation: the messages rendered, the sampled replies as parsed. */
  messages: ChatMessage[];
}

/** A prepared call: the ids to send to the engine, and where the reply goes. */
export interface PreparedCall {
  row: number;
  tokens: readonly number[];
  /** Ids rendered for this call (the new messages + the generation prompt; the whole prompt for a new row). */
  renderedTokens: number;
  /** Most new tokens this row may still take (its response budget). */
  room: number;
  splitReason: SplitReason | null;
  /** Tool names the reply's calls are checked against. */
  toolNames: string[];
}

interface Row {
  session: ChatSession;
  /** Canonical keys of the row's conversation, one per message. */
  keys: string[];
  toolsKey: string;
  ids: number[];
  mask: number[];
  logprobs: number[];
  promptLength: number;
  /** Length of `ids` after the last appended completion (the trainable part ends here). */
  committed: number;
  calls: number;
  toolCalls: number;
  parseErrors: number;
  splitReason: SplitReason | null;
  /** A call is being sampled on this row. */
  busy: boolean;
  /** No further call may extend this row (a call was abandoned mid-way). */
  closed: boolean;
}

export interface RecorderOptions {
  /** Longest prompt + completion of one call, in tokens. */
  contextLength: number;
  /** Most tokens after a row's first prompt (the trainer's `rollout.maxResponseTokens`); default no cap. */
  maxResponseTokens?: number;
}

function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object') {
    return Object.fromEntries(Object.keys(value as object).sort().map((k) => [k, canonical((value as Record<string, unknown>)[k])]));
  }
  return value;
}

/** What a message says, as a string: equal keys render to equal ids. */
export function messageKey(m: ChatMessage): string {
  const calls = (m.toolCalls ?? []).map((c) => [c.name, canonical(c.arguments)]);
  return JSON.stringify([m.role, m.content, m.reasoning ?? null, calls, m.role === 'tool' ? (m.name ?? null) : null]);
}

const toolsKeyOf = (tools: readonly ToolSpec[]) => JSON.stringify(canonical(tools));

/** A budget or context overflow: the HTTP layer turns it into a 400 and the rollout counts as truncated. */
export class CallRefused extends Error {
  constructor(readonly code: 'context_length_exceeded' | 'response_budget_exceeded', message: string) {
    super(message);
    this.name = 'CallRefused';
  }
}

/** Records one rollout's calls into rows. Not thread-safe across awaits: `prepare` and `commit` are synchronous. */
export class RolloutRecorder {
  private readonly rows: Row[] = [];
  private readonly splits: { call: number; reason: SplitReason }[] = [];
  private callCount = 0;

  constructor(
    private readonly format: ChatFormat,
    private readonly options: RecorderOptions,
  ) {}

  get calls(): number {
    return this.callCount;
  }

  /** Rows started so far, sampled into or not (a row's engine session is `<rollout>#<index>`). */
  get rowCount(): number {
    return this.rows.length;
  }

  /**
   * Chooses the call's row (continuing one, or a new one with its reason) and returns the ids to sample after.
   * Throws `CallRefused` when the prompt does not fit (the row then takes no more calls).
   */
  prepare(messages: readonly ChatMessage[], tools: readonly ToolSpec[]): PreparedCall {
    const keys = messages.map(messageKey);
    const toolsKey = toolsKeyOf(tools);
    const toolNames = tools.map((t) => t.function.name);
    const call = this.callCount++;
    // The longest row whose conversation the call extends (newest first on ties).
    let best = -1;
    for (let i = this.rows.length - 1; i >= 0; i--) {
      const r = this.rows[i];
      if (r.closed || r.busy || r.toolsKey !== toolsKey || r.keys.length > keys.length) continue;
      if (!r.keys.every((k, j) => k === keys[j])) continue;
      if (best < 0 || r.keys.length > this.rows[best].keys.length) best = i;
    }
    if (best >= 0) {
      const row = this.rows[best];
      const before = row.ids.length;
      try {
        const delta = [...row.session.append(...messages.slice(row.keys.length)), ...row.session.appendGenerationPrompt()];
        row.keys = keys;
        this.push(row, delta);
      } catch {
        // The format cannot append these messages to this row (e.g. hermes tool results split over two calls).
        row.closed = true;
        return this.startRow(messages, keys, tools, toolsKey, toolNames, 'render_failed', call);
      }
      return this.reserve(best, row, row.ids.length - before, toolNames, null);
    }
    return this.startRow(messages, keys, tools, toolsKey, toolNames, this.rows.length === 0 ? null : this.classify(keys, messages, toolsKey), call);
  }

  private startRow(messages: readonly ChatMessage[], keys: string[], tools: readonly ToolSpec[], toolsKey: string, toolNames: string[], reason: SplitReason | null, call: number): PreparedCall {
    const session = this.format.startSession({ messages, tools });
    session.appendGenerationPrompt();
    const ids = [...session.tokens];
    const row: Row = {
      session, keys, toolsKey, ids, mask: ids.map(() => 0), logprobs: ids.map(() => 0), promptLength: ids.length, committed: ids.length,
      calls: 0, toolCalls: 0, parseErrors: 0, splitReason: reason, busy: false, closed: false,
    };
    this.rows.push(row);
    if (reason !== null) this.splits.push({ call, reason });
    return this.reserve(this.rows.length - 1, row, ids.length, toolNames, reason);
  }

  private push(row: Row, ids: readonly number[]): void {
    for (const id of ids) {
      row.ids.push(id);
      row.mask.push(0);
      row.logprobs.push(0);
    }
  }

  private reserve(index: number, row: Row, rendered: number, toolNames: string[], reason: SplitReason | null): PreparedCall {
    const contextRoom = this.options.contextLength - row.ids.length;
    const budget = this.options.maxResponseTokens;
    const budgetRoom = budget === undefined ? Infinity : budget - (row.ids.length - row.promptLength);
    if (contextRoom < 1) {
      row.closed = true;
      throw new CallRefused('context_length_exceeded', `The prompt has ${row.ids.length} tokens; the model's context is ${this.options.contextLength}`);
    }
    if (budgetRoom < 1) {
      row.closed = true;
      throw new CallRefused('response_budget_exceeded', `This rollout's conversation has used its response budget of ${budget} tokens after its first prompt (the trainer's rollout.maxResponseTokens); the rollout ends here and scores 0`);
    }
    row.busy = true;
    return { row: index, tokens: row.ids.slice(), renderedTokens: rendered, room: Math.min(contextRoom, budgetRoom), splitReason: reason, toolNames };
  }

  /** Why a call that extends no row does not: measured against the row with the same tools it shares the longest prefix with. */
  private classify(keys: readonly string[], messages: readonly ChatMessage[], toolsKey: string): SplitReason {
    const candidates = this.rows.filter((r) => r.toolsKey === toolsKey);
    if (candidates.length === 0) return 'tools_changed';
    let row = candidates[candidates.length - 1];
    let shared = -1;
    for (let i = candidates.length - 1; i >= 0; i--) {
      const r = candidates[i];
      let j = 0;
      while (j < r.keys.length && j < keys.length && r.keys[j] === keys[j]) j++;
      if (j > shared) {
        shared = j;
        row = r;
      }
    }
    const ours = row.session.messages[shared];
    if (shared === row.keys.length) return row.busy ? 'parallel_call' : 'branched';
    // Asked again from where the model was asked before (a retry, or several samples of one step).
    if (shared === keys.length) return ours?.role === 'assistant' ? 'branched' : 'history_truncated';
    const theirs = messages[shared];
    if (shared === 0) return ours?.role === 'system' && theirs.role === 'system' && keys[1] !== undefined && keys[1] === row.keys[1] ? 'system_changed' : 'new_conversation';
    if (ours?.role === 'system' || theirs.role === 'system') return 'system_changed';
    if (ours?.role === 'assistant' && theirs.role === 'assistant') {
      if (ours.reasoning !== undefined && theirs.reasoning === undefined && messageKey({ ...theirs, reasoning: ours.reasoning }) === row.keys[shared]) return 'reasoning_removed';
      return 'assistant_rewritten';
    }
    // A changed or dropped message that is neither the system prompt nor the model's (a tool result, a user turn).
    return 'history_edited';
  }

  /**
   * Appends the sampled ids (verbatim) to the call's row and returns their parse, or, with `result` null (the call
   * failed or its client left), closes the row at its last completion.
   */
  commit(prepared: PreparedCall, result: GenerationResult | null): CompletionParse | null {
    const row = this.rows[prepared.row];
    row.busy = false;
    if (result === null) {
      row.closed = true;
      return null;
    }
    if (result.logprobs.length !== result.tokens.length) throw new Error(`engine returned ${result.tokens.length} tokens but ${result.logprobs.length} log-probs`);
    const parse = row.session.appendGenerated(result.tokens);
    // The session parses against the first call's tools; the caller's tools are the same (tools are part of the key).
    for (let i = 0; i < result.tokens.length; i++) {
      row.ids.push(result.tokens[i]);
      row.mask.push(1);
      row.logprobs.push(result.logprobs[i]);
    }
    row.committed = row.ids.length;
    row.calls++;
    if (parse.ok) row.toolCalls += parse.toolCalls?.length ?? 0;
    else row.parseErrors++;
    // A completion cut by the token cap stays as sampled: a later call continues after its exact ids.
    row.keys = [...row.keys, messageKey(replyMessage(parse))];
    return parse;
  }

  /** The rows so far with at least one sampled completion, cut at their last completion. */
  rowsForTraining(): RecordedRow[] {
    return this.rows.filter((r) => r.calls > 0).map((r) => ({
      promptIds: r.ids.slice(0, r.promptLength),
      responseIds: r.ids.slice(r.promptLength, r.committed),
      responseMask: r.mask.slice(r.promptLength, r.committed),
      rolloutLogprobs: r.logprobs.slice(r.promptLength, r.committed),
      calls: r.calls,
      toolCalls: r.toolCalls,
      parseErrors: r.parseErrors,
      splitReason: r.splitReason,
      messages: [...r.session.messages],
    }));
  }

  /** Every split so far: the call index and its reason. */
  splitLog(): readonly { call: number; reason: SplitReason }[] {
    return this.splits;
  }
}

/** The assistant message a completion stands for in the program's history (what the gateway returns). */
export function replyMessage(parse: CompletionParse): ChatMessage {
  // An unparseable completion is returned as its decoded text (no reasoning), so the program echoes exactly that.
  return parse.ok ? parsedToMessage(parse) : { role: 'assistant', content: parse.text };
}
