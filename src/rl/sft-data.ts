/**
 * SFT data: expert trajectories (τ²-style message lists) → token sequences with a per-token loss mask.
 *
 * A trajectory is rendered the way the agent loop sees it at rollout time (token-in/token-out, notes §3.2):
 * a `ChatSession` starts with the system prompt, tools and the opening messages (the τ² greeting and the first user
 * message), then each later message is appended in order. An assistant message is appended as the model would
 * produce it — the generation prompt (`<|start|>assistant` / `<|im_start|>assistant\n`, mask 0, it belongs to the
 * prompt), then the ids of `format.renderCompletion(message)` verbatim (mask 1: content, reasoning, tool calls and
 * the stop token). System, user and tool tokens get mask 0 (notes §3.4). Harmony samples at most one tool call per
 * completion (it stops at `<|call|>`), so an assistant message with k calls becomes k consecutive completions.
 *
 * Over-long trajectories: `overflow: 'truncate'` keeps the HEAD (the first `maxSeqLen` tokens: system prompt and
 * the earliest turns; the tail is cut, possibly mid-turn); `'drop'` drops them. Either way they are counted.
 */
import { readFileSync } from 'node:fs';
import { z } from 'zod';
import { BpeTokenizer, type ChatFormat, type ChatMessage, type ConversationStart, type ToolCall, type ToolSpec } from '../llm/index.ts';
import { HarmonyRenderer } from '../llm/harmony.ts';
import { HermesRenderer } from '../llm/hermes.ts';
import { renderSegments } from '../llm/session.ts';
import type { SftDocument } from './packing.ts';

const ToolCallSchema = z.object({
  id: z.string().optional(),
  name: z.string().min(1),
  arguments: z.record(z.string(), z.unknown()),
  requestor: z.enum(['assistant', 'user']).optional(),
});

/** A message as τ² writes it (content may be null, tool results carry the call `id`) or as src/llm's ChatMessage. */
const MessageSchema = z.object({
  role: z.enum(['system', 'user', 'assistant', 'tool']),
  content: z.string().nullable().optional(),
  reasoning: z.string().optional(),
  toolCalls: z.array(ToolCallSchema).nullable().optional(),
  id: z.string().optional(),
  toolCallId: z.string().optional(),
  name: z.string().optional(),
  requestor: z.enum(['assistant', 'user']).optional(),
});

const ToolSpecSchema = z.object({
  type: z.literal('function'),
  function: z.object({ name: z.string().min(1), description: z.string().optional(), parameters: z.record(z.string(), z.unknown()).optional() }),
});

/** One line of a trajectories JSONL (`longrun rollout` output); extra fields are ignored. */
export const TrajectoryRecordSchema = z.object({
  messages: z.array(MessageSchema).min(1),
  systemPrompt: z.string().optional(),
  tools: z.array(ToolSpecSchema).optional(),
  taskId: z.string().optional(),
  reward: z.number().optional(),
  /**
   * Indices into `messages` of assistant messages that are context, not demonstrations (e.g. a demonstrator's
   * deliberate slips before a recovery): rendered like any other, with no loss on their tokens.
   */
  contextOnly: z.array(z.number().int().min(0)).optional(),
});

export type TrajectoryRecord = z.infer<typeof TrajectoryRecordSchema>;
type RecordMessage = TrajectoryRecord['messages'][number];

export interface ConversationDefaults {
  /** System prompt for records without one of their own (e.g. τ²'s agent prompt with the domain policy). */
  systemPrompt?: string;
  /** Tool schemas for records without their own. */
  tools?: readonly ToolSpec[];
}

/** Parses and validates a trajectories JSONL file; the error names the line. */
export function readTrajectoriesJsonl(path: string): TrajectoryRecord[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new Error(`cannot read trajectories from ${path}: ${(error as Error).message}`, { cause: error });
  }
  return parseTrajectoriesJsonl(text, path);
}

export function parseTrajectoriesJsonl(text: string, source = 'input'): TrajectoryRecord[] {
  const out: TrajectoryRecord[] = [];
  text.split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    let json: unknown;
    try {
      json = JSON.parse(line);
    } catch (error) {
      throw new Error(`${source}:${i + 1}: not valid JSON (${(error as Error).message})`, { cause: error });
    }
    const parsed = TrajectoryRecordSchema.safeParse(json);
    if (!parsed.success) throw new Error(`${source}:${i + 1}: not a trajectory record:\n${z.prettifyError(parsed.error)}`);
    out.push(parsed.data);
  });
  if (out.length === 0) throw new Error(`${source}: no trajectories (the file is empty)`);
  return out;
}

/**
 * The agent's view of a trajectory as chat messages: user tool calls and their results (not the agent's) are left
 * out, null contents become '', tool results get the name of the call they answer.
 */
export function toChatConversation(record: TrajectoryRecord, defaults: ConversationDefaults = {}): { messages: ChatMessage[]; tools?: ToolSpec[]; contextOnly?: Set<number> } {
  const callNames = new Map<string, string>();
  const messages: ChatMessage[] = [];
  const contextOnlyIn = new Set(record.contextOnly ?? []);
  const contextOnly = new Set<number>();
  const systemPrompt = record.systemPrompt ?? defaults.systemPrompt;
  if (systemPrompt !== undefined && record.messages[0].role !== 'system') messages.push({ role: 'system', content: systemPrompt });
  (record.messages as RecordMessage[]).forEach((m, index) => {
    if (m.requestor === 'user') return;
    if (contextOnlyIn.has(index)) {
      if (m.role !== 'assistant') throw new Error(`contextOnly names message ${index}, a ${m.role} message; only assistant messages can be context-only`);
      contextOnly.add(messages.length);
    }
    if (m.role === 'assistant') {
      const msg: ChatMessage = { role: 'assistant', content: m.content ?? '' };
      if (m.reasoning !== undefined) msg.reasoning = m.reasoning;
      const calls = (m.toolCalls ?? []).filter((c) => c.requestor !== 'user');
      if (calls.length > 0) {
        msg.toolCalls = calls.map((c): ToolCall => ({ ...(c.id !== undefined ? { id: c.id } : {}), name: c.name, arguments: c.arguments }));
        for (const c of calls) if (c.id !== undefined) callNames.set(c.id, c.name);
      }
      messages.push(msg);
    } else if (m.role === 'tool') {
      const callId = m.toolCallId ?? m.id;
      const msg: ChatMessage = { role: 'tool', content: m.content ?? '' };
      if (callId !== undefined) msg.toolCallId = callId;
      const name = m.name ?? (callId !== undefined ? callNames.get(callId) : undefined);
      if (name !== undefined) msg.name = name;
      messages.push(msg);
    } else if (m.role === 'user') {
      if (m.content === null || m.content === undefined) return;
      messages.push({ role: 'user', content: m.content });
    } else {
      messages.push({ role: 'system', content: m.content ?? '' });
    }
  });
  for (const i of contextOnlyIn) if (i >= record.messages.length) throw new Error(`contextOnly names message ${i}, but the record has ${record.messages.length} messages`);
  const tools = record.tools ?? defaults.tools;
  return { messages, ...(tools ? { tools: [...tools] } : {}), ...(contextOnly.size > 0 ? { contextOnly } : {}) };
}

export interface RenderedTrajectory {
  tokens: number[];
  /** 1 on the tokens the model generates (assistant completions), 0 elsewhere. */
  lossMask: number[];
  /** The completion ids of every assistant turn in the loss, in order (what the mask marks). */
  completions: number[][];
}

/** Harmony completions hold one tool call each, so a message with several calls is split into several turns. */
function completionTurns(format: ChatFormat, message: ChatMessage): ChatMessage[] {
  const calls = message.toolCalls ?? [];
  if (format.name !== 'harmony' || calls.length <= 1) return [message];
  return calls.map((call, i): ChatMessage => {
    const turn: ChatMessage = i === 0 ? { ...message, toolCalls: [call] } : { role: 'assistant', content: '', toolCalls: [call] };
    if (i > 0) delete turn.reasoning;
    return turn;
  });
}

/**
 * Renders one conversation with its loss mask. `trainOnGreeting` (default false): assistant messages before the
 * first user message (τ²'s fixed greeting) are part of the prompt, as in the agent loop, and carry no loss.
 * `conversation.contextOnly`: indices of assistant messages rendered as completions with no loss (context only).
 */
export function renderTrajectory(format: ChatFormat, conversation: ConversationStart & { contextOnly?: ReadonlySet<number> }, options: { trainOnGreeting?: boolean } = {}): RenderedTrajectory {
  const msgs = conversation.messages;
  let opening = 0;
  if (msgs[0]?.role === 'system') opening = 1;
  if (!options.trainOnGreeting) {
    const firstUser = msgs.findIndex((m) => m.role === 'user');
    opening = firstUser >= 0 ? firstUser + 1 : opening;
  }
  const session = format.startSession({ messages: msgs.slice(0, opening), tools: conversation.tools });
  const tokens = [...session.tokens];
  const lossMask: number[] = tokens.map(() => 0);
  const completions: number[][] = [];
  const push = (ids: readonly number[], m: number) => {
    for (const id of ids) { tokens.push(id); lossMask.push(m); }
  };
  for (let i = opening; i < msgs.length; i++) {
    const message = msgs[i];
    if (message.role === 'assistant') {
      for (const turn of completionTurns(format, message)) {
        push(session.appendGenerationPrompt(), 0);
        const ids = format.renderCompletion(turn);
        session.appendGenerated(ids);
        const contextOnly = conversation.contextOnly?.has(i) ?? false;
        push(ids, contextOnly ? 0 : 1);
        if (!contextOnly) completions.push(ids);
      }
    } else {
      // Consecutive tool results go in one append (hermes renders them as one user turn).
      let j = i;
      if (message.role === 'tool') while (j + 1 < msgs.length && msgs[j + 1].role === 'tool') j++;
      push(session.append(...msgs.slice(i, j + 1)), 0);
      i = j;
    }
  }
  if (tokens.length !== session.tokens.length) throw new Error('internal: rendered tokens and session tokens disagree');
  return { tokens, lossMask, completions };
}

export interface SftDataOptions extends ConversationDefaults {
  /** Longest document in tokens (the packed row length). */
  maxSeqLen: number;
  /** Over-long documents: keep the first maxSeqLen tokens ('truncate', default) or drop them. */
  overflow?: 'truncate' | 'drop';
  /** Train on the greeting before the first user message (default false: it is prompt). */
  trainOnGreeting?: boolean;
  /** Keep only trajectories whose `reward` is at least this (records without a reward are kept). */
  minReward?: number;
  /** A record that cannot be rendered: throw (default) or skip it and count it. */
  onInvalid?: 'throw' | 'skip';
}

export interface SftDataStats {
  records: number;
  documents: number;
  truncated: number;
  droppedTooLong: number;
  droppedNoLossTokens: number;
  droppedLowReward: number;
  invalid: number;
  /** First few reasons for invalid records. */
  invalidReasons: string[];
  tokens: number;
  lossTokens: number;
  /** Length of the longest document before truncation. */
  maxLength: number;
  /** Tokens before the first assistant token, shortest over the records (−1 when none rendered). */
  shortestPrompt: number;
}

export interface SftDocumentMeta {
  /** Index of the record the document came from. */
  record: number;
  taskId?: string;
  truncated: boolean;
}

/** Tokenizes trajectories into SFT documents (documents keep record order). */
export function buildSftDocuments(records: readonly TrajectoryRecord[], format: ChatFormat, options: SftDataOptions): { docs: SftDocument[]; meta: SftDocumentMeta[]; stats: SftDataStats } {
  if (!(Number.isInteger(options.maxSeqLen) && options.maxSeqLen >= 2)) throw new RangeError(`sft data: maxSeqLen must be an integer ≥ 2, got ${options.maxSeqLen}`);
  const overflow = options.overflow ?? 'truncate';
  const stats: SftDataStats = {
    records: records.length, documents: 0, truncated: 0, droppedTooLong: 0, droppedNoLossTokens: 0, droppedLowReward: 0, invalid: 0,
    invalidReasons: [], tokens: 0, lossTokens: 0, maxLength: 0, shortestPrompt: -1,
  };
  const docs: SftDocument[] = [];
  const meta: SftDocumentMeta[] = [];
  records.forEach((record, r) => {
    if (options.minReward !== undefined && record.reward !== undefined && record.reward < options.minReward) {
      stats.droppedLowReward++;
      return;
    }
    let rendered: RenderedTrajectory;
    try {
      rendered = renderTrajectory(format, toChatConversation(record, options), { trainOnGreeting: options.trainOnGreeting });
    } catch (error) {
      const reason = `record ${r}${record.taskId ? ` (task ${record.taskId})` : ''}: ${(error as Error).message}`;
      if ((options.onInvalid ?? 'throw') === 'throw') throw new Error(`sft data: cannot render ${reason}`, { cause: error });
      stats.invalid++;
      if (stats.invalidReasons.length < 5) stats.invalidReasons.push(reason);
      return;
    }
    let { tokens, lossMask } = rendered;
    stats.maxLength = Math.max(stats.maxLength, tokens.length);
    const prompt = lossMask.indexOf(1);
    if (prompt >= 0 && (stats.shortestPrompt < 0 || prompt < stats.shortestPrompt)) stats.shortestPrompt = prompt;
    let truncated = false;
    if (tokens.length > options.maxSeqLen) {
      if (overflow === 'drop') {
        stats.droppedTooLong++;
        return;
      }
      tokens = tokens.slice(0, options.maxSeqLen);
      lossMask = lossMask.slice(0, options.maxSeqLen);
      truncated = true;
    }
    const doc: SftDocument = { tokens: Int32Array.from(tokens), lossMask: Uint8Array.from(lossMask) };
    let weight = 0;
    for (let j = 1; j < lossMask.length; j++) weight += lossMask[j];
    if (weight === 0) {
      stats.droppedNoLossTokens++;
      return;
    }
    if (truncated) stats.truncated++;
    stats.documents++;
    stats.tokens += tokens.length;
    stats.lossTokens += weight;
    docs.push(doc);
    meta.push({ record: r, ...(record.taskId !== undefined ? { taskId: record.taskId } : {}), truncated });
  });
  return { docs, meta, stats };
}

/**
 * The text runs a tokenizer for `formatName` will have to encode, drawn from the trajectories as the format renders
 * them (special tokens left out: they are reserved ids, not merges). Deterministic: record order, then render order.
 */
export function tokenizerCorpus(records: readonly TrajectoryRecord[], formatName: 'harmony' | 'hermes', defaults: ConversationDefaults = {}): string[] {
  const renderer = formatName === 'harmony' ? new HarmonyRenderer() : new HermesRenderer();
  const out: string[] = [];
  for (const record of records) {
    const conversation = toChatConversation(record, defaults);
    const segments = formatName === 'harmony'
      ? renderSegments(renderer as HarmonyRenderer, conversation)
      : renderSegments(renderer as HermesRenderer, conversation);
    for (const s of segments) if ('text' in s && s.text.length > 0) out.push(s.text);
  }
  return out;
}

export interface SftTokenizerOptions extends ConversationDefaults {
  vocabSize: number;
  format?: 'harmony' | 'hermes';
  /** Stop merging below this pair count (default 2). */
  minPairCount?: number;
  /** Pre-tokenization pattern (default: GPT-style, digits in runs of up to three). */
  pattern?: string;
  /** Keep a space apart from the letter after it (`BpeTrainOptions.separateSpaceBeforeLetters`). */
  separateSpaceBeforeLetters?: boolean;
  /** Keep any ASCII symbol apart from the letter after it (`BpeTrainOptions.separateSymbolsBeforeLetters`). */
  separateSymbolsBeforeLetters?: boolean;
}

/** Trains the tiny byte-level BPE on the trajectories (deterministic for the same records and options). */
export function trainSftTokenizer(records: readonly TrajectoryRecord[], options: SftTokenizerOptions): BpeTokenizer {
  const corpus = tokenizerCorpus(records, options.format ?? 'harmony', options);
  if (corpus.length === 0) throw new Error('sft tokenizer: the trajectories hold no text to train on');
  return BpeTokenizer.train(corpus, {
    vocabSize: options.vocabSize, ...(options.minPairCount !== undefined ? { minPairCount: options.minPairCount } : {}),
    ...(options.pattern !== undefined ? { pattern: options.pattern } : {}),
    ...(options.separateSpaceBeforeLetters ? { separateSpaceBeforeLetters: true } : {}),
    ...(options.separateSymbolsBeforeLetters ? { separateSymbolsBeforeLetters: true } : {}),
  });
}
