/**
 * τ²-bench's half-duplex loop (tau2.md §6) as an explicit state machine driven by agent turns, so an environment can
 * step it: `start()` runs up to the agent's first turn, `act(turn)` runs the agent's turn and everything it triggers
 * (tool execution, the user's reply) until the agent must act again or the episode ends.
 *
 * Steps are counted as τ² counts them: every agent message, every batch of tool executions and every user message is
 * one step; the greeting is not. Termination is checked after each step except while tool calls are pending, and a
 * later check can overwrite a stop (a stop on the step that reaches `maxSteps` ends as `max_steps`), as in τ².
 */
import type { TerminationReason } from './evaluator.ts';
import { executeToolCall, isJsonObject } from './execute.ts';
import type { AssistantMessage, Message, ToolCall, ToolMessage, UserMessage } from './messages.ts';
import { hasTextContent } from './messages.ts';
import type { Task } from './tasks.ts';
import type { Domain } from './types.ts';
import type { UserSession, UserSimulator } from './user.ts';
import { STOP_TOKEN, isUserStop, userEpisodeContext, userView } from './user.ts';

/**
 * τ²-bench's fixed agent greeting, which opens every τ² conversation (the orchestrator's, so the retail domain's):
 * kept verbatim for τ² fidelity. An env defined with the environment API (src/tooluse/api/) has its own optional
 * `greeting` instead.
 */
export const TAU2_GREETING = 'Hi! How can I help you today?';
/** `TAU2_GREETING` under its older name (many importers). */
export const GREETING = TAU2_GREETING;

export interface AgentToolCall {
  name: string;
  /** A JSON object; a string holding one (OpenAI's wire format) is parsed first. */
  arguments: unknown;
  id?: string;
}

/** One agent turn: text for the user, tool calls for the environment, or (τ²'s default routing) both. */
export interface AgentTurn {
  content?: string | null;
  toolCalls?: AgentToolCall[] | null;
  /** Chain of thought before the turn's message or call: recorded with the assistant message, seen by no one else. */
  reasoning?: string;
}

export interface OrchestratorOptions {
  /** τ²'s gym and constructor default is 100; its CLI uses 200. */
  maxSteps?: number;
  /** Tool errors allowed in total (not in a row). */
  maxErrors?: number;
  /** End with agent_error/user_error on an empty message or one with both text and tool calls (τ² default: off). */
  enforceCommunicationProtocol?: boolean;
  /** Agent text containing this token ends the episode with agent_stop (τ²'s gym agent); null disables. */
  agentStopToken?: string | null;
  seed?: number;
  /** Start from this DB instead of `domain.freshDb()`. */
  db?: unknown;
}

type Role = 'agent' | 'user' | 'env';

function normalizeArguments(raw: unknown): unknown {
  if (typeof raw !== 'string') return raw;
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

export class Orchestrator<DB> {
  readonly messages: Message[] = [];
  readonly db: DB;
  readonly maxSteps: number;
  readonly maxErrors: number;
  stepCount = 0;
  numErrors = 0;
  done = false;
  terminationReason: TerminationReason | null = null;

  private readonly enforceProtocol: boolean;
  private readonly agentStopToken: string | null;
  private readonly session: UserSession;
  private to: Role = 'user';
  private started = false;
  private nextCallId = 0;
  /** Arguments as the agent sent them, when they were not a JSON object (kept for the tool error, not the log). */
  private readonly rawArguments = new Map<string, unknown>();

  constructor(
    readonly domain: Domain<DB>,
    readonly task: Task,
    user: UserSimulator,
    options: OrchestratorOptions = {},
  ) {
    this.maxSteps = options.maxSteps ?? 100;
    this.maxErrors = options.maxErrors ?? 10;
    if (!(this.maxSteps > 0) || !(this.maxErrors > 0)) throw new Error('maxSteps and maxErrors must be positive');
    this.enforceProtocol = options.enforceCommunicationProtocol ?? false;
    this.agentStopToken = options.agentStopToken === undefined ? STOP_TOKEN : options.agentStopToken;
    this.db = (options.db as DB | undefined) ?? domain.freshDb();
    this.session = user.start(userEpisodeContext(task, options.seed ?? 0));
  }

  /** Whose move it is; `agent` means `act` may be called. */
  get turn(): Role | 'done' {
    return this.done ? 'done' : this.to;
  }

  /** Sends the greeting and gets the user's first message. Returns the messages added. */
  async start(): Promise<Message[]> {
    if (this.started) throw new Error('Orchestrator.start() was already called for this episode');
    this.started = true;
    const from = this.messages.length;
    this.messages.push({ role: 'assistant', content: TAU2_GREETING, toolCalls: null });
    this.to = 'user';
    await this.runUntilAgentTurn();
    return this.messages.slice(from);
  }

  /** Plays one agent turn and whatever follows until the agent's next turn or the end. Returns the messages added. */
  async act(turn: AgentTurn): Promise<Message[]> {
    if (!this.started) throw new Error('Call start() before act()');
    if (this.done) throw new Error(`The episode is over (${this.terminationReason}); start a new one`);
    const from = this.messages.length;
    const msg = this.agentMessage(turn);
    const hasText = hasTextContent(msg);
    const hasCalls = msg.toolCalls !== null;
    if (!hasText && !hasCalls && !this.enforceProtocol) {
      throw new Error('An agent turn needs text or at least one tool call (or enable enforceCommunicationProtocol to score it as agent_error)');
    }
    this.messages.push(msg);
    if (this.agentStopToken !== null && msg.content !== null && msg.content.includes(this.agentStopToken)) {
      this.finish('agent_stop');
    }
    this.to = hasCalls ? 'env' : 'user';
    if (this.enforceProtocol && hasText === hasCalls) this.finish('agent_error');
    this.stepCount++;
    this.checkTermination();
    await this.runUntilAgentTurn();
    return this.messages.slice(from);
  }

  finalDbHash(): string {
    return this.domain.hashDb(this.db);
  }

  private agentMessage(turn: AgentTurn): AssistantMessage {
    const calls: ToolCall[] = (turn.toolCalls ?? []).map((c) => {
      const id = c.id ?? `call_${this.nextCallId++}`;
      const args = normalizeArguments(c.arguments);
      if (!isJsonObject(args)) this.rawArguments.set(id, args);
      return { id, name: c.name, arguments: isJsonObject(args) ? args : {}, requestor: 'assistant' };
    });
    const content = turn.content === undefined || turn.content === '' ? null : turn.content;
    return { role: 'assistant', content, toolCalls: calls.length ? calls : null, ...(turn.reasoning ? { reasoning: turn.reasoning } : {}) };
  }

  private async runUntilAgentTurn(): Promise<void> {
    while (!this.done && this.to !== 'agent') {
      if (this.to === 'env') this.executePendingCalls();
      else await this.userTurn();
      this.checkTermination();
    }
  }

  private executePendingCalls(): void {
    const last = this.messages[this.messages.length - 1] as AssistantMessage;
    for (const call of last.toolCalls ?? []) {
      const args = this.rawArguments.has(call.id) ? this.rawArguments.get(call.id) : call.arguments;
      const result = executeToolCall(this.domain, this.db, { name: call.name, arguments: args });
      if (result.error) this.numErrors++;
      const toolMsg: ToolMessage = { role: 'tool', id: call.id, content: result.output, requestor: 'assistant', error: result.error };
      this.messages.push(toolMsg);
    }
    this.to = 'agent';
    this.stepCount++;
  }

  private async userTurn(): Promise<void> {
    const text = await this.session.respond(userView(this.messages));
    if (typeof text !== 'string') throw new Error('The user simulator must return a string');
    const msg: UserMessage = { role: 'user', content: text === '' ? null : text, toolCalls: null };
    if (!hasTextContent(msg) && !this.enforceProtocol) throw new Error('The user simulator returned an empty message');
    this.messages.push(msg);
    if (isUserStop(msg.content)) this.finish('user_stop');
    this.to = 'agent';
    if (this.enforceProtocol && !hasTextContent(msg)) this.finish('user_error');
    this.stepCount++;
  }

  private finish(reason: TerminationReason): void {
    this.done = true;
    this.terminationReason = reason;
  }

  private checkTermination(): void {
    if (this.to === 'env') return;
    if (this.stepCount >= this.maxSteps) this.finish('max_steps');
    if (this.numErrors >= this.maxErrors) this.finish('too_many_errors');
  }
}
