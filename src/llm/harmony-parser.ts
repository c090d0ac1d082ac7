/**
 * Streaming parser for what a gpt-oss model samples after the generation prompt `<|start|>assistant`:
 * `<|channel|>analysis<|message|>…<|end|><|start|>assistant<|channel|>commentary to=functions.f <|constrain|>json<|message|>{…}<|call|>`.
 * It accepts the recipient either after the channel (harmony docs) or in the role part (`assistant to=functions.f`),
 * and a content type either after `<|constrain|>` or as a bare word after the channel.
 * Every failure is a CompletionParseError carrying all tokens; nothing here throws.
 */
import type { CompletionParse, CompletionParseError, CompletionStreamParser, ParsedContent, ParsedToolCall, ParseErrorKind, StreamEvent } from './chat-format.ts';
import { HARMONY } from './special-tokens.ts';
import { StreamingDecoder, type Tokenizer } from './tokenizer.ts';

export const HARMONY_CHANNELS = ['analysis', 'commentary', 'final'] as const;

export interface HarmonyParsedMessage {
  channel: string;
  recipient?: string;
  contentType?: string;
  content: string;
}

export interface HarmonyParserOptions {
  /** Known function names; a call to any other `functions.*` recipient is an `unknown-recipient` error. */
  toolNames?: readonly string[];
}

interface SpecialIds {
  start: number;
  end: number;
  message: number;
  channel: number;
  constrain: number;
  return: number;
  call: number;
  endOfText?: number;
}

type Phase = 'header' | 'content' | 'between' | 'done' | 'failed';

class Failure {
  constructor(readonly kind: ParseErrorKind, readonly message: string) {}
}

export class HarmonyStreamParser implements CompletionStreamParser {
  private readonly ids: SpecialIds;
  private readonly tokens: number[] = [];
  private readonly messages: HarmonyParsedMessage[] = [];
  private phase: Phase = 'header';
  /** False for the first header: the prompt already holds `<|start|>assistant`. */
  private headerHasRole = false;
  private headerIds: number[] = [];
  private current: Omit<HarmonyParsedMessage, 'content'> | undefined;
  private contentIds: number[] = [];
  private decoder: StreamingDecoder;
  private stopTokenId: number | undefined;
  private failure: Failure | undefined;

  constructor(private readonly tokenizer: Tokenizer, private readonly options: HarmonyParserOptions = {}) {
    const id = (name: string) => tokenizer.specialId(name);
    this.ids = {
      start: id(HARMONY.start),
      end: id(HARMONY.end),
      message: id(HARMONY.message),
      channel: id(HARMONY.channel),
      constrain: id(HARMONY.constrain),
      return: id(HARMONY.return),
      call: id(HARMONY.call),
      endOfText: tokenizer.specialTokens.get(HARMONY.endOfText),
    };
    this.decoder = new StreamingDecoder(tokenizer);
  }

  get done(): boolean {
    return this.phase === 'done' || this.phase === 'failed';
  }

  push(tokenId: number): StreamEvent[] {
    this.tokens.push(tokenId);
    if (this.phase === 'failed') return [];
    try {
      return this.step(tokenId);
    } catch (error) {
      const failure = error instanceof Failure ? error : new Failure('malformed', `parser error: ${(error as Error).message}`);
      this.phase = 'failed';
      this.failure = failure;
      return [{ type: 'error', error: this.error(failure) }];
    }
  }

  private step(id: number): StreamEvent[] {
    const ids = this.ids;
    switch (this.phase) {
      case 'done':
        throw new Failure('trailing-tokens', `token ${this.tokenizer.tokenToString(id)} after the stop token`);
      case 'between':
        if (id !== ids.start) throw new Failure('malformed', `expected <|start|> after <|end|>, got ${this.tokenizer.tokenToString(id)}`);
        this.phase = 'header';
        this.headerHasRole = true;
        this.headerIds = [];
        return [];
      case 'header':
        if (id === ids.start && !this.headerHasRole && this.headerIds.length === 0) {
          this.headerHasRole = true; // the model repeated <|start|>; tolerate it
          return [];
        }
        if (id === ids.message) return this.openMessage();
        if (this.tokenizer.isSpecial(id) && id !== ids.channel && id !== ids.constrain) {
          throw new Failure('malformed', `${this.tokenizer.tokenToString(id)} inside a message header (no <|message|> yet)`);
        }
        this.headerIds.push(id);
        return [];
      case 'content':
        if (id === ids.end) return this.closeMessage(undefined);
        if (id === ids.return || id === ids.call || id === ids.endOfText) return this.closeMessage(id);
        if (this.tokenizer.isSpecial(id)) throw new Failure('malformed', `${this.tokenizer.tokenToString(id)} inside message content`);
        this.contentIds.push(id);
        {
          const text = this.decoder.push(id);
          return text ? [{ type: 'text', index: this.messages.length, channel: this.current!.channel, text }] : [];
        }
      case 'failed':
        return [];
    }
  }

  private openMessage(): StreamEvent[] {
    const header = this.parseHeader();
    this.current = header;
    this.contentIds = [];
    this.decoder = new StreamingDecoder(this.tokenizer);
    this.phase = 'content';
    return [{ type: 'message-start', index: this.messages.length, channel: header.channel, recipient: header.recipient }];
  }

  /** Splits the header at `<|channel|>` and `<|constrain|>` and reads role, channel, recipient and content type. */
  private parseHeader(): Omit<HarmonyParsedMessage, 'content'> {
    const parts: { role: number[]; channel?: number[]; constrain?: number[] } = { role: [] };
    let target = parts.role;
    for (const id of this.headerIds) {
      if (id === this.ids.channel) target = parts.channel = [];
      else if (id === this.ids.constrain) target = parts.constrain = [];
      else target.push(id);
    }
    const words = (ids: number[] | undefined) => (ids ? this.tokenizer.decode(ids).trim().split(/\s+/).filter(Boolean) : []);
    const roleWords = words(parts.role);
    if (this.headerHasRole) {
      if (roleWords[0] !== 'assistant') throw new Failure('malformed', `the model began a message as ${JSON.stringify(roleWords[0] ?? '')}, not as the assistant`);
      roleWords.shift();
    }
    if (!parts.channel) throw new Failure('missing-channel', 'message header has no <|channel|>');
    const channelWords = words(parts.channel);
    const channel = channelWords.shift();
    if (!channel) throw new Failure('missing-channel', 'message header has an empty channel');
    if (!(HARMONY_CHANNELS as readonly string[]).includes(channel)) throw new Failure('unknown-channel', `unknown channel ${JSON.stringify(channel)}`);
    let recipient: string | undefined;
    let contentType: string | undefined;
    for (const word of [...roleWords, ...channelWords]) {
      if (word.startsWith('to=')) recipient = word.slice(3);
      else if (contentType === undefined) contentType = word;
      else throw new Failure('malformed', `unexpected word ${JSON.stringify(word)} in the message header`);
    }
    const constrained = words(parts.constrain);
    if (constrained.length > 0) contentType = constrained.join(' ');
    if (recipient !== undefined) this.checkRecipient(recipient);
    return { channel, ...(recipient !== undefined && { recipient }), ...(contentType !== undefined && { contentType }) };
  }

  private checkRecipient(recipient: string): void {
    if (!recipient.startsWith('functions.') || recipient.length === 'functions.'.length) {
      throw new Failure('unknown-recipient', `recipient ${JSON.stringify(recipient)} is not functions.NAME`);
    }
    const name = recipient.slice('functions.'.length);
    if (this.options.toolNames && !this.options.toolNames.includes(name)) {
      throw new Failure('unknown-recipient', `no tool named ${JSON.stringify(name)}`);
    }
  }

  private closeMessage(stopId: number | undefined): StreamEvent[] {
    const header = this.current!;
    const message: HarmonyParsedMessage = { ...header, content: this.tokenizer.decode(this.contentIds) };
    if (stopId === this.ids.call && header.recipient === undefined) throw new Failure('malformed', '<|call|> ends a message that has no recipient');
    if (header.recipient !== undefined) parseArguments(message.content);
    this.messages.push(message);
    this.current = undefined;
    const events: StreamEvent[] = [];
    const tail = this.decoder.flush();
    if (tail) events.push({ type: 'text', index: this.messages.length - 1, channel: header.channel, text: tail });
    events.push({ type: 'message-end', index: this.messages.length - 1 });
    if (stopId === undefined) {
      this.phase = 'between';
    } else {
      this.phase = 'done';
      this.stopTokenId = stopId;
      events.push({ type: 'stop', tokenId: stopId });
    }
    return events;
  }

  /** The messages read so far. */
  parsedMessages(): readonly HarmonyParsedMessage[] {
    return this.messages;
  }

  finish(): CompletionParse {
    if (this.failure) return this.error(this.failure);
    if (this.phase === 'done' || (this.phase === 'between' && this.messages.length > 0)) {
      return { ok: true, ...summarize(this.messages), stopTokenId: this.stopTokenId, tokens: [...this.tokens], text: this.tokenizer.decode(this.tokens) };
    }
    if (this.tokens.length === 0) return this.error(new Failure('empty', 'the completion has no tokens'));
    const where = this.phase === 'content' ? 'inside a message' : 'inside a message header';
    return this.error(new Failure('truncated', `the completion ended ${where}, without a stop token`));
  }

  private error(failure: Failure): CompletionParseError {
    return {
      ok: false,
      kind: failure.kind,
      message: failure.message,
      tokens: [...this.tokens],
      text: this.tokenizer.decode(this.tokens),
      partial: summarize(this.messages),
    };
  }
}

function parseArguments(content: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(content);
  } catch (error) {
    throw new Failure('invalid-json', `tool-call arguments are not valid JSON: ${(error as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw new Failure('invalid-json', 'tool-call arguments must be a JSON object');
  return value as Record<string, unknown>;
}

/** Messages → content (final, or commentary addressed to nobody), reasoning (analysis) and tool calls. */
export function summarize(messages: readonly HarmonyParsedMessage[]): ParsedContent {
  const reasoning: string[] = [];
  const content: string[] = [];
  const toolCalls: ParsedToolCall[] = [];
  for (const m of messages) {
    if (m.recipient !== undefined) toolCalls.push({ name: m.recipient.slice('functions.'.length), arguments: parseArguments(m.content) });
    else if (m.channel === 'analysis') reasoning.push(m.content);
    else content.push(m.content);
  }
  return {
    ...(content.length > 0 && { content: content.join('\n\n') }),
    ...(reasoning.length > 0 && { reasoning: reasoning.join('\n\n') }),
    ...(toolCalls.length > 0 && { toolCalls }),
  };
}
