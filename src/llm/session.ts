/**
 * The incremental session shared by the chat formats. A format supplies a renderer (messages → segments) and a
 * completion parser; the session keeps the running token list and only ever appends to it.
 */
import { parsedToMessage, type ChatSession, type CompletionParse, type ConversationStart, type RenderOptions } from './chat-format.ts';
import type { ChatMessage } from './messages.ts';
import { encodeSegments, segmentsToText, type Segment } from './segments.ts';
import type { Tokenizer } from './tokenizer.ts';

export interface FormatRenderer<S> {
  createState(start: ConversationStart): S;
  /** The conversation's opening (system prompt, tools) and how many leading messages of `start` it consumed. */
  prelude(state: S, start: ConversationStart): { segments: Segment[]; consumed: number };
  /** Renders a batch of messages that follow `history`, updating `state`. */
  renderMessages(state: S, messages: readonly ChatMessage[], history: readonly ChatMessage[]): Segment[];
  /** The header that opens the model's turn. Must not change `state`; every assistant message starts with it. */
  generationPrompt(state: S): Segment[];
  /** Records a turn the model generated (already appended verbatim). */
  noteGenerated(state: S, message: ChatMessage): void;
}

/** What both chat formats share: whole-conversation rendering and incremental sessions over their renderer. */
export abstract class RenderedFormat<S> {
  constructor(
    readonly tokenizer: Tokenizer,
    readonly renderer: FormatRenderer<S>,
  ) {}

  abstract parseCompletion(ids: readonly number[], toolNames?: readonly string[]): CompletionParse;

  render(conversation: ConversationStart, options?: RenderOptions): number[] {
    return encodeSegments(this.tokenizer, renderSegments(this.renderer, conversation, options));
  }

  renderText(conversation: ConversationStart, options?: RenderOptions): string {
    return segmentsToText(renderSegments(this.renderer, conversation, options));
  }

  startSession(start: ConversationStart): ChatSession {
    const toolNames = (start.tools ?? []).map((t) => t.function.name);
    return new RenderedSession(this.tokenizer, this.renderer, (ids) => this.parseCompletion(ids, toolNames), start);
  }
}

export function renderSegments<S>(renderer: FormatRenderer<S>, conversation: ConversationStart, options: RenderOptions = {}): Segment[] {
  const state = renderer.createState(conversation);
  const { segments, consumed } = renderer.prelude(state, conversation);
  const history = conversation.messages.slice(0, consumed);
  const out = [...segments, ...renderer.renderMessages(state, conversation.messages.slice(consumed), history)];
  if (options.addGenerationPrompt) out.push(...renderer.generationPrompt(state));
  return out;
}

export class RenderedSession<S> implements ChatSession {
  private readonly ids: number[] = [];
  private readonly history: ChatMessage[] = [];
  private readonly state: S;
  private pendingPrompt: number[] | undefined;

  constructor(
    private readonly tokenizer: Tokenizer,
    private readonly renderer: FormatRenderer<S>,
    private readonly parse: (ids: readonly number[]) => CompletionParse,
    start: ConversationStart,
  ) {
    this.state = renderer.createState(start);
    const { segments, consumed } = renderer.prelude(this.state, start);
    this.history.push(...start.messages.slice(0, consumed));
    this.ids.push(...encodeSegments(tokenizer, segments));
    this.append(...start.messages.slice(consumed));
  }

  get tokens(): readonly number[] {
    return this.ids;
  }

  get messages(): readonly ChatMessage[] {
    return this.history;
  }

  get awaitingModel(): boolean {
    return this.pendingPrompt !== undefined;
  }

  append(...messages: ChatMessage[]): number[] {
    if (messages.length === 0) return [];
    if (this.pendingPrompt && messages[0].role !== 'assistant') {
      throw new Error(`the assistant turn is open (generation prompt appended); append the model's output or an assistant message, not a ${messages[0].role} message`);
    }
    let delta = encodeSegments(this.tokenizer, this.renderer.renderMessages(this.state, messages, this.history));
    if (this.pendingPrompt) {
      const prompt = this.pendingPrompt;
      if (!prompt.every((id, i) => delta[i] === id)) throw new Error('internal: an assistant message does not start with the generation prompt');
      delta = delta.slice(prompt.length);
      this.pendingPrompt = undefined;
    }
    this.history.push(...messages);
    this.ids.push(...delta);
    return delta;
  }

  appendGenerationPrompt(): number[] {
    if (this.pendingPrompt) throw new Error('the generation prompt is already appended');
    const prompt = encodeSegments(this.tokenizer, this.renderer.generationPrompt(this.state));
    this.pendingPrompt = prompt;
    this.ids.push(...prompt);
    return [...prompt];
  }

  appendGenerated(ids: readonly number[]): CompletionParse {
    if (!this.pendingPrompt) throw new Error('appendGenerated needs an open assistant turn: call appendGenerationPrompt first');
    this.pendingPrompt = undefined;
    this.ids.push(...ids);
    const parsed = this.parse(ids);
    // An unparseable turn still occupies its place in the conversation, as the text the model wrote.
    const message = parsed.ok ? parsedToMessage(parsed) : { role: 'assistant' as const, content: parsed.text };
    this.history.push(message);
    this.renderer.noteGenerated(this.state, message);
    return parsed;
  }
}
