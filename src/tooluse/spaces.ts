/**
 * Gymnasium spaces for the tool-use env. An action is one agent turn (a τ² gym string, or `{content, toolCalls}`);
 * an observation is the messages since the agent's last turn plus their `role: content` text. Tool-call arguments are
 * not checked against the tool schemas in `contains`: a malformed call is a legal action that earns a tool error, as
 * in τ².
 */
import { Space, Text, ToolCallSpace, type SpaceJSON } from '../gym/spaces/index.ts';
import type { Json } from '../gym/spaces/index.ts';
import type { Message } from './messages.ts';
import { messagesToText } from './messages.ts';
import type { AgentTurn } from './orchestrator.ts';
import type { ToolSchema } from './types.ts';

export type ToolUseAction = string | AgentTurn;

export interface ToolUseObservation {
  messages: Message[];
  text: string;
}

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

function isToolCallLike(c: unknown): boolean {
  return isObject(c) && typeof c.name === 'string' && (c.arguments === undefined || isObject(c.arguments) || typeof c.arguments === 'string');
}

/** Agent turns. `sample()` draws (seeded) either free text or a schema-valid call to one of the tools. */
export class AgentTurnSpace extends Space<ToolUseAction> {
  readonly type = 'AgentTurn';
  private readonly calls: ToolCallSpace;
  private readonly text = new Text(64, { charset: 'any' });

  constructor(readonly tools: readonly ToolSchema[]) {
    super();
    this.calls = new ToolCallSpace(tools);
  }

  override seed(seed?: number | null) {
    const used = super.seed(seed);
    this.calls.seed(this.npRandom.integers(2 ** 31));
    this.text.seed(this.npRandom.integers(2 ** 31));
    return used;
  }

  sample(): ToolUseAction {
    if (this.npRandom.random() < 0.5) return { content: this.text.sample(), toolCalls: null };
    const call = this.calls.sample();
    return { content: null, toolCalls: [{ name: call.name, arguments: call.arguments }] };
  }

  contains(x: unknown): x is ToolUseAction {
    if (typeof x === 'string') return x.trim() !== '';
    if (!isObject(x)) return false;
    const content = x.content;
    const calls = x.toolCalls;
    if (content !== undefined && content !== null && typeof content !== 'string') return false;
    if (calls !== undefined && calls !== null && !(Array.isArray(calls) && calls.every(isToolCallLike))) return false;
    return (typeof content === 'string' && content.trim() !== '') || (Array.isArray(calls) && calls.length > 0);
  }

  equals(other: unknown): boolean {
    return other instanceof AgentTurnSpace && JSON.stringify(other.tools) === JSON.stringify(this.tools);
  }

  toJSON(): SpaceJSON {
    return { type: this.type, tools: this.tools as unknown as Json };
  }
}

function isMessage(m: unknown): m is Message {
  if (!isObject(m)) return false;
  switch (m.role) {
    case 'system':
      return typeof m.content === 'string';
    case 'assistant':
    case 'user':
      return (m.content === null || typeof m.content === 'string') && (m.toolCalls === null || (Array.isArray(m.toolCalls) && m.toolCalls.every(isToolCallLike)));
    case 'tool':
      return typeof m.id === 'string' && typeof m.content === 'string' && typeof m.error === 'boolean' && (m.requestor === 'assistant' || m.requestor === 'user');
    default:
      return false;
  }
}

/** Observations: `{messages, text}` with `text` the `role: content` rendering of `messages`. */
export class ToolUseObservationSpace extends Space<ToolUseObservation> {
  readonly type = 'ToolUseObservation';
  private readonly text = new Text(32, { charset: 'any' });

  override seed(seed?: number | null) {
    const used = super.seed(seed);
    this.text.seed(this.npRandom.integers(2 ** 31));
    return used;
  }

  /** A seeded user message or tool result; enough for checkers, not a model of real traffic. */
  sample(): ToolUseObservation {
    const content = this.text.sample();
    const messages: Message[] =
      this.npRandom.random() < 0.5
        ? [{ role: 'user', content, toolCalls: null }]
        : [{ role: 'tool', id: `call_${this.npRandom.integers(1000)}`, content, requestor: 'assistant', error: this.npRandom.random() < 0.5 }];
    return { messages, text: messagesToText(messages) };
  }

  contains(x: unknown): x is ToolUseObservation {
    return isObject(x) && Array.isArray(x.messages) && x.messages.every(isMessage) && typeof x.text === 'string';
  }

  equals(other: unknown): boolean {
    return other instanceof ToolUseObservationSpace;
  }

  toJSON(): SpaceJSON {
    return { type: this.type };
  }
}
