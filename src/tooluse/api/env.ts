/**
 * `DefinedToolEnv`: the env of an `EnvDefinition`, a gym `Env` with the agent loop's shape (`AgentEnv`): `reset` opens
 * an episode, `step(agentTurn)` plays one agent turn, `close` ends what is open. One episode at a time.
 *
 * An episode: the state is made fresh (`spec.state(task, { seed })`), the sources open (their context holds the task
 * and the state), the tools are the spec's then each source's (a name clash is an EpisodeError naming both owners).
 * The conversation opens with the greeting (when there is one, not part of the observation: the agent loop puts it in
 * the prompt) and the user's first message: `task.prompt` without a user, else the user's first reply.
 * Each agent turn with tool calls runs them in order (every failure is tool-result text, `Error: …`); the results are
 * the observation. A turn without tool calls ends a single-agent episode (`agent_stop`: it is the final answer), or
 * goes to the user, whose reply is the observation; a user that returns null leaves (`user_stop`). With a user the
 * agent also has a `done` tool, which ends the episode after the turn's other calls (`agent_stop`). After
 * `maxTurns` agent turns the episode ends `max_turns` (truncated; still scored).
 * Optional rules (off by default; τ²'s retail env uses them all, src/tooluse/tau2-define.ts): `maxSteps` and
 * `maxErrors` (τ²'s step and tool-error limits), `doneTool` (how `done` is shown), `prepareTurn` and `checkTurn` (a
 * turn rewritten before it is recorded; a recorded message that ends the episode), `callTool` (the tool contract),
 * `malformedArguments` (how arguments that are not an object are recorded), and user replies that end the episode
 * with a last message.
 * At the end the reward function scores the finished episode; `info.rewardInfo` holds the reward and its info.
 * Failures that are not the agent's (state, a source, the user, the reward: a throw or a non-finite number) are
 * EpisodeErrors naming the env; sources close and `disposeState` runs on every path.
 */
import { Env, type EnvOptions, type Info, type ResetOptions, type ResetResult, type StepResult } from '../../gym/env.ts';
import { ResetNeeded } from '../../gym/errors.ts';
import type { ToolSpec } from '../../llm/index.ts';
import { parseActionString } from '../actions.ts';
import type { RewardInfo } from '../evaluator.ts';
import type { AssistantMessage, Message, ToolCall } from '../messages.ts';
import { messagesToText } from '../messages.ts';
import type { AgentTurn } from '../orchestrator.ts';
import type { ToolUseAction, ToolUseObservation } from '../spaces.ts';
import { AgentTurnSpace, ToolUseObservationSpace } from '../spaces.ts';
import type { ToolSchema } from '../types.ts';
import type { EnvDefinition } from './define.ts';
import { asEpisodeError, errorMessage, EpisodeError } from './errors.ts';
import { callTool, checkToolDef, toolSpec } from './tool.ts';
import type {
  DefineEnvSpec, DefinedTerminationReason, FinishedEpisode, OpenToolSource, ReplayCall, RewardResult, Task, ToolCallOutcome, ToolCallRecord, ToolContext, ToolDef, UserSpec,
} from './types.ts';

/** The `done` tool an env with a user gives the agent (τ²'s description; `spec.doneTool` may change how it is shown). */
export const DONE_TOOL_SPEC: ToolSpec = {
  type: 'function',
  function: { name: 'done', description: 'Call this function when you are done with the task.', parameters: { type: 'object', properties: {}, required: [] } },
};

/** The `done` tool as an env shows it: `DONE_TOOL_SPEC` with `spec.doneTool`'s description and parameters. */
export function doneToolSpec(spec: Pick<DefineEnvSpec<any, any>, 'doneTool'>): ToolSpec {
  const d = spec.doneTool;
  if (d === undefined) return DONE_TOOL_SPEC;
  return { type: 'function', function: { name: 'done', description: d.description ?? DONE_TOOL_SPEC.function.description, parameters: d.parameters ?? DONE_TOOL_SPEC.function.parameters } };
}

export interface DefinedEnvOptions<T extends Task = Task> extends EnvOptions {
  /** The split the tasks come from (default 'train'). */
  split?: string;
  /** These tasks instead of a split's. */
  tasks?: readonly T[];
}

interface Episode<S, T extends Task> {
  task: T;
  state: S;
  seed: number;
  episodeId: string;
  controller: AbortController;
  opened: { name: string; open: OpenToolSource }[];
  tools: Map<string, ToolDef<S, T>>;
  schemas: ToolSpec[];
  messages: Message[];
  toolCalls: ToolCallRecord[];
  turns: number;
  userTurns: number;
  /** τ²'s steps: agent messages, batches of tool results, user messages. */
  steps: number;
  /** Tool calls that were errors. */
  toolErrors: number;
  nextCallId: number;
  /** With `malformedArguments: 'empty'`: what the agent sent for calls recorded with `{}`, by call id. */
  rawArguments: Map<string, unknown>;
  finished: boolean;
  reason: DefinedTerminationReason | null;
  rewardInfo: RewardInfo | null;
  cleaned: boolean;
}

let episodeCounter = 0;

const isObject = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** A JSON string parsed (kept as is when it does not parse); anything else as it came. */
function parseJsonString(raw: unknown): unknown {
  if (typeof raw !== 'string') return raw;
  try {
    return JSON.parse(raw);
  } catch {
    return raw;
  }
}

function parseArguments(raw: unknown): unknown {
  return parseJsonString(raw) ?? {};
}

/** A user's reply, checked: a message (and how it ends the episode, if it does), or null (the user left). */
interface CheckedReply {
  content: string | null;
  end: 'user_stop' | 'user_error' | null;
}

export class DefinedToolEnv<S = unknown, T extends Task = Task> extends Env<ToolUseObservation, ToolUseAction, string> {
  static override metadata = { renderModes: ['ansi'], renderFps: null };

  readonly observationSpace = new ToolUseObservationSpace();
  readonly definition: EnvDefinition<S, T>;
  private readonly split: string;
  private readonly givenTasks: readonly T[] | undefined;
  private tasksPromise: Promise<readonly T[]> | null = null;
  private episode: Episode<S, T> | null = null;
  private space: AgentTurnSpace | null = null;

  constructor(definition: EnvDefinition<S, T>, options: DefinedEnvOptions<T> = {}) {
    super({ renderMode: options.renderMode });
    const known = new Set(['split', 'tasks', 'renderMode']);
    const unknown = Object.keys(options).filter((k) => !known.has(k));
    if (unknown.length) throw new Error(`env ${definition.id}: unknown options ${unknown.join(', ')} (known: ${[...known].join(', ')})`);
    this.definition = definition;
    this.split = options.split ?? 'train';
    if (options.tasks !== undefined && (!Array.isArray(options.tasks) || options.tasks.length === 0)) throw new Error(`env ${definition.id}: options.tasks must be a non-empty array`);
    this.givenTasks = options.tasks;
  }

  get id(): string {
    return this.definition.id;
  }

  /** Agent turns over the current tools (the spec's before the first reset). Tool arguments are not checked here. */
  get actionSpace(): AgentTurnSpace {
    const schemas = (this.episode?.schemas ?? this.definition.toolSpecs() ?? []) as ToolSchema[];
    if (this.space === null || this.space.tools.length !== Math.max(schemas.length, 1) || !this.space.tools.every((t, i) => t.function.name === schemas[i]?.function.name)) {
      this.space = new AgentTurnSpace(schemas.length ? schemas : [DONE_TOOL_SPEC as ToolSchema]);
    }
    return this.space;
  }

  /** The current episode's messages (greeting first). */
  get messages(): readonly Message[] {
    return this.episode?.messages ?? [];
  }

  get currentTask(): T | null {
    return this.episode?.task ?? null;
  }

  get state(): S | undefined {
    return this.episode?.state;
  }

  /** The tasks episodes are drawn from. */
  async tasks(): Promise<readonly T[]> {
    if (this.givenTasks) return this.givenTasks;
    this.tasksPromise ??= this.definition.tasks(this.split);
    try {
      return await this.tasksPromise;
    } catch (e) {
      this.tasksPromise = null;
      throw e;
    }
  }

  /** `options.taskId` picks the task; otherwise it is drawn with the env's seeded generator. */
  override async reset(options: ResetOptions = {}): Promise<ResetResult<ToolUseObservation>> {
    await super.reset(options);
    await this.endEpisode();
    this.episode = null;
    const id = this.id;
    const spec = this.definition.spec;
    const taskId = options.options?.taskId;
    if (taskId !== undefined && typeof taskId !== 'string') throw new TypeError(`env ${id}: reset options.taskId must be a string, got ${typeof taskId}`);
    let tasks: readonly T[];
    try {
      tasks = await this.tasks();
    } catch (e) {
      throw asEpisodeError(e, id, `the tasks of split '${this.split}' did not load`);
    }
    let task: T;
    if (taskId !== undefined) {
      const found = tasks.find((t) => t.id === taskId);
      if (!found) throw new Error(`env ${id}: no task ${taskId} in split '${this.split}' (${tasks.length} tasks)`);
      task = found;
    } else task = tasks[this.npRandom.integers(tasks.length)]!;
    const seed = this.npRandom.integers(2 ** 31);
    let state: S;
    try {
      state = spec.state ? await spec.state(task, { seed }) : (undefined as S);
    } catch (e) {
      throw asEpisodeError(e, id, `state() threw for task ${task.id}`);
    }
    const ep: Episode<S, T> = {
      task, state, seed,
      episodeId: `${id}:${task.id}:${++episodeCounter}`,
      controller: new AbortController(),
      opened: [], tools: new Map(), schemas: [], messages: [], toolCalls: [],
      turns: 0, userTurns: 0, steps: 0, toolErrors: 0, nextCallId: 0, rawArguments: new Map(), finished: false, reason: null, rewardInfo: null, cleaned: false,
    };
    this.episode = ep;
    try {
      const owner = new Map<string, string>();
      for (const t of spec.tools ?? []) {
        ep.tools.set(t.name, t);
        owner.set(t.name, 'the env');
      }
      if (this.definition.hasUser) owner.set('done', 'the env (its done tool)');
      for (const source of spec.sources ?? []) {
        let open: OpenToolSource;
        try {
          open = await source.open({ signal: ep.controller.signal, seed, episodeId: ep.episodeId, task, state });
        } catch (e) {
          throw asEpisodeError(e, id, `tool source ${source.name} did not open for task ${task.id}`);
        }
        ep.opened.push({ name: source.name, open });
        if (!open || !Array.isArray(open.tools)) throw new EpisodeError(`env ${id}: tool source ${source.name} opened without a tools array`, { env: id });
        for (const t of open.tools) {
          try {
            checkToolDef(t, `env ${id}, source ${source.name}`);
          } catch (e) {
            throw new EpisodeError(errorMessage(e), { cause: e, env: id });
          }
          const other = owner.get(t.name);
          if (other !== undefined) throw new EpisodeError(`env ${id}: tool ${t.name} of source ${source.name} clashes with the tool of the same name of ${other}`, { env: id });
          owner.set(t.name, `source ${source.name}`);
          ep.tools.set(t.name, t as ToolDef<S, T>);
        }
      }
      ep.schemas = [...[...ep.tools.values()].map(toolSpec), ...(this.definition.hasUser ? [doneToolSpec(spec)] : [])];
      if (spec.greeting !== undefined) ep.messages.push({ role: 'assistant', content: spec.greeting, toolCalls: null });
      let first: CheckedReply | null;
      if (spec.user === undefined) {
        const prompt = (task as { prompt?: unknown }).prompt;
        if (typeof prompt !== 'string' || prompt.trim() === '') throw new EpisodeError(`env ${id}: task ${task.id} has no prompt (a non-empty string): a single-agent env opens with task.prompt; give the env a user otherwise`, { env: id });
        first = { content: prompt, end: null };
      } else {
        first = await this.userReply(ep, spec.user);
        if (first === null) throw new EpisodeError(`env ${id}: the user left before its first message (task ${task.id})`, { env: id });
      }
      const added: Message = { role: 'user', content: first.content, toolCalls: null };
      ep.messages.push(added);
      ep.userTurns++;
      ep.steps++;
      const reason = this.limits(ep, first.end);
      if (reason !== null) await this.finish(ep, reason);
      return [this.observe([added]), this.info(ep)];
    } catch (e) {
      await this.endEpisode();
      throw asEpisodeError(e, id, `reset failed for task ${task.id}`);
    }
  }

  async step(action: ToolUseAction): Promise<StepResult<ToolUseObservation>> {
    const ep = this.episode;
    const id = this.id;
    if (ep === null) throw new ResetNeeded(`env ${id}: call reset() before step()`);
    if (ep.finished || ep.cleaned) throw new ResetNeeded(`env ${id}: the episode ended (${ep.reason ?? 'env error'}); call reset() to start a new one`);
    const spec = this.definition.spec;
    let turn = this.toTurn(action);
    if (spec.prepareTurn) turn = this.toTurn(spec.prepareTurn(turn));
    const msg = this.assistantMessage(ep, turn);
    ep.messages.push(msg);
    ep.turns++;
    ep.steps++;
    const added: Message[] = [];
    try {
      let reason: DefinedTerminationReason | null = spec.checkTurn ? this.checkedTurnEnd(spec.checkTurn(msg)) : null;
      const calls = msg.toolCalls ?? [];
      if (calls.length > 0) {
        if (reason === null) {
          for (const c of calls) {
            if (this.definition.hasUser && c.name === 'done') {
              reason = 'agent_stop';
              continue;
            }
            const args = ep.rawArguments.has(c.id) ? ep.rawArguments.get(c.id) : c.arguments;
            const out = await this.runCall(ep.tools, { name: c.name, arguments: args }, { state: ep.state, task: ep.task, seed: ep.seed, episodeId: ep.episodeId, signal: ep.controller.signal });
            if (out.error) ep.toolErrors++;
            ep.toolCalls.push({ name: c.name, arguments: args, result: out.output, error: out.error });
            const toolMsg: Message = { role: 'tool', id: c.id, content: out.output, requestor: 'assistant', error: out.error };
            ep.messages.push(toolMsg);
            added.push(toolMsg);
          }
          ep.steps++;
          reason = this.limits(ep, reason);
        }
      } else {
        if (spec.user === undefined) reason ??= 'agent_stop';
        reason = this.limits(ep, reason);
        if (reason === null && spec.user !== undefined) {
          const reply = await this.userReply(ep, spec.user);
          if (reply === null) reason = 'user_stop';
          else {
            const userMsg: Message = { role: 'user', content: reply.content, toolCalls: null };
            ep.messages.push(userMsg);
            ep.userTurns++;
            ep.steps++;
            added.push(userMsg);
            reason = this.limits(ep, reply.end);
          }
        }
      }
      if (reason === null && ep.turns >= this.definition.maxTurns) reason = 'max_turns';
      if (reason === null) return [this.observe(added), 0, false, false, this.info(ep)];
      const rewardInfo = await this.finish(ep, reason);
      const truncated = isTruncation(reason);
      return [this.observe(added), rewardInfo.reward, !truncated, truncated, this.info(ep)];
    } catch (e) {
      await this.endEpisode();
      throw asEpisodeError(e, id, `step failed on task ${ep.task.id}`);
    }
  }

  override async render(): Promise<string | null> {
    if (this.renderMode !== 'ansi') return null;
    return messagesToText(this.messages);
  }

  /** Ends the open episode (sources closed, state disposed). Safe to call more than once. */
  override async close(): Promise<void> {
    await this.endEpisode();
  }

  private toTurn(action: ToolUseAction): AgentTurn {
    if (typeof action === 'string') return parseActionString(action);
    if (!isObject(action)) throw new TypeError(`env ${this.id}: an action must be a string or { content?, toolCalls? }, got ${action === null ? 'null' : typeof action}`);
    if (action.toolCalls !== undefined && action.toolCalls !== null && !Array.isArray(action.toolCalls)) throw new TypeError(`env ${this.id}: action.toolCalls must be an array`);
    for (const c of action.toolCalls ?? []) if (!isObject(c) || typeof c.name !== 'string') throw new TypeError(`env ${this.id}: each tool call needs a string name`);
    if (action.content !== undefined && action.content !== null && typeof action.content !== 'string') throw new TypeError(`env ${this.id}: action.content must be a string`);
    return action as AgentTurn;
  }

  private assistantMessage(ep: Episode<S, T>, turn: AgentTurn): AssistantMessage {
    const empty = this.definition.spec.malformedArguments === 'empty';
    const calls: ToolCall[] = (turn.toolCalls ?? []).map((c) => {
      const id = c.id ?? `call_${ep.nextCallId++}`;
      if (empty) {
        // τ²'s way: the conversation records {}, the tool gets what was sent (and says what came).
        const raw = parseJsonString(c.arguments);
        if (!isObject(raw)) ep.rawArguments.set(id, raw);
        return { id, name: c.name, arguments: isObject(raw) ? raw : {}, requestor: 'assistant' };
      }
      const args = parseArguments(c.arguments);
      // Arguments that are not an object are kept as sent, so the tool error can say what came (the message's type says object).
      return { id, name: c.name, arguments: args as Record<string, unknown>, requestor: 'assistant' };
    });
    const content = turn.content === undefined || turn.content === '' ? null : turn.content;
    return { role: 'assistant', content, toolCalls: calls.length ? calls : null, ...(turn.reasoning ? { reasoning: turn.reasoning } : {}) };
  }

  /** `spec.checkTurn`'s answer, checked. */
  private checkedTurnEnd(r: unknown): DefinedTerminationReason | null {
    if (r === null || r === undefined) return null;
    if (r === 'agent_stop' || r === 'agent_error') return r;
    throw new EpisodeError(`env ${this.id}: checkTurn returned ${JSON.stringify(r)}; it must return 'agent_stop', 'agent_error' or null`, { env: this.id });
  }

  /** The reason after τ²'s limit checks (`maxSteps`, then `maxErrors`; each overrides what came before). */
  private limits(ep: Episode<S, T>, reason: DefinedTerminationReason | null): DefinedTerminationReason | null {
    const { maxSteps, maxErrors } = this.definition.spec;
    if (maxSteps !== undefined && ep.steps >= maxSteps) reason = 'max_steps';
    if (maxErrors !== undefined && ep.toolErrors >= maxErrors) reason = 'too_many_errors';
    return reason;
  }

  /** One tool call: through `spec.callTool` when there is one (its answer checked), else `callTool`. */
  private async runCall(tools: ReadonlyMap<string, ToolDef<S, T>>, call: { name: string; arguments: unknown }, ctx: ToolContext<S, T>): Promise<ToolCallOutcome> {
    const hook = this.definition.spec.callTool;
    if (!hook) return callTool(tools, call, ctx);
    const out = await hook(call, { ...ctx, tools });
    if (!isObject(out) || typeof out.output !== 'string' || typeof out.error !== 'boolean') {
      throw new EpisodeError(`env ${this.id}: callTool returned ${JSON.stringify(out)} for ${call.name}; it must return { output: string, error: boolean }`, { env: this.id });
    }
    return { output: out.output, error: out.error };
  }

  private async userReply(ep: Episode<S, T>, user: UserSpec<S, T>): Promise<CheckedReply | null> {
    const last = [...ep.messages].reverse().find((m) => m.role === 'assistant');
    let reply: unknown;
    try {
      reply = await user.respond({
        task: ep.task, state: ep.state, messages: [...ep.messages], lastAgentMessage: last?.content ?? null,
        turn: ep.userTurns, seed: ep.seed, episodeId: ep.episodeId, signal: ep.controller.signal,
      });
    } catch (e) {
      throw asEpisodeError(e, this.id, `the user${user.name ? ` (${user.name})` : ''} threw on task ${ep.task.id}`);
    }
    if (reply === null) return null;
    if (typeof reply === 'string' && reply.trim() !== '') return { content: reply, end: null };
    if (isObject(reply) && (reply.end === 'user_stop' || reply.end === 'user_error') && (reply.content === null || typeof reply.content === 'string')) {
      return { content: reply.content, end: reply.end };
    }
    throw new EpisodeError(`env ${this.id}: the user${user.name ? ` (${user.name})` : ''} returned ${JSON.stringify(reply)} on task ${ep.task.id}; it must return a non-empty string, null to leave, or a last message { content, end: 'user_stop' | 'user_error' }`, { env: this.id });
  }

  /** Scores the finished episode, then ends it (sources closed, state disposed) whatever happens. */
  private async finish(ep: Episode<S, T>, reason: DefinedTerminationReason): Promise<RewardInfo> {
    ep.finished = true;
    ep.reason = reason;
    const id = this.id;
    try {
      const sources: Record<string, unknown> = {};
      for (const o of ep.opened) sources[o.name] = o.open.handle;
      const finished: FinishedEpisode<S, T> = {
        task: ep.task, state: ep.state, messages: [...ep.messages], toolCalls: [...ep.toolCalls], terminationReason: reason, sources,
        seed: ep.seed, episodeId: ep.episodeId,
        replay: (calls, read) => this.replay(ep, calls, read),
      };
      let r: number | RewardResult;
      try {
        r = await this.definition.spec.reward(finished);
      } catch (e) {
        throw asEpisodeError(e, id, `the reward function threw on task ${ep.task.id}`);
      }
      const reward = typeof r === 'number' ? r : isObject(r) ? r.reward : undefined;
      if (typeof reward !== 'number' || !Number.isFinite(reward)) {
        throw new EpisodeError(`env ${id}: the reward function returned ${typeof r === 'object' ? JSON.stringify(r) : String(r)} on task ${ep.task.id}; a reward must be a finite number (or { reward, info })`, { env: id });
      }
      const info = typeof r === 'object' && isObject(r.info) ? r.info : {};
      const breakdown = typeof r === 'object' && isObject(r.breakdown) ? r.breakdown : undefined;
      ep.rewardInfo = breakdown ? { reward, ...(breakdown as Omit<RewardInfo, 'reward'>) } : {
        reward, rewardBasis: null, rewardBreakdown: {}, dbCheck: null, actionChecks: null, communicateChecks: null, nlAssertions: null,
        info: { ...info, terminationReason: reason },
      };
      return ep.rewardInfo;
    } finally {
      await this.endEpisode();
    }
  }

  /** `FinishedEpisode.replay`: the calls on a fresh state of the same task and seed, through the env's own tools. */
  private async replay<R>(ep: Episode<S, T>, calls: readonly ReplayCall[], read: (state: S) => R | Promise<R>): Promise<R> {
    const id = this.id;
    const spec = this.definition.spec;
    let state: S;
    try {
      state = spec.state ? await spec.state(ep.task, { seed: ep.seed }) : (undefined as S);
    } catch (e) {
      throw asEpisodeError(e, id, `state() threw for task ${ep.task.id} (replay)`);
    }
    const tools = new Map((spec.tools ?? []).map((t) => [t.name, t]));
    const controller = new AbortController();
    try {
      for (const [i, c] of calls.entries()) {
        const out = await this.runCall(tools, c, { state, task: ep.task, seed: ep.seed, episodeId: `${ep.episodeId}:replay`, signal: controller.signal });
        if (out.error) throw new EpisodeError(`env ${id}: gold action ${i} (${c.name}) of task ${ep.task.id} failed on replay: ${out.output}`, { env: id });
      }
      return await read(state);
    } finally {
      controller.abort();
      if (spec.disposeState) {
        try {
          await spec.disposeState(state);
        } catch (e) {
          process.emitWarning(`env ${id}: disposeState threw after a replay of task ${ep.task.id}: ${errorMessage(e)}`, { code: 'LONGRUN_ENV_CLEANUP' });
        }
      }
    }
  }

  /** Closes the episode's sources (last opened first), aborts its signal and disposes its state; once per episode. */
  private async endEpisode(): Promise<void> {
    const ep = this.episode;
    if (ep === null || ep.cleaned) return;
    ep.cleaned = true;
    ep.controller.abort(new Error(`episode ${ep.episodeId} ended`));
    const failures: string[] = [];
    for (const o of [...ep.opened].reverse()) {
      try {
        await o.open.close();
      } catch (e) {
        failures.push(`source ${o.name} did not close: ${errorMessage(e)}`);
      }
    }
    const dispose = this.definition.spec.disposeState;
    if (dispose) {
      try {
        await dispose(ep.state);
      } catch (e) {
        failures.push(`disposeState threw: ${errorMessage(e)}`);
      }
    }
    if (failures.length) process.emitWarning(`env ${this.id}, episode ${ep.episodeId}: ${failures.join('; ')}`, { code: 'LONGRUN_ENV_CLEANUP' });
  }

  private observe(added: readonly Message[]): ToolUseObservation {
    const messages = added.filter((m) => m.role !== 'assistant');
    return { messages, text: messagesToText(messages) };
  }

  private info(ep: Episode<S, T>): Info {
    return {
      taskId: ep.task.id,
      tools: ep.schemas,
      systemPrompt: this.definition.spec.instructions,
      episodeId: ep.episodeId,
      turns: ep.turns,
      ...(this.definition.spec.maxSteps !== undefined ? { stepCount: ep.steps } : {}),
      ...(this.definition.spec.maxErrors !== undefined ? { numErrors: ep.toolErrors } : {}),
      terminationReason: ep.reason,
      rewardInfo: ep.rewardInfo,
      ...(this.definition.spec.family ? { family: this.definition.spec.family(ep.task) } : {}),
    };
  }
}

/** The reasons that end an episode by a limit (truncated, in Gymnasium's terms) rather than by its own end. */
function isTruncation(reason: DefinedTerminationReason): boolean {
  return reason === 'max_turns' || reason === 'max_steps';
}
