/**
 * `ToolUseEnv`: τ²'s gym env (like τ²'s `AgentGymEnv`, tau2.md §9) for a τ² domain, with the agent as the learner. It
 * is the env of the domain's definition on the environment API (`defineTau2Env`, tau2-define.ts): the episode is a
 * `DefinedToolEnv` of that definition, which plays τ²'s loop message for message (the reference loop, orchestrator.ts
 * through `OrchestratorEnv`, is checked against it in test/domains/retail/define-parity.test.ts). This class keeps τ²'s
 * gym surface on top: the domain, the task list, the tools with τ²'s `done`, the live DB, τ²'s errors for a bad task id
 * or action, and τ²'s info (`policy`, `stepCount`, `numErrors`, τ²'s `RewardInfo`).
 *
 * One `step` is one agent turn; the observation is what happened since (tool results or the user's reply), as
 * messages and as `role: content` text. The reward is 0 until the episode ends, then the evaluated reward.
 *
 * Deviations from τ²'s gym, on purpose: reaching `maxSteps` sets `truncated` (Gymnasium's time-limit convention)
 * where τ² sets `terminated`; stepping after the end or before `reset` throws instead of returning an empty step;
 * actions may also be structured turns with several tool calls. A failure that is not the agent's (the user
 * simulator throws, the judge fails) is an `EpisodeError` naming the env, as in every defined env.
 */
import { Env, type EnvOptions, type Info, type ResetOptions, type ResetResult, type StepResult } from '../gym/env.ts';
import { ResetNeeded } from '../gym/errors.ts';
import type { EnvDefinition } from './api/define.ts';
import type { DefinedToolEnv } from './api/env.ts';
import type { DemoContext, DemoSession } from './api/types.ts';
import { toAgentTurn } from './actions.ts';
import type { Judge } from './evaluator.ts';
import type { Message } from './messages.ts';
import { messagesToText } from './messages.ts';
import { agentSystemPrompt } from './openai.ts';
import type { ToolUseAction, ToolUseObservation } from './spaces.ts';
import { AgentTurnSpace, ToolUseObservationSpace } from './spaces.ts';
import { defineTau2Env, TAU2_DONE_TOOL } from './tau2-define.ts';
import type { Task } from './tasks.ts';
import { getTask } from './tasks.ts';
import type { Domain, ToolSchema } from './types.ts';
import type { UserSimulator } from './user.ts';

/** τ²'s `done` pseudo-tool, as τ² shows it (`TAU2_DONE_TOOL`). */
export const DONE_TOOL_SCHEMA: ToolSchema = TAU2_DONE_TOOL;

export interface ToolUseEnvOptions<DB> extends EnvOptions {
  domain: Domain<DB>;
  /** The tasks episodes are drawn from (one split). */
  tasks: readonly Task[];
  user: UserSimulator;
  /** Needed for tasks graded on NL assertions. */
  judge?: Judge;
  /** Default 100, as τ²'s gym. */
  maxSteps?: number;
  maxErrors?: number;
  enforceCommunicationProtocol?: boolean;
  /** Observe the whole history (greeting included) at every step instead of only what is new. */
  allMessagesAsObservation?: boolean;
  /** The definition's id (default `tau2/<domain name>-v0`); e.g. `longrun/retail-v1`. */
  id?: string;
  /** The tasks' families, for per-family metrics (`info.family`). */
  family?: (task: Task) => string;
  /** An interactive demonstrator for SFT data (the definition's `demonstratorSession`). */
  demonstratorSession?: (task: Task, ctx: DemoContext) => DemoSession;
}

function defaultId(domain: Domain<unknown>): string {
  const name = domain.name.replace(/[^A-Za-z0-9_.]+/g, '_') || 'domain';
  return `tau2/${name}-v0`;
}

export class ToolUseEnv<DB = unknown> extends Env<ToolUseObservation, ToolUseAction, string> {
  static override metadata = { renderModes: ['ansi'], renderFps: null };

  readonly actionSpace: AgentTurnSpace;
  readonly observationSpace = new ToolUseObservationSpace();
  readonly domain: Domain<DB>;
  readonly tasks: readonly Task[];
  /** Tool schemas shown to the agent, with τ²'s `done` pseudo-tool last. */
  readonly tools: ToolSchema[];
  /** The τ² definition (environment API) this env plays. */
  readonly definition: EnvDefinition<DB, Task>;

  private readonly inner: DefinedToolEnv<DB, Task>;
  private readonly allMessages: boolean;
  private readonly systemPrompt: string;
  private started = false;
  private finished: string | null = null;

  constructor(options: ToolUseEnvOptions<DB>) {
    super(options);
    if (options.tasks.length === 0) throw new Error('ToolUseEnv needs at least one task');
    this.domain = options.domain;
    this.tasks = options.tasks;
    this.allMessages = options.allMessagesAsObservation ?? false;
    this.definition = defineTau2Env<DB>({
      id: options.id ?? defaultId(options.domain),
      domain: options.domain,
      tasks: [...options.tasks],
      user: options.user,
      judge: options.judge,
      maxSteps: options.maxSteps,
      maxErrors: options.maxErrors,
      enforceCommunicationProtocol: options.enforceCommunicationProtocol,
      family: options.family,
      demonstratorSession: options.demonstratorSession,
    });
    this.inner = this.definition.makeEnv({ tasks: options.tasks });
    this.tools = this.definition.toolSpecs() as ToolSchema[];
    this.actionSpace = new AgentTurnSpace(this.tools);
    this.systemPrompt = agentSystemPrompt(options.domain.policy);
  }

  /** The current episode's messages (greeting first). */
  get messages(): readonly Message[] {
    return this.started ? this.inner.messages : [];
  }

  get currentTask(): Task | null {
    return this.inner.currentTask;
  }

  /** The live DB of the current episode. */
  get db(): DB | null {
    return this.started ? (this.inner.state ?? null) : null;
  }

  /** `options.taskId` picks the task; otherwise it is drawn from the tasks with the env's seeded generator. */
  override async reset(options: ResetOptions = {}): Promise<ResetResult<ToolUseObservation>> {
    await super.reset(options);
    const taskId = options.options?.taskId;
    if (taskId !== undefined && typeof taskId !== 'string') throw new TypeError(`reset options.taskId must be a string, got ${typeof taskId}`);
    if (taskId !== undefined) getTask(this.tasks, taskId); // τ²'s error for an unknown id
    this.started = true; // a reset that fails still shows what it added (the greeting), as τ²'s loop does
    this.finished = null;
    // One generator: the episode draws its task and seed from this env's.
    this.inner.npRandom = this.npRandom;
    const [obs, info] = await this.inner.reset({ options: options.options });
    this.finished = (info.terminationReason as string | null) ?? null;
    return [this.observe(obs), this.info(info)];
  }

  async step(action: ToolUseAction): Promise<StepResult<ToolUseObservation>> {
    if (!this.started) throw new ResetNeeded('ToolUseEnv: call reset() before step()');
    if (this.finished !== null) throw new ResetNeeded(`ToolUseEnv: the episode ended (${this.finished}); call reset() to start a new one`);
    const [obs, reward, terminated, truncated, info] = await this.inner.step(toAgentTurn(action));
    if (terminated || truncated) this.finished = String(info.terminationReason);
    return [this.observe(obs), reward, terminated, truncated, this.info(info)];
  }

  override async render(): Promise<string | null> {
    if (this.renderMode !== 'ansi') return null;
    return messagesToText(this.messages);
  }

  override async close(): Promise<void> {
    await this.inner.close();
    this.started = false;
    this.finished = null;
  }

  /** New messages except the agent's own, or the whole history. */
  private observe(obs: ToolUseObservation): ToolUseObservation {
    if (!this.allMessages) return obs;
    const messages = [...this.messages];
    return { messages, text: messagesToText(messages) };
  }

  private info(inner: Info): Info {
    return {
      taskId: inner.taskId,
      tools: this.tools,
      policy: this.domain.policy,
      /** τ²'s agent system prompt (instructions + policy). */
      systemPrompt: this.systemPrompt,
      stepCount: inner.stepCount,
      numErrors: inner.numErrors,
      terminationReason: inner.terminationReason,
      rewardInfo: inner.rewardInfo,
      ...(inner.family !== undefined ? { family: inner.family } : {}),
    };
  }
}
