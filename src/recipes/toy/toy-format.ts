/**
 * A word-level tokenizer and chat format for the toy tool-use task: small enough for a tabular policy, complete
 * enough to run through the real `AgentLoop` (it implements `ChatFormat` on top of src/llm's append-only
 * `RenderedSession`).
 *
 * Rendering:  `<sys> {system} tools: {names} <end>`  `<user> {text} <end>`  `<tool> {text} <end>`
 *             assistant: `<asst>` then `call {tool} arg_{x} <end>` (a tool call) or `{words} <end>` (text).
 * Stop token: `<end>`.
 */
import type { ChatFormat, ChatSession, CompletionParse, CompletionStreamParser, ConversationStart, RenderOptions, StreamEvent } from '../../llm/chat-format.ts';
import type { ChatMessage } from '../../llm/messages.ts';
import { encodeSegments, segmentsToText, special, text, type Segment } from '../../llm/segments.ts';
import { RenderedSession, renderSegments, type FormatRenderer } from '../../llm/session.ts';
import type { Tokenizer } from '../../llm/tokenizer.ts';

export const TOY_SPECIALS = ['<pad>', '<sys>', '<user>', '<tool>', '<asst>', '<end>'] as const;

/** Whitespace-separated words; unknown words map to `<unk>`. Specials decode to their names. */
export class WordTokenizer implements Tokenizer {
  readonly name: string;
  readonly vocabSize: number;
  readonly specialTokens: ReadonlyMap<string, number>;
  readonly eosIds: readonly number[];
  private readonly words: string[];
  private readonly ids: Map<string, number>;

  constructor(words: readonly string[], specials: readonly string[] = TOY_SPECIALS) {
    this.words = [...specials, '<unk>', ...words];
    if (new Set(this.words).size !== this.words.length) throw new Error('WordTokenizer: duplicate words');
    this.ids = new Map(this.words.map((w, i) => [w, i]));
    this.specialTokens = new Map(specials.map((s, i) => [s, i]));
    this.vocabSize = this.words.length;
    this.name = `words-${this.vocabSize}`;
    this.eosIds = this.specialTokens.has('<end>') ? [this.specialTokens.get('<end>')!] : [];
  }

  encode(value: string): number[] {
    return value.split(/\s+/).filter((w) => w.length > 0).map((w) => this.ids.get(w) ?? this.ids.get('<unk>')!);
  }

  decode(ids: readonly number[]): string {
    return ids.map((id) => this.tokenToString(id)).join(' ');
  }

  decodeBytes(ids: readonly number[]): Uint8Array {
    return new TextEncoder().encode(this.decode(ids));
  }

  tokenBytes(id: number): Uint8Array {
    return new TextEncoder().encode(this.tokenToString(id));
  }

  tokenToString(id: number): string {
    const w = this.words[id];
    if (w === undefined) throw new RangeError(`token id ${id} is outside the vocabulary of ${this.name}`);
    return w;
  }

  specialId(name: string): number {
    const id = this.specialTokens.get(name);
    if (id === undefined) throw new Error(`${this.name} has no special token ${name}`);
    return id;
  }

  isSpecial(id: number): boolean {
    return id < this.specialTokens.size;
  }

  idOf(word: string): number {
    const id = this.ids.get(word);
    if (id === undefined) throw new Error(`${this.name} has no word "${word}"`);
    return id;
  }
}

interface ToyState {
  tools: string[];
}

function assistantBody(m: ChatMessage): string {
  if (m.toolCalls && m.toolCalls.length > 0) return m.toolCalls.map((c) => `call ${c.name} arg_${String(c.arguments.x)}`).join(' ');
  return m.content;
}

class ToyRenderer implements FormatRenderer<ToyState> {
  createState(start: ConversationStart): ToyState {
    return { tools: (start.tools ?? []).map((t) => t.function.name) };
  }

  prelude(state: ToyState, start: ConversationStart): { segments: Segment[]; consumed: number } {
    const first = start.messages[0];
    const system = first?.role === 'system' ? first.content : '';
    return { segments: [special('<sys>'), text(`${system} tools: ${state.tools.join(' ')}`), special('<end>')], consumed: first?.role === 'system' ? 1 : 0 };
  }

  renderMessages(_state: ToyState, messages: readonly ChatMessage[]): Segment[] {
    const out: Segment[] = [];
    for (const m of messages) {
      if (m.role === 'assistant') out.push(special('<asst>'), text(assistantBody(m)), special('<end>'));
      else out.push(special(m.role === 'tool' ? '<tool>' : m.role === 'system' ? '<sys>' : '<user>'), text(m.content), special('<end>'));
    }
    return out;
  }

  generationPrompt(): Segment[] {
    return [special('<asst>')];
  }

  noteGenerated(): void {}
}

export class ToyChatFormat implements ChatFormat {
  readonly name = 'toy';
  readonly stopTokenIds: readonly number[];
  private readonly renderer = new ToyRenderer();

  constructor(readonly tokenizer: WordTokenizer) {
    this.stopTokenIds = [tokenizer.specialId('<end>')];
  }

  render(conversation: ConversationStart, options: RenderOptions = {}): number[] {
    return encodeSegments(this.tokenizer, renderSegments(this.renderer, conversation, options));
  }

  renderText(conversation: ConversationStart, options: RenderOptions = {}): string {
    return segmentsToText(renderSegments(this.renderer, conversation, options));
  }

  startSession(start: ConversationStart): ChatSession {
    return new RenderedSession(this.tokenizer, this.renderer, (ids) => this.parseCompletion(ids), start);
  }

  renderCompletion(message: ChatMessage): number[] {
    return encodeSegments(this.tokenizer, [text(assistantBody(message)), special('<end>')]);
  }

  createStreamParser(toolNames?: readonly string[]): CompletionStreamParser {
    const ids: number[] = [];
    let done = false;
    return {
      push: (id: number): StreamEvent[] => {
        ids.push(id);
        if (this.stopTokenIds.includes(id)) {
          done = true;
          return [{ type: 'stop', tokenId: id }];
        }
        return [];
      },
      get done() {
        return done;
      },
      finish: () => this.parseCompletion(ids, toolNames),
    };
  }

  parseCompletion(ids: readonly number[], toolNames?: readonly string[]): CompletionParse {
    const tok = this.tokenizer;
    const textOf = tok.decode(ids);
    const fail = (kind: 'empty' | 'truncated' | 'malformed' | 'unknown-recipient', message: string): CompletionParse => ({ ok: false, kind, message, tokens: [...ids], text: textOf, partial: {} });
    if (ids.length === 0) return fail('empty', 'empty completion');
    const end = tok.specialId('<end>');
    const stop = ids.indexOf(end);
    if (stop < 0) return fail('truncated', 'the completion has no <end>');
    if (stop !== ids.length - 1) return fail('malformed', 'tokens after <end>');
    const words = ids.slice(0, stop).map((id) => tok.tokenToString(id));
    if (words.some((w, i) => tok.isSpecial(ids[i]) || w === '<unk>')) return fail('malformed', 'special token inside a message');
    if (words[0] === 'call') {
      const m = words.length === 3 ? /^arg_(\d+)$/.exec(words[2]) : null;
      if (!m) return fail('malformed', 'a call is "call TOOL arg_N"');
      if (toolNames && !toolNames.includes(words[1])) return fail('unknown-recipient', `unknown tool ${words[1]}`);
      return { ok: true, tokens: [...ids], text: textOf, stopTokenId: end, toolCalls: [{ name: words[1], arguments: { x: Number(m[1]) } }] };
    }
    if (words.length === 0) return fail('empty', 'empty message');
    return { ok: true, tokens: [...ids], text: textOf, stopTokenId: end, content: words.join(' ') };
  }
}
