/**
 * Qwen3's chat format (the hybrid-thinking Qwen3 models' `chat_template`, here with `enable_thinking=false`), for
 * sampling and training a Qwen3 model on a remote engine (docs/tinker.md):
 *
 *   <|im_start|>system\n{system}\n\n# Tools … <tools>\n{tool json per line}\n</tools> … <|im_end|>\n
 *   <|im_start|>user\n{content}<|im_end|>\n
 *   <|im_start|>assistant\n<think>\n\n</think>\n\n{content}\n<tool_call>\n{"name": …, "arguments": …}\n</tool_call><|im_end|>\n
 *   <|im_start|>user\n<tool_response>\n{result}\n</tool_response>\n<tool_response>…</tool_response><|im_end|>\n
 *
 * Tools go in the system turn as the template writes them (`tojson`: Python's `json.dumps` separators); calls are
 * `<tool_call>` blocks after the text; the results of one assistant turn share one user turn. `<tool_call>`,
 * `</tool_call>`, `<tool_response>`, `</tool_response>`, `<think>` and `</think>` are single added tokens of the Qwen3
 * tokenizer: where the template writes them they are rendered as those ids (as Hugging Face's tokenizer splits them
 * out of the rendered text); inside content (a user message, a tool result) they stay plain text.
 *
 * Non-thinking mode: the generation prompt is `<|im_start|>assistant\n<think>\n\n</think>\n\n`, so the model answers
 * without reasoning. Each text run between two special tokens is encoded as one piece, as `tokenizers` encodes the
 * rendered template, so the first prompt of an episode is token for token what `apply_chat_template` gives.
 *
 * The one departure, for append-only sessions: the template re-renders an earlier assistant turn without its empty
 * think block (it keeps `<think>` only after the last user query, and there only for the last turn or a turn with
 * reasoning), so the prompt of turn k+1 would not extend the tokens of turn k. Here every assistant turn after a
 * user message keeps the empty think block it was sampled after: each prompt is the previous prompt, the sampled
 * tokens and the new observation, nothing is re-tokenised, and the trainer scores exactly what was sampled.
 * Assistant messages before any user message (a greeting) render as the template renders history, without it.
 * A message with `reasoning` renders it as a second think block after the empty one, which is what a model that
 * wrote `<think>…</think>` anyway sampled, and what the parser reads back as reasoning.
 */
import type { ChatFormat, CompletionParse, ConversationStart } from './chat-format.ts';
import { hermesToolsPrompt } from './hermes.ts';
import { HermesStreamParser } from './hermes-parser.ts';
import type { ChatMessage, ToolSpec } from './messages.ts';
import { pythonJson } from './python-json.ts';
import { encodeSegments, special, text, type Segment } from './segments.ts';
import { RenderedFormat, type FormatRenderer } from './session.ts';
import { CHATML, HARMONY, splitOnSpecials } from './special-tokens.ts';
import type { Tokenizer } from './tokenizer.ts';

/** The template's tag tokens (added tokens of the Qwen3 tokenizer, not marked special there). */
export const QWEN3_TAGS = {
  toolCall: '<tool_call>',
  toolCallEnd: '</tool_call>',
  toolResponse: '<tool_response>',
  toolResponseEnd: '</tool_response>',
  think: '<think>',
  thinkEnd: '</think>',
} as const;

const TAG_NAMES: readonly string[] = Object.values(QWEN3_TAGS);

/** Template text with its tags as special segments (only for text the template itself writes). */
function templated(value: string): Segment[] {
  return splitOnSpecials(value, TAG_NAMES, 'all').map((p) => (p.kind === 'special' ? special(p.name) : text(p.text)));
}

/** Joins neighbouring text segments, so each run between two special tokens is encoded in one piece. */
function merged(segments: readonly Segment[]): Segment[] {
  const out: Segment[] = [];
  for (const s of segments) {
    const last = out.at(-1);
    if ('text' in s && last && 'text' in last) out[out.length - 1] = text(last.text + s.text);
    else if (!('text' in s) || s.text.length > 0) out.push(s);
  }
  return out;
}

interface Qwen3State {
  tools: readonly ToolSpec[];
  /** Something is rendered already, so the next turn is preceded by `\n`. */
  started: boolean;
  /** A user message was rendered: assistant turns from here on carry the (empty) think block. */
  afterQuery: boolean;
  /** The last rendered turn is a user turn of tool responses, which a later tool message cannot extend. */
  endsWithToolGroup: boolean;
}

export class Qwen3Renderer implements FormatRenderer<Qwen3State> {
  createState(start: ConversationStart): Qwen3State {
    return { tools: start.tools ?? [], started: false, afterQuery: false, endsWithToolGroup: false };
  }

  private open(state: Qwen3State, role: string): Segment[] {
    return [...(state.started ? [text('\n')] : []), special(CHATML.imStart), text(`${role}\n`)];
  }

  private turn(state: Qwen3State, role: string, body: readonly Segment[]): Segment[] {
    const out = merged([...this.open(state, role), ...body, special(CHATML.imEnd)]);
    state.started = true;
    state.endsWithToolGroup = false;
    return out;
  }

  prelude(state: Qwen3State, start: ConversationStart): { segments: Segment[]; consumed: number } {
    const first = start.messages[0];
    const system = first?.role === 'system' ? first.content : undefined;
    if (state.tools.length === 0) return { segments: system !== undefined ? this.turn(state, 'system', [text(system)]) : [], consumed: system !== undefined ? 1 : 0 };
    // The tool schemas are content (plain text); the instructions around them are the template's (tags as tokens).
    const schemas = state.tools.map(pythonJson).join('\n');
    const prompt = hermesToolsPrompt(state.tools);
    const at = prompt.indexOf(schemas);
    const head = prompt.slice(0, at);
    const tail = prompt.slice(at + schemas.length);
    const body = [...(system !== undefined ? [text(`${system}\n\n`)] : []), ...templated(head), text(schemas), ...templated(tail)];
    return { segments: this.turn(state, 'system', body), consumed: system !== undefined ? 1 : 0 };
  }

  /** What the model samples after the generation prompt for `message`, up to (not including) `<|im_end|>`. */
  assistantBody(message: ChatMessage): Segment[] {
    const out: Segment[] = [];
    if (message.reasoning !== undefined) out.push(special(QWEN3_TAGS.think), text(`\n${message.reasoning}\n`), special(QWEN3_TAGS.thinkEnd), text('\n\n'));
    out.push(text(message.content));
    (message.toolCalls ?? []).forEach((c, i) => {
      if (i > 0 || message.content.length > 0) out.push(text('\n'));
      out.push(special(QWEN3_TAGS.toolCall), text(`\n{"name": ${JSON.stringify(c.name)}, "arguments": ${pythonJson(c.arguments)}}\n`), special(QWEN3_TAGS.toolCallEnd));
    });
    return merged(out);
  }

  renderMessages(state: Qwen3State, messages: readonly ChatMessage[]): Segment[] {
    const out: Segment[] = [];
    for (let i = 0; i < messages.length; i++) {
      const message = messages[i];
      if (message.role === 'tool') {
        if (state.endsWithToolGroup) {
          throw new Error('qwen3 renders consecutive tool results as one user turn: append all results of an assistant turn in one append() call');
        }
        const group = [message];
        while (i + 1 < messages.length && messages[i + 1].role === 'tool') group.push(messages[++i]);
        const body = group.flatMap((m, j) => [text(j === 0 ? '' : '\n'), special(QWEN3_TAGS.toolResponse), text(`\n${m.content}\n`), special(QWEN3_TAGS.toolResponseEnd)]);
        out.push(...this.turn(state, 'user', body));
        state.endsWithToolGroup = true;
      } else if (message.role === 'assistant') {
        // The generation prompt, then what the model samples after it, encoded apart (as a sampled turn is).
        out.push(...this.generationPrompt(state), ...this.assistantBody(message), special(CHATML.imEnd));
        state.started = true;
        state.endsWithToolGroup = false;
      } else {
        out.push(...this.turn(state, message.role, [text(message.content)]));
        if (message.role === 'user') state.afterQuery = true;
      }
    }
    return out;
  }

  generationPrompt(state: Qwen3State): Segment[] {
    const head = merged(this.open(state, 'assistant'));
    if (!state.afterQuery) return head;
    return [...head, special(QWEN3_TAGS.think), text('\n\n'), special(QWEN3_TAGS.thinkEnd), text('\n\n')];
  }

  noteGenerated(state: Qwen3State): void {
    state.started = true;
    state.endsWithToolGroup = false;
  }
}

export class Qwen3Format extends RenderedFormat<Qwen3State> implements ChatFormat {
  readonly name = 'qwen3';
  readonly stopTokenIds: readonly number[];
  declare readonly renderer: Qwen3Renderer;
  private readonly tagIds: ReadonlySet<number>;

  constructor(tokenizer: Tokenizer) {
    super(tokenizer, new Qwen3Renderer());
    const endOfText = tokenizer.specialTokens.get(HARMONY.endOfText);
    this.stopTokenIds = [tokenizer.specialId(CHATML.imEnd), ...(endOfText !== undefined ? [endOfText] : [])];
    tokenizer.specialId(CHATML.imStart);
    this.tagIds = new Set(TAG_NAMES.map((name) => tokenizer.specialId(name)));
  }

  /** The ids a model should sample after the generation prompt to produce `message`, ending with `<|im_end|>`. */
  renderCompletion(message: ChatMessage): number[] {
    if (message.role !== 'assistant') throw new Error(`a completion is an assistant message, not ${message.role}`);
    return encodeSegments(this.tokenizer, [...this.renderer.assistantBody(message), special(CHATML.imEnd)]);
  }

  createStreamParser(toolNames?: readonly string[]): HermesStreamParser {
    // The model's <tool_call>/<think> tokens are read as their text; <tool_response> and the ChatML markers are not its to write.
    const textSpecialIds = new Set([...this.tagIds].filter((id) => id !== this.tokenizer.specialId(QWEN3_TAGS.toolResponse) && id !== this.tokenizer.specialId(QWEN3_TAGS.toolResponseEnd)));
    return new HermesStreamParser(this.tokenizer, this.stopTokenIds, { toolNames, textSpecialIds });
  }

  parseCompletion(ids: readonly number[], toolNames?: readonly string[]): CompletionParse {
    const parser = this.createStreamParser(toolNames);
    for (const id of ids) parser.push(id);
    return parser.finish();
  }
}
