/**
 * The types of the environment API (src/tooluse/api/README.md): tools, tool sources, tasks, users, rewards and the
 * spec `defineEnv` takes.
 */
import type { z } from 'zod';
import type { ToolSpec } from '../../llm/index.ts';
import type { RewardInfo } from '../evaluator.ts';
import type { AssistantMessage, Message } from '../messages.ts';
import type { AgentTurn } from '../orchestrator.ts';

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

/** What running one tool call gives: the text the agent sees, and whether it is an error. */
export interface ToolCallOutcome {
  output: string;
  error: boolean;
}

/** What `spec.callTool` gets besides the call: the tool context and the episode's tools by name. */
export interface ToolCallHookContext<S = unknown, T extends Task = Task> extends ToolContext<S, T> {
  tools: ReadonlyMap<string, ToolDef<S, T>>;
}

/** A tool call to replay on a fresh state (`FinishedEpisode.replay`, `rewards.finalState`). */
export interface ReplayCall {
  name: string;
  arguments: Record<string, unknown>;
}

/**
 * How a defined env's episode ended: `agent_stop` (the `done` tool, or a final message with no tool call when there
 * is no user), `user_stop` (the user left), `max_turns` (the env's `maxTurns`). Only with the spec's optional rules:
 * `max_steps` (`maxSteps`), `too_many_errors` (`maxErrors`), `agent_error` (`checkTurn`), `user_error` (a user reply
 * that ends it so).
 */
export type DefinedTerminationReason = 'agent_stop' | 'user_stop' | 'max_turns' | 'max_steps' | 'too_many_errors' | 'agent_error' | 'user_error';

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
  /**
   * The whole of `info.rewardInfo` but the reward, in τ²'s shape (basis, per-component checks, info), for a reward
   * that has such a breakdown (τ²'s evaluator). When given, it is reported as is and `info` is not used; otherwise
   * `info.rewardInfo` has null components and `info` plus the termination reason.
   */
  breakdown?: Omit<RewardInfo, 'reward'>;
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
 * A user's reply: the next message; null to leave without one (`user_stop`); or a last message that is recorded and
 * ends the episode with `end` (τ²'s users write `###STOP###` in their last message; `content` may be null only there).
 */
export type UserReply = string | null | { content: string | null; end: 'user_stop' | 'user_error' };

/**
 * The other side of the conversation. `respond` returns the user's next message, or null when the user leaves (the
 * episode ends, `user_stop`), or a last message with `end`. It is called first for the opening message.
 */
export interface UserSpec<S = unknown, T extends Task = Task> {
  readonly name?: string;
  respond(ctx: UserContext<S, T>): UserReply | Promise<UserReply>;
}

/** A scripted agent turn (the demonstrator's), as an agent would send it. */
export interface DemoTurn {
  content?: string | null;
  toolCalls?: { name: string; arguments: Record<string, unknown> }[] | null;
  reasoning?: string;
}

/** What a demonstrator gets for an episode: the seed `reset` was given and the tools as the agent is shown them. */
export interface DemoContext {
  seed: number;
  tools: readonly ToolSpec[];
}

/** An interactive demonstrator: it reads what it observed since its last turn (tool results, the user's reply). */
export interface DemoSession {
  act(observed: readonly Message[]): DemoTurn;
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
  /**
   * τ²'s step limit (off by default): every agent message, every batch of tool results and every user message is one
   * step (the greeting is not); reaching it ends the episode `max_steps` (truncated, still scored). It is checked after
   * each step except between an agent message with tool calls and their results, and it overrides a stop made on the
   * same step, as in τ².
   */
  maxSteps?: number;
  /** Tool errors per episode, in total (off by default): reaching it after a batch ends the episode `too_many_errors` (scored). */
  maxErrors?: number;
  /** The `done` tool as an env with a user shows it (default: τ²'s description, `{ type: 'object', properties: {}, required: [] }`). */
  doneTool?: { description?: string; parameters?: JsonSchema };
  /**
   * Rewrites each agent turn before it is recorded (τ²: a call to `done` becomes the text `###STOP###`). A throw is
   * returned to the caller of `step` as it is, with nothing recorded: the episode goes on (a turn refused).
   */
  prepareTurn?: (turn: AgentTurn) => AgentTurn;
  /**
   * Called on each agent message once recorded; a reason ends the episode there: the message's tool calls do not
   * run and the user does not reply (τ²: `###STOP###` in the text is `agent_stop`; its communication protocol makes
   * a message with both text and tool calls, or neither, `agent_error`). A throw is an EpisodeError.
   */
  checkTurn?: (message: AssistantMessage) => 'agent_stop' | 'agent_error' | null;
  /**
   * Runs one tool call of the agent instead of the default (the tool looked up, its arguments checked against its
   * schema, a timeout, `Error: …` texts), for an env that must reproduce another system's tool contract (τ²'s error
   * strings). `call.arguments` is what the agent sent (a JSON string parsed). A throw is an EpisodeError.
   * `FinishedEpisode.replay` runs its calls through it too.
   */
  callTool?: (call: { name: string; arguments: unknown }, ctx: ToolCallHookContext<S, T>) => ToolCallOutcome | Promise<ToolCallOutcome>;
  /**
   * A tool call whose arguments are not a JSON object: recorded in the conversation as sent (`'keep'`, default;
   * missing arguments count as `{}`), or as `{}` while the tool still gets what was sent, missing included (`'empty'`,
   * τ²'s way). Either way the default tool contract makes the call a tool error (`callTool` decides for itself).
   */
  malformedArguments?: 'keep' | 'empty';
  /** An assistant message that opens every conversation (before the user's first message). */
  greeting?: string;
  /** A task's family, for per-family metrics. */
  family?: (task: T) => string;
  /** Scripted agent turns for SFT data (`demonstrationEpisodes`). */
  demonstrator?: (task: T) => DemoTurn[];
  /**
   * An interactive demonstrator instead (`demonstrationEpisodes` plays it until the env ends the episode): a session
   * per episode that reads each observation, for a user whose replies the turns depend on.
   */
  demonstratorSession?: (task: T, ctx: DemoContext) => DemoSession;
}
