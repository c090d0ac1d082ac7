/**
 * The agents `longrun eval` can run, behind one interface: a session per episode that gets the whole conversation
 * and what was observed since its last turn, and returns the next turn.
 */
import type { ChatClientOptions, TokenUsage } from '../../llm/openai/chat-client.ts';
import { ChatClient } from '../../llm/openai/chat-client.ts';
import { OpenAIAgent, withoutDoneTool, type AgentTurnStats } from '../../llm/openai/agent.ts';
import type { SynthAgent } from '../../domains/retail/synth/agent.ts';
import type { Message } from '../../tooluse/messages.ts';
import type { AgentTurn } from '../../tooluse/orchestrator.ts';
import type { Task } from '../../tooluse/tasks.ts';
import type { ToolSchema } from '../../tooluse/types.ts';

export interface EvalEpisode {
  task: Task;
  /** The env's tools, τ²'s `done` included. */
  tools: readonly ToolSchema[];
  systemPrompt: string;
  seed: number;
}

export interface EvalAgentSession {
  act(messages: readonly Message[], observed: readonly Message[]): Promise<AgentTurn>;
  /** Token usage of this episode's requests (LLM agents). */
  usage?(): TokenUsage;
  stats?(): AgentTurnStats;
}

export interface EvalAgent {
  readonly name: string;
  start(episode: EvalEpisode): EvalAgentSession;
}

/** τ²'s LLM agent; a fresh client per episode (sharing the run's limiter) so usage is counted per episode. */
export class OpenAIEvalAgent implements EvalAgent {
  readonly name: string;
  constructor(private readonly clientOptions: ChatClientOptions) {
    this.name = `openai:${clientOptions.model}`;
  }

  start(episode: EvalEpisode): EvalAgentSession {
    const client = new ChatClient({ ...this.clientOptions, retry: { ...this.clientOptions.retry, seed: episode.seed } });
    const agent = new OpenAIAgent(client);
    const session = agent.start({ systemPrompt: episode.systemPrompt, tools: withoutDoneTool(episode.tools), seed: episode.seed });
    return { act: (messages) => session.act(messages), usage: () => ({ ...client.usage }), stats: () => ({ ...agent.stats }) };
  }
}

/** Adapts a synchronous synthetic agent (the rule-based expert) to the eval interface. */
export class SynthEvalAgent implements EvalAgent {
  readonly name: string;
  constructor(private readonly agent: SynthAgent) {
    this.name = agent.name;
  }

  start(episode: EvalEpisode): EvalAgentSession {
    const session = this.agent.start({ task: episode.task, tools: episode.tools, seed: episode.seed });
    return { act: async (_messages, observed) => session.act(observed) };
  }
}
