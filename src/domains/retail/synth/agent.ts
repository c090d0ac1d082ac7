/** The agent side of a synthetic episode: a session gets what happened since its last turn and returns its next turn. */
import type { Message } from '../../../tooluse/messages.ts';
import type { AgentTurn } from '../../../tooluse/orchestrator.ts';
import type { Task } from '../../../tooluse/tasks.ts';
import type { ToolSchema } from '../../../tooluse/types.ts';

export interface AgentEpisodeContext {
  task: Task;
  tools: readonly ToolSchema[];
  seed: number;
}

export interface AgentSession {
  /** `observed`: the messages since the agent's last turn (the user's text or tool results), oldest first. */
  act(observed: readonly Message[]): AgentTurn;
}

export interface SynthAgent {
  readonly name: string;
  start(context: AgentEpisodeContext): AgentSession;
}
