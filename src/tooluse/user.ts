/**
 * The user side of an episode (tau2.md §8). A user simulator sees the conversation from the user's seat: roles
 * flipped (the agent's texts arrive as `user`, its own past messages are `assistant`), with no tool calls or tool
 * results. It ends the episode by writing a stop token anywhere in its message.
 */
import type { Message } from './messages.ts';
import { hasTextContent, isToolCallMessage } from './messages.ts';
import type { Task } from './tasks.ts';
import { renderUserScenario } from './tasks.ts';

export const STOP_TOKEN = '###STOP###';
export const TRANSFER_TOKEN = '###TRANSFER###';
export const OUT_OF_SCOPE_TOKEN = '###OUT-OF-SCOPE###';
export const USER_STOP_TOKENS = [STOP_TOKEN, TRANSFER_TOKEN, OUT_OF_SCOPE_TOKEN] as const;

/** Substring test, as τ² does: the token may appear anywhere in the text. */
export function isUserStop(text: string | null): boolean {
  return text !== null && USER_STOP_TOKENS.some((t) => text.includes(t));
}

/** One turn of the conversation from the user simulator's point of view. */
export interface UserViewTurn {
  role: 'user' | 'assistant';
  content: string;
}

/** The trajectory as the user sees it: text messages only, agent ↦ `user`, user ↦ `assistant`. */
export function userView(messages: readonly Message[]): UserViewTurn[] {
  const turns: UserViewTurn[] = [];
  for (const m of messages) {
    if (m.role !== 'assistant' && m.role !== 'user') continue;
    if (isToolCallMessage(m) || !hasTextContent(m)) continue;
    turns.push({ role: m.role === 'assistant' ? 'user' : 'assistant', content: m.content! });
  }
  return turns;
}

export interface UserEpisodeContext {
  task: Task;
  /** The scenario rendered as τ² gives it to its user LLM inside `<scenario>…</scenario>`. */
  instructions: string;
  /** Seed of this episode, for simulators that sample. */
  seed: number;
}

/** One episode's user. `respond` gets the full user-side view and returns the next user message text. */
export interface UserSession {
  respond(conversation: readonly UserViewTurn[]): Promise<string> | string;
}

export interface UserSimulator {
  readonly name: string;
  start(context: UserEpisodeContext): UserSession;
}

/**
 * The system prompt τ² gives its LLM user: the simulation guidelines (τ²'s `simulation_guidelines.md`, which the
 * caller supplies), a blank line, then the scenario inside `<scenario>` tags.
 */
export function userSimulatorSystemPrompt(guidelines: string, instructions: string): string {
  return `${guidelines}\n\n<scenario>\n${instructions}\n</scenario>`.trim();
}

export function userEpisodeContext(task: Task, seed: number): UserEpisodeContext {
  return { task, instructions: renderUserScenario(task.user_scenario), seed };
}

/** Replays fixed user messages in order; once they run out it says `###STOP###`. Handy for tests and replays. */
export class ScriptedUser implements UserSimulator {
  readonly name = 'scripted';
  constructor(private readonly script: readonly string[] | ((task: Task) => readonly string[])) {}

  start(context: UserEpisodeContext): UserSession {
    const lines = typeof this.script === 'function' ? this.script(context.task) : this.script;
    let next = 0;
    return { respond: () => (next < lines.length ? lines[next++]! : STOP_TOKEN) };
  }
}

/** The fixed hand-off message the retail policy prescribes after `transfer_to_human_agents`. */
export const TRANSFER_MESSAGE = 'YOU ARE BEING TRANSFERRED TO A HUMAN AGENT. PLEASE HOLD ON.';

export interface TicketUserOptions {
  /** How many agent questions (texts containing '?') are answered with `confirmation` before the user stops. */
  maxConfirmations?: number;
  confirmation?: string;
}

/**
 * A deterministic, non-LLM user that behaves like a support ticket. Its first message is the task's reason for call
 * followed by its known info, verbatim from the scenario (which is written in the second person). After that it
 * answers an agent question (a text containing '?') with "Yes, please go ahead." up to `maxConfirmations` times —
 * enough to confirm the write actions the policy asks the agent to confirm — says `###TRANSFER###` when the agent
 * hands it to a human, and otherwise `###STOP###`. It never invents or reveals anything else, so it measures whether
 * an agent can finish a task from a complete request; it cannot stand in for τ²'s LLM user when scoring policy skill.
 */
export class TicketUser implements UserSimulator {
  readonly name = 'ticket';
  private readonly maxConfirmations: number;
  private readonly confirmation: string;

  constructor(options: TicketUserOptions = {}) {
    this.maxConfirmations = options.maxConfirmations ?? 5;
    this.confirmation = options.confirmation ?? 'Yes, please go ahead.';
  }

  static openingMessage(task: Task): string {
    const ins = task.user_scenario.instructions;
    if (typeof ins === 'string') return ins;
    return ins.known_info ? `${ins.reason_for_call} ${ins.known_info}` : ins.reason_for_call;
  }

  start(context: UserEpisodeContext): UserSession {
    let confirmations = 0;
    const opening = TicketUser.openingMessage(context.task);
    return {
      respond: (conversation) => {
        if (!conversation.some((t) => t.role === 'assistant')) return opening;
        const last = conversation[conversation.length - 1];
        const agentText = last?.role === 'user' ? last.content : '';
        if (agentText.includes(TRANSFER_MESSAGE)) return TRANSFER_TOKEN;
        if (agentText.includes('?') && confirmations < this.maxConfirmations) {
          confirmations++;
          return this.confirmation;
        }
        return STOP_TOKEN;
      },
    };
  }
}
