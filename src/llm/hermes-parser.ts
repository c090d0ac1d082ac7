/**
 * Parser for a Hermes/ChatML completion: free text, an optional leading `<think>…</think>`, and any number of
 * `<tool_call>{"name": …, "arguments": …}</tool_call>` blocks, ended by `<|im_end|>`.
 * Never throws; every failure is a CompletionParseError with all tokens and the text.
 */
import type { CompletionParse, CompletionParseError, CompletionStreamParser, ParsedContent, ParsedToolCall, ParseErrorKind, StreamEvent } from './chat-format.ts';
import { StreamingDecoder, type Tokenizer } from './tokenizer.ts';

export interface HermesParserOptions {
  /** Known function names; a call to any other name is an `unknown-recipient` error. */
  toolNames?: readonly string[];
  /**
   * Special ids read as their text (Qwen3's `<tool_call>`, `</tool_call>`, `<think>`, `</think>` are single tokens
   * the model samples); any other special id inside the message is `malformed`.
   */
  textSpecialIds?: ReadonlySet<number>;
}

class Failure {
  constructor(readonly kind: ParseErrorKind, readonly message: string, readonly partial: ParsedContent = {}) {}
}

const THINK_OPEN = '<think>';
const THINK_CLOSE = '</think>';
const CALL_OPEN = '<tool_call>';
const CALL_CLOSE = '</tool_call>';

function parseCall(json: string, toolNames: readonly string[] | undefined): ParsedToolCall {
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    throw new Failure('invalid-json', `a <tool_call> block is not valid JSON: ${(error as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Failure('invalid-json', 'a <tool_call> block must hold a JSON object');
  const { name, arguments: rawArgs } = value as { name?: unknown; arguments?: unknown };
  if (typeof name !== 'string' || name.length === 0) throw new Failure('malformed', 'a <tool_call> block has no "name" string');
  if (toolNames && !toolNames.includes(name)) throw new Failure('unknown-recipient', `no tool named ${JSON.stringify(name)}`);
  let args = rawArgs;
  if (typeof args === 'string') {
    try {
      args = JSON.parse(args);
    } catch (error) {
      throw new Failure('invalid-json', `the "arguments" string of ${name} is not valid JSON: ${(error as Error).message}`);
    }
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) throw new Failure('invalid-json', `the "arguments" of ${name} must be a JSON object`);
  return { name, arguments: args as Record<string, unknown> };
}

/** Reads the text of a completion (stop token excluded). Throws Failure; the stream parser catches it. */
export function parseHermesText(text: string, toolNames?: readonly string[]): ParsedContent {
  let rest = text;
  let reasoning: string | undefined;
  const trimmedStart = rest.trimStart();
  if (trimmedStart.startsWith(THINK_OPEN)) {
    const close = trimmedStart.indexOf(THINK_CLOSE);
    if (close < 0) throw new Failure('malformed', '<think> is never closed');
    reasoning = trimmedStart.slice(THINK_OPEN.length, close).replace(/^\n/, '').replace(/\n$/, '');
    rest = trimmedStart.slice(close + THINK_CLOSE.length);
  }
  const toolCalls: ParsedToolCall[] = [];
  const contentParts: string[] = [];
  let cursor = 0;
  while (true) {
    const open = rest.indexOf(CALL_OPEN, cursor);
    if (open < 0) {
      contentParts.push(rest.slice(cursor));
      break;
    }
    contentParts.push(rest.slice(cursor, open));
    const close = rest.indexOf(CALL_CLOSE, open);
    const partial = { ...(reasoning !== undefined && { reasoning }), ...(toolCalls.length > 0 && { toolCalls: [...toolCalls] }) };
    if (close < 0) throw new Failure('malformed', '<tool_call> is never closed', partial);
    try {
      toolCalls.push(parseCall(rest.slice(open + CALL_OPEN.length, close).trim(), toolNames));
    } catch (error) {
      if (error instanceof Failure) throw new Failure(error.kind, error.message, partial);
      throw error;
    }
    cursor = close + CALL_CLOSE.length;
  }
  const content = contentParts.join('').trim();
  if (content.includes(CALL_CLOSE)) throw new Failure('malformed', '</tool_call> without a matching <tool_call>');
  return {
    ...(content.length > 0 && { content }),
    ...(reasoning !== undefined && { reasoning }),
    ...(toolCalls.length > 0 && { toolCalls }),
  };
}

export class HermesStreamParser implements CompletionStreamParser {
  private readonly tokens: number[] = [];
  private readonly textIds: number[] = [];
  private readonly decoder: StreamingDecoder;
  private stopTokenId: number | undefined;
  private failure: Failure | undefined;
  private state: 'running' | 'done' | 'failed' = 'running';

  constructor(
    private readonly tokenizer: Tokenizer,
    private readonly stopIds: readonly number[],
    private readonly options: HermesParserOptions = {},
  ) {
    this.decoder = new StreamingDecoder(tokenizer);
  }

  get done(): boolean {
    return this.state !== 'running';
  }

  push(tokenId: number): StreamEvent[] {
    this.tokens.push(tokenId);
    if (this.state === 'failed') return [];
    try {
      return this.step(tokenId);
    } catch (error) {
      this.state = 'failed';
      this.failure = error instanceof Failure ? error : new Failure('malformed', `parser error: ${(error as Error).message}`);
      return [{ type: 'error', error: this.error(this.failure) }];
    }
  }

  private step(id: number): StreamEvent[] {
    if (this.state === 'done') throw new Failure('trailing-tokens', `token ${this.tokenizer.tokenToString(id)} after the stop token`);
    const events: StreamEvent[] = this.tokens.length === 1 ? [{ type: 'message-start', index: 0 }] : [];
    if (this.stopIds.includes(id)) {
      const tail = this.decoder.flush();
      if (tail) events.push({ type: 'text', index: 0, text: tail });
      this.state = 'done';
      this.stopTokenId = id;
      events.push({ type: 'message-end', index: 0 }, { type: 'stop', tokenId: id });
      return events;
    }
    if (this.tokenizer.isSpecial(id) && !this.options.textSpecialIds?.has(id)) throw new Failure('malformed', `${this.tokenizer.tokenToString(id)} inside the assistant message`);
    this.textIds.push(id);
    const text = this.decoder.push(id);
    if (text) events.push({ type: 'text', index: 0, text });
    return events;
  }

  finish(): CompletionParse {
    if (this.failure) return this.error(this.failure);
    if (this.tokens.length === 0) return this.error(new Failure('empty', 'the completion has no tokens'));
    const text = this.tokenizer.decode(this.textIds);
    if (this.state !== 'done') {
      let partial: ParsedContent = {};
      try {
        partial = parseHermesText(text, this.options.toolNames);
      } catch (error) {
        if (error instanceof Failure) partial = error.partial;
      }
      return this.error(new Failure('truncated', 'the completion ended without <|im_end|>', partial));
    }
    try {
      return { ok: true, ...parseHermesText(text, this.options.toolNames), stopTokenId: this.stopTokenId, tokens: [...this.tokens], text: this.tokenizer.decode(this.tokens) };
    } catch (error) {
      if (error instanceof Failure) return this.error(error);
      return this.error(new Failure('malformed', `parser error: ${(error as Error).message}`));
    }
  }

  private error(failure: Failure): CompletionParseError {
    return {
      ok: false,
      kind: failure.kind,
      message: failure.message,
      tokens: [...this.tokens],
      text: this.tokenizer.decode(this.tokens),
      partial: failure.partial,
    };
  }
}
