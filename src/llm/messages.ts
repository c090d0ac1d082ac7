/**
 * Chat messages as the agent loop sees them (τ²-style, OpenAI-shaped), independent of src/tooluse: a rollout
 * adapter maps between the two. Tool-call arguments are parsed JSON objects, as τ² passes them to tools.
 */

export type Role = 'system' | 'user' | 'assistant' | 'tool';

export interface ToolCall {
  /** Call id for pairing a result with its call; formats without ids (harmony, hermes) do not render it. */
  id?: string;
  name: string;
  arguments: Record<string, unknown>;
}

export interface ChatMessage {
  role: Role;
  content: string;
  /** Assistant chain of thought (harmony's analysis channel, hermes's `<think>` block). */
  reasoning?: string;
  /** Assistant tool calls. */
  toolCalls?: ToolCall[];
  /** For role `tool`: the id of the call this answers. */
  toolCallId?: string;
  /** For role `tool`: the name of the tool that produced it (found from `toolCallId` when absent). */
  name?: string;
}

/** An OpenAI function tool (structurally the same as src/tooluse's ToolSchema). */
export interface ToolSpec {
  type: 'function';
  function: { name: string; description?: string; parameters?: Record<string, unknown> };
}

/**
 * The tool name a tool message answers: its `name`; else the call with its `toolCallId` in `history`; else, for
 * calls without ids (parsed from harmony/hermes output), the call at the same position among the tool messages
 * that follow the last assistant message.
 */
export function toolNameOf(message: ChatMessage, history: readonly ChatMessage[]): string | undefined {
  if (message.name) return message.name;
  if (message.toolCallId !== undefined) {
    for (let i = history.length - 1; i >= 0; i--) {
      const call = history[i].toolCalls?.find((c) => c.id === message.toolCallId);
      if (call) return call.name;
    }
  }
  let position = 0;
  for (let i = history.length - 1; i >= 0; i--) {
    const earlier = history[i];
    if (earlier.role === 'tool') position++;
    else if (earlier.role === 'assistant') return earlier.toolCalls?.[position]?.name;
    else return undefined;
  }
  return undefined;
}
