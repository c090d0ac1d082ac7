/**
 * Messages of a tool-use conversation, shaped like τ²-bench's (tau2.md §6), in camelCase. A trajectory is the list of
 * messages of one episode, starting with the agent's greeting.
 */
import { pyRepr } from './python/pyvalue.ts';

export type Requestor = 'assistant' | 'user';

export interface ToolCall {
  id: string;
  name: string;
  arguments: Record<string, unknown>;
  requestor: Requestor;
}

export interface SystemMessage {
  role: 'system';
  content: string;
}

export interface AssistantMessage {
  role: 'assistant';
  content: string | null;
  toolCalls: ToolCall[] | null;
  /**
   * The agent's chain of thought for this turn (harmony's analysis channel). Not part of τ²'s message: the user and
   * the evaluator never see it; it is recorded so that a demonstration can teach it. Absent unless the agent wrote one.
   */
  reasoning?: string;
}

export interface UserMessage {
  role: 'user';
  content: string | null;
  toolCalls: ToolCall[] | null;
}

export interface ToolMessage {
  role: 'tool';
  /** The id of the tool call this message answers. */
  id: string;
  content: string;
  requestor: Requestor;
  error: boolean;
}

export type Message = SystemMessage | AssistantMessage | UserMessage | ToolMessage;

/** τ²'s `has_text_content`: some non-whitespace text. */
export function hasTextContent(m: Message): boolean {
  return typeof m.content === 'string' && m.content.trim() !== '';
}

/** The message's tool calls, or null when it has none (a plain boolean guard would wrongly narrow the else branch). */
export function toolCallsIn(m: Message): ToolCall[] | null {
  return (m.role === 'assistant' || m.role === 'user') && m.toolCalls !== null && m.toolCalls.length > 0 ? m.toolCalls : null;
}

export function isToolCallMessage(m: Message): boolean {
  return toolCallsIn(m) !== null;
}

/** Every tool call of the trajectory (agent's and user's), in order. */
export function toolCallsOf(messages: readonly Message[]): ToolCall[] {
  const calls: ToolCall[] = [];
  for (const m of messages) calls.push(...(toolCallsIn(m) ?? []));
  return calls;
}

/** `name(a='x', b=1)` with keys sorted and Python-literal values, as τ²'s gym shows tool calls. */
export function toFunctionalFormat(call: { name: string; arguments: Record<string, unknown> }): string {
  const args = Object.keys(call.arguments)
    .sort()
    .map((k) => `${k}=${pyRepr(call.arguments[k])}`);
  return `${call.name}(${args.join(', ')})`;
}

/** One `role: content` line per message as τ²'s gym observation shows it (tool calls in functional form). */
export function messageToText(m: Message): string {
  const calls = toolCallsIn(m);
  if (calls) return calls.map((c) => `${m.role}: ${toFunctionalFormat(c)}`).join('\n');
  return `${m.role}: ${m.content ?? ''}`;
}

export function messagesToText(messages: readonly Message[]): string {
  return messages.map(messageToText).join('\n');
}
