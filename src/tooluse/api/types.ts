/**
 * The types of the environment API (src/tooluse/api/README.md): tools, tool sources, tasks, users, rewards and the
 * spec `defineEnv` takes.
 */
import type { z } from 'zod';
import type { Message } from '../messages.ts';

/** A JSON Schema object for a tool's parameters. */
export type JsonSchema = Record<string, unknown>;

/** Tasks are any JSON with a string id. */
export interface Task {
  id: string;
  [k: string]: unknown;
}

/** What a tool's `run` gets besides its arguments: the episode's state and task, an abort signal, the seed. */
export interface ToolContext<S = unknown, T extends Task = Task> {
  state: S;
  task: T;
  /** Aborts when the call times out or the episode ends. */
  signal: AbortSignal;
  seed: number;
  episodeId: string;
}

export interface ToolDef<S = unknown, T extends Task = Task> {
  name: string;
  description: string;
  /** Validated before `run`; a failure is a tool error the agent sees. */
  parameters: z.ZodType | JsonSchema;
  /** Non-string results are JSON.stringified; a thrown error is a tool error (`Error: <message>`) the agent sees. */
  run(args: any, ctx: ToolContext<S, T>): unknown | Promise<unknown>;
  /** Default 30 000; on timeout the call is a tool error and `ctx.signal` aborts. */
  timeoutMs?: number;
  kind?: 'read' | 'write' | 'generic';
}

/** What a tool source's `open` gets: the episode's state is made before sources open. */
export interface ToolSourceContext {
  signal: AbortSignal;
  seed: number;
  episodeId: string;
  task: Task;
  state: unknown;
}

/** A source of tools opened fresh for each episode (MCP servers implement it). */
export interface ToolSource {
  readonly name: string;
  open(ctx: ToolSourceContext): Promise<OpenToolSource>;
}

export interface OpenToolSource {
  /** Added to the env's own tools (names must not clash: a clear error if they do). */
  tools: ToolDef[];
  /** Must leave no process behind. */
  close(): Promise<void>;
  /** E.g. the MCP client, exposed to the reward as `episode.sources[name]`. */
  handle?: unknown;
}

/** One tool call of a finished episode, as the env ran it. */
export interface ToolCallRecord {
  name: string;
  arguments: unknown;
  /** The text the agent saw. */
  result: string;
  error: boolean;
}

/** A tool call to replay on a fresh state (`FinishedEpisode.replay`, `rewards.finalState`). */
export interface ReplayCall {
  name: string;
  arguments: Record<string, unknown>;
}

/**
 * How a defined env's episode ended: `agent_stop` (the `done` tool, or a final message with no tool call when there
 * is no user), `user_stop` (the user left), `max_turns` (the env's `maxTurns`).
 */
export type DefinedTerminationReason = 'agent_stop' | 'user_stop' | 'max_turns';

export interface FinishedEpisode<S = unknown, T extends Task = Task> {
  task: T;
  state: S;
  /** The whole conversation (src/tooluse/messages.ts): the greeting when there is one, then every message. */
  messages: Message[];
  toolCalls: ToolCallRecord[];
  terminationReason: string;
  /** Open sources' handles, before they close. */
  sources: Record<string, unknown>;
  seed: number;
  episodeId: string;
  /**
   * Makes a fresh state for the same task and seed, runs `calls` on it through the env's own tools (not the
   * sources'), and returns `read(state)`; the state is disposed after. A call that fails is an EpisodeError.
   */
  replay<R>(calls: readonly ReplayCall[], read: (state: S) => R | Promise<R>): Promise<R>;
}

export interface RewardResult {
  reward: number;
  info?: Record<string, unknown>;
}

export type RewardFn<S = unknown, T extends Task = Task> = (ep: FinishedEpisode<S, T>) => number | RewardResult | Promise<number | RewardResult>;

/** What a user gets each time the agent hands the turn over (and once at the start). */
export interface UserContext<S = unknown, T extends Task = Task> {
  task: T;
  state: S;
  /** The conversation so far (empty, or the greeting only, at the start). */
  messages: readonly Message[];
  /** The agent's last message text (null at the start). */
  lastAgentMessage: string | null;
  /** User messages so far. */
  turn: number;
  seed: number;
  episodeId: string;
  signal: AbortSignal;
}

/**
 * The other side of the conversation. `respond` returns the user's next message, or null when the user leaves (the
 * episode ends, `user_stop`). It is called first for the opening message.
 */
export interface UserSpec<S = unknown, T extends Task = Task> {
  readonly name?: string;
  respond(ctx: UserContext<S, T>): string | null | Promise<string | null>;
}

/** A scripted agent turn (the demonstrator's), as an agent would send it. */
export interface DemoTurn {
  content?: string | null;
  toolCalls?: { name: string; arguments: Record<string, unknown> }[] | null;
  reasoning?: string;
}

export type TaskList<T extends Task> = T[] | Record<string, T[]> | ((split: string) => T[] | Promise<T[]>);

/** What `defineEnv` takes. */
export interface DefineEnvSpec<S = unknown, T extends Task = Task> {
  /** A gym-style id, `[namespace/]name[-vN]`. */
  id: string;
  /** The agent's system prompt. */
  instructions: string;
  tools?: ToolDef<S, T>[];
  /** E.g. `mcpServer({ command, args })`. */
  sources?: ToolSource[];
  /** Fresh per episode; default `undefined`. */
  state?: (task: T, ctx: { seed: number }) => S | Promise<S>;
  disposeState?: (state: S) => void | Promise<void>;
  /** An array is split 'train'. */
  tasks: TaskList<T>;
  /** Absent: single-agent, `task.prompt` (a string) is the first user message. */
  user?: UserSpec<S, T>;
  reward: RewardFn<S, T>;
  /** Agent turns per episode before the env ends it (`max_turns`); default 30. */
  maxTurns?: number;
  /** An assistant message that opens every conversation (before the user's first message). */
  greeting?: string;
  /** A task's family, for per-family metrics. */
  family?: (task: T) => string;
  /** Scripted agent turns for SFT data (`demonstrationEpisodes`). */
  demonstrator?: (task: T) => DemoTurn[];
}
