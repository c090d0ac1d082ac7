/**
 * Bridges between the kit's messages and the OpenAI chat format τ² sends to its models (tau2.md §6): assistant tool
 * calls become `{id, type: "function", function: {name, arguments: JSON string}}`, tool results become
 * `{role: "tool", tool_call_id, content}`. Also τ²'s agent system prompt.
 */
import type { Message } from './messages.ts';
import type { AgentTurn } from './orchestrator.ts';

/**
 * τ²-bench's LLMAgent instructions (a customer service agent), wrapped with the domain policy as its system prompt:
 * the retail domain's and the τ² envs' (ToolUseEnv), kept verbatim for τ² fidelity. Nothing generic uses them: an env
 * defined with the environment API (src/tooluse/api/) has its own `instructions`.
 */
export const TAU2_AGENT_INSTRUCTION = [
  'You are a customer service agent that helps the user according to the <policy> provided below.',
  'In each turn you can either:',
  '- Send a message to the user.',
  '- Make a tool call.',
  'You cannot do both at the same time.',
  '',
  'Try to be helpful and always follow the policy. Always make sure you generate valid JSON only.',
].join('\n');

/** `TAU2_AGENT_INSTRUCTION` under its older name (many importers). */
export const AGENT_INSTRUCTION = TAU2_AGENT_INSTRUCTION;

/** τ²'s agent system prompt: its instructions and the domain policy (τ² envs and the retail domain only). */
export function agentSystemPrompt(policy: string): string {
  return `<instructions>\n${TAU2_AGENT_INSTRUCTION}\n</instructions>\n<policy>\n${policy}\n</policy>`;
}

export interface OpenAIToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

export type OpenAIMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; tool_calls?: OpenAIToolCall[] }
  | { role: 'tool'; tool_call_id: string; content: string };

/**
 * The agent's view as OpenAI chat messages: an optional system prompt, then the trajectory. User tool calls and
 * their results (none in retail) are not part of the agent's view and are dropped.
 */
export function toOpenAIMessages(messages: readonly Message[], systemPrompt?: string): OpenAIMessage[] {
  const out: OpenAIMessage[] = systemPrompt === undefined ? [] : [{ role: 'system', content: systemPrompt }];
  for (const m of messages) {
    switch (m.role) {
      case 'system':
        out.push({ role: 'system', content: m.content });
        break;
      case 'user':
        if (m.content !== null) out.push({ role: 'user', content: m.content });
        break;
      case 'assistant': {
        const msg: OpenAIMessage = { role: 'assistant', content: m.content };
        if (m.toolCalls?.length) {
          msg.tool_calls = m.toolCalls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: JSON.stringify(c.arguments) } }));
        }
        out.push(msg);
        break;
      }
      case 'tool':
        if (m.requestor === 'assistant') out.push({ role: 'tool', tool_call_id: m.id, content: m.content });
        break;
    }
  }
  return out;
}

/** An OpenAI assistant reply as an agent turn (arguments stay JSON strings; the orchestrator parses them). */
export function fromOpenAIAssistant(message: { content?: string | null; tool_calls?: readonly OpenAIToolCall[] | null }): AgentTurn {
  const toolCalls = (message.tool_calls ?? []).map((c) => ({ id: c.id, name: c.function.name, arguments: c.function.arguments }));
  return { content: message.content ?? null, toolCalls: toolCalls.length ? toolCalls : null };
}
