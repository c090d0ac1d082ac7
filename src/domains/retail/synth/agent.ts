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

/** A mistake an imperfect agent made on purpose (see expert-mistakes.ts). */
export interface AgentMistake {
  kind: string;
  detail: string;
}

/** What an agent reports about its episode, copied into the trajectory. */
export interface AgentNotes {
  mistakes: AgentMistake[];
  /** Decision points at which a mistake could have been made (each drew once against the mistake rate). */
  mistakeOpportunities: number;
  /** Calls made by mistake and then made right (recovery.ts): context for the turns after them, not demonstrations. */
  slips?: SlipRecord[];
}

/** A slipped call (recovery.ts). */
export interface SlipRecord {
  /** The agent turn (0-based, counting the agent's turns) that slipped. */
  turn: number;
  detail: string;
}

export interface AgentSession {
  /** `observed`: the messages since the agent's last turn (the user's text or tool results), oldest first. */
  act(observed: readonly Message[]): AgentTurn;
  /** Notes on the episode so far; undefined when the agent keeps none (e.g. the perfect expert). */
  notes?(): AgentNotes | undefined;
}

export interface SynthAgent {
  readonly name: string;
  start(context: AgentEpisodeContext): AgentSession;
}
