/**
 * The interface both chat formats (harmony, hermes) implement, so the agent loop can switch format by config.
 *
 * Token-in/token-out: a `ChatSession` only ever appends. The prompt is rendered once, observations are appended as
 * token deltas, and the model's sampled tokens are appended verbatim and parsed. Parsing never throws: garbage
 * output becomes a `CompletionParseError` that keeps every raw token and the decoded text.
 */
import type { ChatMessage, ToolCall, ToolSpec } from './messages.ts';
import type { Tokenizer } from './tokenizer.ts';

export interface ParsedToolCall {
  name: string;
  arguments: Record<string, unknown>;
}

export interface ParsedContent {
  /** Text meant for the user (harmony final/commentary-without-recipient; hermes text outside tags). */
  content?: string;
  reasoning?: string;
  toolCalls?: ParsedToolCall[];
}

export interface ParsedCompletion extends ParsedContent {
  ok: true;
  /** The stop token that ended the completion, or undefined if it ended cleanly without one (e.g. after `<|end|>`). */
  stopTokenId?: number;
  tokens: number[];
  text: string;
}

export type ParseErrorKind =
  | 'empty'
  | 'truncated'
  | 'missing-channel'
  | 'unknown-channel'
  | 'unknown-recipient'
  | 'invalid-json'
  | 'malformed'
  | 'trailing-tokens';

export interface CompletionParseError {
  ok: false;
  kind: ParseErrorKind;
  /** What went wrong, for logs and for an error observation shown back to the model. */
  message: string;
  /** Every token of the completion, untouched. */
  tokens: number[];
  /** The decoded completion, special tokens shown by name. */
  text: string;
  /** What could be read before the error. */
  partial: ParsedContent;
}

export type CompletionParse = ParsedCompletion | CompletionParseError;

export type StreamEvent =
  | { type: 'message-start'; index: number; channel?: string; recipient?: string }
  | { type: 'text'; index: number; channel?: string; text: string }
  | { type: 'message-end'; index: number }
  | { type: 'stop'; tokenId: number }
  | { type: 'error'; error: CompletionParseError };

/** Feeds sampled tokens one at a time. `push` never throws; after a stop or an error, further tokens are kept but yield an error. */
export interface CompletionStreamParser {
  push(tokenId: number): StreamEvent[];
  /** True once a stop token was seen or parsing failed. */
  readonly done: boolean;
  /** The parse of everything pushed so far (a completion without a stop token is `truncated`). */
  finish(): CompletionParse;
}

export interface ConversationStart {
  /** The first messages: a leading system message becomes the instructions; usually then one user message. */
  messages: readonly ChatMessage[];
  tools?: readonly ToolSpec[];
}

export interface ChatSession {
  /** Every token so far. */
  readonly tokens: readonly number[];
  /** The messages so far (generated turns as parsed, or as an error placeholder). */
  readonly messages: readonly ChatMessage[];
  /** True after `appendGenerationPrompt` until the model's turn is appended. */
  readonly awaitingModel: boolean;
  /**
   * Appends messages (tool results, a user message; or an assistant turn written by hand, e.g. for SFT) and returns
   * only the new ids. An assistant message appended while awaiting the model continues the open header.
   */
  append(...messages: ChatMessage[]): number[];
  /** Opens the assistant turn the model will write; returns the new ids. */
  appendGenerationPrompt(): number[];
  /** Appends the model's sampled ids verbatim (they are never re-tokenized) and returns their parse. */
  appendGenerated(ids: readonly number[]): CompletionParse;
}

export interface RenderOptions {
  /** End with the generation prompt (default false). */
  addGenerationPrompt?: boolean;
}

export interface ChatFormat {
  readonly name: string;
  readonly tokenizer: Tokenizer;
  /** Ids at which sampling stops. */
  readonly stopTokenIds: readonly number[];
  /** Renders a whole conversation at once (what a session's concatenated deltas must equal). */
  render(conversation: ConversationStart, options?: RenderOptions): number[];
  /** The same rendering as text with special tokens inline, for display and debugging. */
  renderText(conversation: ConversationStart, options?: RenderOptions): string;
  /** Starts an incremental session with the conversation's first messages. */
  startSession(start: ConversationStart): ChatSession;
  /** The ids a model should sample after the generation prompt to produce `message` (SFT targets, tests). */
  renderCompletion(message: ChatMessage): number[];
  /** A token-by-token parser; with `toolNames`, calls to other tools are `unknown-recipient` errors. */
  createStreamParser(toolNames?: readonly string[]): CompletionStreamParser;
  /** Parses one completion (the ids sampled after the generation prompt, stop token included). */
  parseCompletion(ids: readonly number[], toolNames?: readonly string[]): CompletionParse;
}

/** The assistant message a successful parse stands for. */
export function parsedToMessage(parsed: ParsedContent): ChatMessage {
  const message: ChatMessage = { role: 'assistant', content: parsed.content ?? '' };
  if (parsed.reasoning !== undefined) message.reasoning = parsed.reasoning;
  if (parsed.toolCalls && parsed.toolCalls.length > 0) {
    message.toolCalls = parsed.toolCalls.map((c): ToolCall => ({ name: c.name, arguments: c.arguments }));
  }
  return message;
}
