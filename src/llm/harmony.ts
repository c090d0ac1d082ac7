/**
 * The harmony chat format of gpt-oss. Rendering follows OpenAI's harmony docs:
 * a system message (identity, knowledge cutoff, reasoning effort, valid channels), a developer message
 * (`# Instructions` = the conversation's system prompt, `# Tools` = a `functions` namespace), then
 * `<|start|>{role}<|channel|>{channel}<|message|>{content}<|end|>` per message; tool calls go to the commentary
 * channel as `commentary to=functions.NAME <|constrain|>json` and end with `<|call|>`; tool results come from
 * `functions.NAME to=assistant`. The generation prompt is `<|start|>assistant`.
 *
 * Deliberate differences from the HF chat template, all for append-only token lists:
 * - history keeps earlier analysis (reasoning) messages (the template drops old chain of thought);
 * - a sampled final message keeps its `<|return|>` when the conversation goes on (the template would re-render it
 *   with `<|end|>`), so a session's tokens equal `render()` of its messages except for that one token;
 * - tool results are written raw, not JSON-quoted as the template's `tojson` does (the harmony docs write them raw).
 */
import { type ChatFormat, type CompletionParse, type ConversationStart } from './chat-format.ts';
import { HarmonyStreamParser } from './harmony-parser.ts';
import { renderFunctionsNamespace } from './harmony-tools.ts';
import { toolNameOf, type ChatMessage, type ToolSpec } from './messages.ts';
import { encodeSegments, special, text, type Segment } from './segments.ts';
import { RenderedFormat, type FormatRenderer } from './session.ts';
import { HARMONY } from './special-tokens.ts';
import type { Tokenizer } from './tokenizer.ts';

export type ReasoningEffort = 'low' | 'medium' | 'high';

export interface HarmonyOptions {
  reasoningEffort?: ReasoningEffort;
  modelIdentity?: string;
  knowledgeCutoff?: string;
  /** `YYYY-MM-DD`; the line is left out when absent, so prompts stay deterministic. */
  currentDate?: string;
  /** Also stop sampling at `<|end|>` (one message per completion). Default false: stop at `<|return|>`/`<|call|>`. */
  stopAtEnd?: boolean;
}

const DEFAULT_IDENTITY = 'You are ChatGPT, a large language model trained by OpenAI.';

/** One harmony message as segments. `to` after the channel is the docs' form for assistant calls. */
function harmonyMessage(head: string, channel: string | undefined, body: string, terminator: string, constrain?: string): Segment[] {
  const out: Segment[] = [special(HARMONY.start), text(head)];
  if (channel !== undefined) out.push(special(HARMONY.channel), text(channel));
  if (constrain !== undefined) out.push(special(HARMONY.constrain), text(constrain));
  out.push(special(HARMONY.message), text(body), special(terminator));
  return out;
}

interface HarmonyState {
  tools: readonly ToolSpec[];
}

export class HarmonyRenderer implements FormatRenderer<HarmonyState> {
  constructor(private readonly options: HarmonyOptions = {}) {}

  createState(start: ConversationStart): HarmonyState {
    return { tools: start.tools ?? [] };
  }

  systemText(hasTools: boolean): string {
    const o = this.options;
    const lines = [o.modelIdentity ?? DEFAULT_IDENTITY, `Knowledge cutoff: ${o.knowledgeCutoff ?? '2024-06'}`];
    if (o.currentDate) lines.push(`Current date: ${o.currentDate}`);
    let out = `${lines.join('\n')}\n\nReasoning: ${o.reasoningEffort ?? 'medium'}\n\n`;
    out += '# Valid channels: analysis, commentary, final. Channel must be included for every message.';
    if (hasTools) out += "\nCalls to these tools must go to the commentary channel: 'functions'.";
    return out;
  }

  prelude(state: HarmonyState, start: ConversationStart): { segments: Segment[]; consumed: number } {
    const segments = harmonyMessage('system', undefined, this.systemText(state.tools.length > 0), HARMONY.end);
    const first = start.messages[0];
    const instructions = first?.role === 'system' ? first.content : undefined;
    const sections: string[] = [];
    if (instructions !== undefined) sections.push(`# Instructions\n\n${instructions}`);
    if (state.tools.length > 0) sections.push(`# Tools\n\n${renderFunctionsNamespace(state.tools)}`);
    if (sections.length > 0) segments.push(...harmonyMessage('developer', undefined, sections.join('\n\n'), HARMONY.end));
    return { segments, consumed: instructions !== undefined ? 1 : 0 };
  }

  renderMessages(_state: HarmonyState, messages: readonly ChatMessage[], history: readonly ChatMessage[]): Segment[] {
    const out: Segment[] = [];
    const seen = [...history];
    for (const message of messages) {
      out.push(...this.renderMessage(message, seen, HARMONY.end));
      seen.push(message);
    }
    return out;
  }

  /** `finalTerminator` is `<|end|>` in history and `<|return|>` when the message is the model's completion. */
  renderMessage(message: ChatMessage, history: readonly ChatMessage[], finalTerminator: string): Segment[] {
    switch (message.role) {
      case 'system':
        return harmonyMessage('developer', undefined, message.content, HARMONY.end);
      case 'user':
        return harmonyMessage('user', undefined, message.content, HARMONY.end);
      case 'tool': {
        const name = toolNameOf(message, history);
        if (!name) throw new Error('a tool message needs a name, or a toolCallId / position that matches an earlier assistant tool call');
        return harmonyMessage(`functions.${name} to=assistant`, 'commentary', message.content, HARMONY.end);
      }
      case 'assistant': {
        const out: Segment[] = [];
        const calls = message.toolCalls ?? [];
        if (message.reasoning !== undefined) out.push(...harmonyMessage('assistant', 'analysis', message.reasoning, HARMONY.end));
        if (calls.length === 0) {
          out.push(...harmonyMessage('assistant', 'final', message.content, finalTerminator));
        } else {
          if (message.content.length > 0) out.push(...harmonyMessage('assistant', 'commentary', message.content, HARMONY.end));
          for (const call of calls) {
            out.push(...harmonyMessage('assistant', `commentary to=functions.${call.name} `, JSON.stringify(call.arguments), HARMONY.call, 'json'));
          }
        }
        return out;
      }
    }
  }

  generationPrompt(): Segment[] {
    return [special(HARMONY.start), text('assistant')];
  }

  noteGenerated(): void {}
}

export class HarmonyFormat extends RenderedFormat<HarmonyState> implements ChatFormat {
  readonly name = 'harmony';
  readonly stopTokenIds: readonly number[];
  declare readonly renderer: HarmonyRenderer;

  constructor(tokenizer: Tokenizer, private readonly options: HarmonyOptions = {}) {
    const renderer = new HarmonyRenderer(options);
    super(tokenizer, renderer);
    const stops = [HARMONY.return, HARMONY.call, ...(options.stopAtEnd ? [HARMONY.end] : [])];
    this.stopTokenIds = stops.map((name) => tokenizer.specialId(name));
  }

  /** The ids a model should sample after `<|start|>assistant` to produce `message` (for SFT targets and tests). */
  renderCompletion(message: ChatMessage): number[] {
    if (message.role !== 'assistant') throw new Error(`a completion is an assistant message, not ${message.role}`);
    if ((message.toolCalls?.length ?? 0) > 1) throw new Error('a harmony completion holds at most one tool call (sampling stops at <|call|>)');
    const segments = this.renderer.renderMessage(message, [], HARMONY.return);
    return encodeSegments(this.tokenizer, segments.slice(this.renderer.generationPrompt().length));
  }

  createStreamParser(toolNames?: readonly string[]): HarmonyStreamParser {
    return new HarmonyStreamParser(this.tokenizer, { toolNames });
  }

  parseCompletion(ids: readonly number[], toolNames?: readonly string[]): CompletionParse {
    const parser = this.createStreamParser(toolNames);
    for (const id of ids) parser.push(id);
    return parser.finish();
  }
}
