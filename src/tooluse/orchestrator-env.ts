/**
 * `OrchestratorEnv`: the reference implementation of τ²'s gym env, over the τ² orchestrator (orchestrator.ts), with the
 * agent as the learner (like τ²'s `AgentGymEnv`, tau2.md §9). It was `ToolUseEnv` until that env became the τ²
 * definition's (tau2-define.ts, on the environment API); it is kept as the executable reference the definition is
 * checked against, message for message (test/domains/retail/define-parity.test.ts). Nothing else uses it.
 * One `step` is one agent turn; the observation is what happened since (tool results or the user's
 * reply), as messages and as `role: content` text. The reward is 0 until the episode ends, then the evaluated reward.
 *
 * Deviations from τ²'s gym, on purpose: reaching `maxSteps` sets `truncated` (Gymnasium's time-limit convention)
 * where τ² sets `terminated`; stepping after the end or before `reset` throws instead of returning an empty step;
 * actions may also be structured turns with several tool calls.
 */
import { Env, type Info, type ResetOptions, type ResetResult, type StepResult } from '../gym/env.ts';
import { ResetNeeded } from '../gym/errors.ts';
import { DONE_TOOL_NAME, toAgentTurn } from './actions.ts';
import type { ToolUseEnvOptions } from './env.ts';
import type { Judge, RewardInfo } from './evaluator.ts';
import { evaluateEpisode, GoldHashCache, needsJudge } from './evaluator.ts';
import type { Message } from './messages.ts';
import { messagesToText } from './messages.ts';
import { agentSystemPrompt } from './openai.ts';
import { Orchestrator } from './orchestrator.ts';
import type { ToolUseAction, ToolUseObservation } from './spaces.ts';
import { AgentTurnSpace, ToolUseObservationSpace } from './spaces.ts';
import type { Task } from './tasks.ts';
import { getTask } from './tasks.ts';
import type { Domain, ToolSchema } from './types.ts';
import type { UserSimulator } from './user.ts';

/** τ²'s `done` pseudo-tool as τ² shows it (the reference's own copy; tau2-define.ts has the definition's). */
const DONE_TOOL_SCHEMA: ToolSchema = {
  type: 'function',
  function: {
    name: DONE_TOOL_NAME,
    description: 'Call this function when you are done with the task.',
    parameters: { properties: {}, required: [], title: 'parameters', type: 'object' },
  },
};

export class OrchestratorEnv<DB = unknown> extends Env<ToolUseObservation, ToolUseAction, string> {
  static override metadata = { renderModes: ['ansi'], renderFps: null };

  readonly actionSpace: AgentTurnSpace;
  readonly observationSpace = new ToolUseObservationSpace();
  readonly domain: Domain<DB>;
  readonly tasks: readonly Task[];
  /** Tool schemas shown to the agent, with τ²'s `done` pseudo-tool last. */
  readonly tools: ToolSchema[];

  private readonly user: UserSimulator;
  private readonly judge: Judge | undefined;
  private readonly maxSteps: number;
  private readonly maxErrors: number;
  private readonly enforceProtocol: boolean;
  private readonly allMessages: boolean;
  private readonly goldHashes = new GoldHashCache();
  private readonly systemPrompt: string;
  private orchestrator: Orchestrator<DB> | null = null;
  private task: Task | null = null;
  private finished = false;
  private rewardInfo: RewardInfo | null = null;

  constructor(options: ToolUseEnvOptions<DB>) {
    super(options);
    if (options.tasks.length === 0) throw new Error('OrchestratorEnv needs at least one task');
    this.domain = options.domain;
    this.tasks = options.tasks;
    this.user = options.user;
    this.judge = options.judge;
    this.maxSteps = options.maxSteps ?? 100;
    this.maxErrors = options.maxErrors ?? 10;
    this.enforceProtocol = options.enforceCommunicationProtocol ?? false;
    this.allMessages = options.allMessagesAsObservation ?? false;
    this.tools = [...options.domain.tools.map((t) => t.schema), DONE_TOOL_SCHEMA];
    this.actionSpace = new AgentTurnSpace(this.tools);
    this.systemPrompt = agentSystemPrompt(options.domain.policy);
  }

  /** The current episode's messages (greeting first). */
  get messages(): readonly Message[] {
    return this.orchestrator?.messages ?? [];
  }

  get currentTask(): Task | null {
    return this.task;
  }

  /** The live DB of the current episode. */
  get db(): DB | null {
    return this.orchestrator?.db ?? null;
  }

  /** `options.taskId` picks the task; otherwise it is drawn from the tasks with the env's seeded generator. */
  override async reset(options: ResetOptions = {}): Promise<ResetResult<ToolUseObservation>> {
    await super.reset(options);
    const taskId = options.options?.taskId;
    if (taskId !== undefined && typeof taskId !== 'string') throw new TypeError(`reset options.taskId must be a string, got ${typeof taskId}`);
    this.task = taskId !== undefined ? getTask(this.tasks, taskId) : this.tasks[this.npRandom.integers(this.tasks.length)]!;
    if (this.judge === undefined && needsJudge(this.task)) {
      throw new Error(`Task ${this.task.id} is scored on NL assertions: give the env a judge (or use a task set without them, e.g. longrun/retail-v0)`);
    }
    this.finished = false;
    this.rewardInfo = null;
    this.orchestrator = new Orchestrator(this.domain, this.task, this.user, {
      maxSteps: this.maxSteps,
      maxErrors: this.maxErrors,
      enforceCommunicationProtocol: this.enforceProtocol,
      seed: this.npRandom.integers(2 ** 31),
    });
    const added = await this.orchestrator.start();
    if (this.orchestrator.done) return [this.observe(added), await this.finish()];
    return [this.observe(added), this.info()];
  }

  async step(action: ToolUseAction): Promise<StepResult<ToolUseObservation>> {
    const o = this.orchestrator;
    if (o === null) throw new ResetNeeded('OrchestratorEnv: call reset() before step()');
    if (this.finished) throw new ResetNeeded(`OrchestratorEnv: the episode ended (${o.terminationReason}); call reset() to start a new one`);
    const added = await o.act(toAgentTurn(action));
    const obs = this.observe(added);
    if (!o.done) return [obs, 0, false, false, this.info()];
    const info = await this.finish();
    const truncated = o.terminationReason === 'max_steps';
    return [obs, this.rewardInfo!.reward, !truncated, truncated, info];
  }

  override async render(): Promise<string | null> {
    if (this.renderMode !== 'ansi') return null;
    return messagesToText(this.messages);
  }

  override async close(): Promise<void> {
    this.orchestrator = null;
    this.finished = false;
  }

  /** New messages except the agent's own, or the whole history. */
  private observe(added: readonly Message[]): ToolUseObservation {
    const messages = this.allMessages ? [...this.messages] : added.filter((m) => m.role !== 'assistant');
    return { messages, text: messagesToText(messages) };
  }

  private async finish(): Promise<Info> {
    const o = this.orchestrator!;
    this.finished = true;
    this.rewardInfo = await evaluateEpisode(
      this.domain,
      this.task!,
      { messages: o.messages, terminationReason: o.terminationReason!, finalDbHash: o.finalDbHash() },
      { judge: this.judge, goldHashCache: this.goldHashes },
    );
    return this.info();
  }

  private info(): Info {
    const o = this.orchestrator!;
    return {
      taskId: this.task!.id,
      tools: this.tools,
      policy: this.domain.policy,
      /** τ²'s agent system prompt (instructions + policy). */
      systemPrompt: this.systemPrompt,
      stepCount: o.stepCount,
      numErrors: o.numErrors,
      terminationReason: o.terminationReason,
      rewardInfo: this.rewardInfo,
    };
  }
}
