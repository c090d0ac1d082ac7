/**
 * The Hermes / ChatML tool format (Qwen2.5-style): `<|im_start|>{role}\n{content}<|im_end|>` joined by `\n`,
 * tools listed in the system prompt inside `<tools></tools>`, calls as `<tool_call>{"name": …, "arguments": …}</tool_call>`
 * in the assistant text, results as `<tool_response>…</tool_response>` in a user turn (consecutive results share
 * one turn, as Qwen renders them) or, with `toolResponseRole: 'tool'`, one `tool` turn each (Hermes 2 Pro style).
 * Reasoning renders as a leading `<think>\n…\n</think>\n\n` block.
 */
import type { ChatFormat, CompletionParse, ConversationStart } from './chat-format.ts';
import { HermesStreamParser } from './hermes-parser.ts';
import type { ChatMessage, ToolSpec } from './messages.ts';
import { pythonJson } from './python-json.ts';
import { encodeSegments, special, text, type Segment } from './segments.ts';
import { RenderedFormat, type FormatRenderer } from './session.ts';
import { CHATML, HARMONY } from './special-tokens.ts';
import type { Tokenizer } from './tokenizer.ts';

export interface HermesOptions {
  /** Where tool results go: one `user` turn per batch of results (Qwen, default) or a `tool` turn each. */
  toolResponseRole?: 'user' | 'tool';
}

export function hermesToolsPrompt(tools: readonly ToolSpec[]): string {
  return [
    '# Tools',
    'You may call one or more functions to assist with the user query.',
    `You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n${tools.map(pythonJson).join('\n')}\n</tools>`,
    'For each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>',
  ].join('\n\n');
}

interface HermesState {
  tools: readonly ToolSpec[];
  /** Something is rendered already, so the next turn is preceded by `\n`. */
  started: boolean;
  /** The last rendered turn is a user turn of tool responses, which a later tool message cannot extend. */
  endsWithToolGroup: boolean;
}

export class HermesRenderer implements FormatRenderer<HermesState> {
  constructor(private readonly options: HermesOptions = {}) {}

  createState(start: ConversationStart): HermesState {
    return { tools: start.tools ?? [], started: false, endsWithToolGroup: false };
  }

  private turn(state: HermesState, role: string, body: string): Segment[] {
    const out: Segment[] = state.started ? [text('\n')] : [];
    out.push(special(CHATML.imStart), text(`${role}\n`), text(body), special(CHATML.imEnd));
    state.started = true;
    state.endsWithToolGroup = false;
    return out;
  }

  prelude(state: HermesState, start: ConversationStart): { segments: Segment[]; consumed: number } {
    const first = start.messages[0];
    const system = first?.role === 'system' ? first.content : undefined;
    const parts = [...(system !== undefined ? [system] : []), ...(state.tools.length > 0 ? [hermesToolsPrompt(state.tools)] : [])];
    const segments = parts.length > 0 ? this.turn(state, 'system', parts.join('\n\n')) : [];
    return { segments, consumed: system !== undefined ? 1 : 0 };
  }

  assistantBody(message: ChatMessage): string {
    const calls = (message.toolCalls ?? []).map((c) => `<tool_call>\n{"name": ${JSON.stringify(c.name)}, "arguments": ${pythonJson(c.arguments)}}\n</tool_call>`);
    const body = [message.content, ...calls].filter((part) => part.length > 0).join('\n');
    return message.reasoning !== undefined ? `<think>\n${message.reasoning}\n</think>\n\n${body}` : body;
  }

  renderMessages(state: HermesState, messages: readonly ChatMessage[]): Segment[] {
    const out: Segment[] = [];
    const groupTools = (this.options.toolResponseRole ?? 'user') === 'user';
    for (let i = 0; i < messages.length; i++) {
      const message = messages[i];
      if (message.role === 'tool') {
        const response = (m: ChatMessage) => `<tool_response>\n${m.content}\n</tool_response>`;
        if (!groupTools) {
          out.push(...this.turn(state, 'tool', response(message)));
          continue;
        }
        if (state.endsWithToolGroup) {
          throw new Error('hermes renders consecutive tool results as one user turn: append all results of an assistant turn in one append() call');
        }
        const group = [message];
        while (i + 1 < messages.length && messages[i + 1].role === 'tool') group.push(messages[++i]);
        out.push(...this.turn(state, 'user', group.map(response).join('\n')));
        state.endsWithToolGroup = true;
      } else if (message.role === 'assistant') {
        out.push(...this.turn(state, 'assistant', this.assistantBody(message)));
      } else {
        out.push(...this.turn(state, message.role, message.content));
      }
    }
    return out;
  }

  generationPrompt(state: HermesState): Segment[] {
    return [...(state.started ? [text('\n')] : []), special(CHATML.imStart), text('assistant\n')];
  }

  noteGenerated(state: HermesState): void {
    state.started = true;
    state.endsWithToolGroup = false;
  }
}

export class HermesFormat extends RenderedFormat<HermesState> implements ChatFormat {
  readonly name = 'hermes';
  readonly stopTokenIds: readonly number[];
  declare readonly renderer: HermesRenderer;

  constructor(tokenizer: Tokenizer, options: HermesOptions = {}) {
    const renderer = new HermesRenderer(options);
    super(tokenizer, renderer);
    const endOfText = tokenizer.specialTokens.get(HARMONY.endOfText);
    this.stopTokenIds = [tokenizer.specialId(CHATML.imEnd), ...(endOfText !== undefined ? [endOfText] : [])];
    tokenizer.specialId(CHATML.imStart);
  }

  /** The ids a model should sample after `<|im_start|>assistant\n` to produce `message`, ending with `<|im_end|>`. */
  renderCompletion(message: ChatMessage): number[] {
    if (message.role !== 'assistant') throw new Error(`a completion is an assistant message, not ${message.role}`);
    return encodeSegments(this.tokenizer, [text(this.renderer.assistantBody(message)), special(CHATML.imEnd)]);
  }

  createStreamParser(toolNames?: readonly string[]): HermesStreamParser {
    return new HermesStreamParser(this.tokenizer, this.stopTokenIds, { toolNames });
  }

  parseCompletion(ids: readonly number[], toolNames?: readonly string[]): CompletionParse {
    const parser = this.createStreamParser(toolNames);
    for (const id of ids) parser.push(id);
    return parser.finish();
  }
}
