/**
 * `OpenAIAgent`: τ²'s LLM agent over an OpenAI-compatible server. Each turn sends the system prompt (τ²'s agent
 * instructions + policy), the conversation so far and the tools as a chat-completions request, and turns the reply
 * into an agent turn: text, tool calls, or both (τ²'s default routing sends both to the env).
 *
 * Broken replies never crash an episode: a tool call whose arguments are not valid JSON is passed on as the raw
 * string, which the env answers with a tool error (as τ² answers it); a call without a function name becomes a call
 * to the empty name (a "not found" tool error); an empty reply becomes a short text so the conversation continues.
 */
import type { Message } from '../../tooluse/messages.ts';
import { toOpenAIMessages } from '../../tooluse/openai.ts';
import type { AgentTurn } from '../../tooluse/orchestrator.ts';
import type { ToolSchema } from '../../tooluse/types.ts';
import type { ChatClient } from './chat-client.ts';

export const EMPTY_REPLY_TEXT = '(no response)';

export interface AgentEpisode {
  systemPrompt: string;
  /** Tools offered to the model (τ²'s agent never gets the gym's `done` tool; see `withoutDoneTool`). */
  tools: readonly ToolSchema[];
  seed: number;
}

export interface AgentTurnStats {
  malformedToolCalls: number;
  emptyReplies: number;
}

export interface OpenAIAgentOptions {
  /** Ask for at most one tool call per turn (τ²'s policy); sent as `parallel_tool_calls: false`. Default false (not sent). */
  noParallelToolCalls?: boolean;
}

export function withoutDoneTool(tools: readonly ToolSchema[]): ToolSchema[] {
  return tools.filter((t) => t.function.name !== 'done');
}

function isValidJsonObject(text: string): boolean {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v);
  } catch {
    return false;
  }
}

export class OpenAIAgent {
  readonly name: string;
  readonly stats: AgentTurnStats = { malformedToolCalls: 0, emptyReplies: 0 };

  constructor(
    readonly client: ChatClient,
    private readonly options: OpenAIAgentOptions = {},
  ) {
    this.name = `openai:${client.model}`;
  }

  start(episode: AgentEpisode): { act(messages: readonly Message[]): Promise<AgentTurn> } {
    const tools = episode.tools.map((t) => ({ type: 'function' as const, function: t.function }));
    return {
      act: async (messages) => {
        const reply = await this.client.complete({
          messages: toOpenAIMessages(messages, episode.systemPrompt) as never,
          ...(tools.length ? { tools: tools as never, tool_choice: 'auto' as const } : {}),
          ...(this.options.noParallelToolCalls && tools.length ? { parallel_tool_calls: false } : {}),
          seed: episode.seed,
        });
        return this.toTurn(reply.choices[0]!.message as unknown as RawAssistant);
      },
    };
  }

  /** The model's message as an agent turn (see the file comment for how broken replies are handled). */
  toTurn(message: RawAssistant): AgentTurn {
    const calls = (message.tool_calls ?? []).map((c, i) => {
      const fn = c.function ?? { name: '', arguments: '' };
      const args = typeof fn.arguments === 'string' ? fn.arguments : JSON.stringify(fn.arguments ?? {});
      if (!isValidJsonObject(args === '' ? '{}' : args)) this.stats.malformedToolCalls++;
      return { id: typeof c.id === 'string' && c.id !== '' ? c.id : `call_${i}`, name: typeof fn.name === 'string' ? fn.name : '', arguments: args === '' ? '{}' : args };
    });
    const content = typeof message.content === 'string' && message.content !== '' ? message.content : null;
    if (calls.length === 0 && (content === null || content.trim() === '')) {
      this.stats.emptyReplies++;
      return { content: EMPTY_REPLY_TEXT, toolCalls: null };
    }
    return { content, toolCalls: calls.length ? calls : null };
  }
}

/** The assistant message as servers actually send it (fields may be missing or mistyped). */
export interface RawAssistant {
  content?: string | null;
  tool_calls?: { id?: string; type?: string; function?: { name?: string; arguments?: unknown } }[] | null;
}
