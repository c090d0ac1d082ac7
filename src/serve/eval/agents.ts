/**
 * The agents `longrun eval` can run, behind two interfaces: a turn agent (`EvalAgent`) gets a session per episode
 * that sees the whole conversation and what was observed since its last turn, and returns the next turn; an episode
 * agent (`EpisodeEvalAgent`, the token-level checkpoint agent) plays the whole episode on the env itself.
 */
import type { ChatClientOptions, TokenUsage } from '../../llm/openai/chat-client.ts';
import { ChatClient } from '../../llm/openai/chat-client.ts';
import { OpenAIAgent, withoutDoneTool, type AgentTurnStats } from '../../llm/openai/agent.ts';
import type { SynthAgent } from '../../domains/retail/synth/agent.ts';
import type { ToolUseEnv } from '../../tooluse/env.ts';
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

/** What an episode agent reports: the env's last info and, when the agent loop ended the episode, why. */
export interface PlayedEpisode {
  info: Record<string, unknown>;
  /** Set when the agent ended the episode itself (a turn or token limit, a parse error); the reward is then 0. */
  agentEnded?: string;
  reward: number;
  usage?: TokenUsage;
  stats?: Record<string, number>;
  /** The token ids of the episode, when the agent was asked to keep them. */
  tokens?: { prompt: number[]; response: number[]; responseMask: number[] };
}

/** An agent that plays whole episodes: it resets and steps the env itself (seeded with `seed`, on `task`). */
export interface EpisodeEvalAgent {
  readonly name: string;
  play(env: EvalEnvLike, episode: { task: Task; seed: number }): Promise<PlayedEpisode>;
}

/** The env an episode agent plays: τ²'s ToolUseEnv or one of its shape (runner.ts `EvalEnv`). */
export type EvalEnvLike = Pick<ToolUseEnv, 'reset' | 'step'> & { readonly tools?: readonly ToolSchema[] };

export type AnyEvalAgent = EvalAgent | EpisodeEvalAgent;

export function isEpisodeAgent(agent: AnyEvalAgent): agent is EpisodeEvalAgent {
  return typeof (agent as EpisodeEvalAgent).play === 'function';
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
