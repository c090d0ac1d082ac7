/**
 * Runs synthetic episodes through `ToolUseEnv` (agent turn → env step) and records each as a trajectory: the
 * messages (assistant texts, tool calls with arguments, tool results, user texts), the reward breakdown and, for
 * agents that keep notes (the expert with its mistake knob), the mistakes made.
 */
import type { Message } from '../../../tooluse/messages.ts';
import type { RewardInfo, TerminationReason } from '../../../tooluse/evaluator.ts';
import { ToolUseEnv } from '../../../tooluse/env.ts';
import type { Task } from '../../../tooluse/tasks.ts';
import type { UserSimulator } from '../../../tooluse/user.ts';
import type { RetailDb } from '../db.ts';
import type { RetailDomain } from '../domain.ts';
import type { AgentMistake, SlipRecord, SynthAgent } from './agent.ts';

export interface Trajectory {
  taskId: string;
  agent: string;
  user: string;
  seed: number;
  trial: number;
  reward: number;
  terminationReason: TerminationReason | null;
  rewardBreakdown: RewardInfo['rewardBreakdown'];
  dbMatch: boolean | null;
  communicateMet: boolean[] | null;
  steps: number;
  toolErrors: number;
  messages: Message[];
  /** The mistakes an imperfect agent made (only for agents that keep notes, e.g. the expert with its mistake knob). */
  mistakes?: AgentMistake[];
  /** The decision points at which it could have made one. */
  mistakeOpportunities?: number;
  /** Slipped calls (recovery.ts), what was meant and what was sent. */
  slips?: SlipRecord[];
  /**
   * Indices into `messages` of the agent messages that are context, not demonstrations (the slips): SFT renders them
   * with no loss.
   */
  contextOnly?: number[];
}

export interface EpisodeRunnerOptions {
  domain: RetailDomain;
  tasks: readonly Task[];
  user: UserSimulator;
  /** Default 200 (τ²'s CLI). */
  maxSteps?: number;
  maxErrors?: number;
}

/** One env over a task set; `run` plays one task with one agent and returns its trajectory. */
export class EpisodeRunner {
  private readonly env: ToolUseEnv<RetailDb>;
  private readonly userName: string;

  constructor(options: EpisodeRunnerOptions) {
    this.env = new ToolUseEnv({ domain: options.domain, tasks: options.tasks, user: options.user, maxSteps: options.maxSteps ?? 200, maxErrors: options.maxErrors ?? 10 });
    this.userName = options.user.name;
  }

  async run(agent: SynthAgent, taskId: string, seed: number, trial = 0): Promise<Trajectory> {
    let [obs, info] = await this.env.reset({ seed, options: { taskId } });
    const task = this.env.currentTask!;
    const session = agent.start({ task, tools: this.env.tools, seed });
    let done = this.env.messages.length > 0 && info.terminationReason !== null;
    /** The index in env.messages of each agent turn's message (it is appended first by the step). */
    const turnAt: number[] = [];
    while (!done) {
      const turn = session.act(obs.messages);
      turnAt.push(this.env.messages.length);
      const [next, , terminated, truncated, stepInfo] = await this.env.step(turn);
      obs = next;
      info = stepInfo;
      done = terminated || truncated;
    }
    const ri = info.rewardInfo as RewardInfo | null;
    const notes = session.notes?.();
    return {
      taskId,
      agent: agent.name,
      user: this.userName,
      seed,
      trial,
      reward: ri?.reward ?? 0,
      terminationReason: info.terminationReason as TerminationReason | null,
      rewardBreakdown: ri?.rewardBreakdown ?? {},
      dbMatch: ri?.dbCheck?.dbMatch ?? null,
      communicateMet: ri?.communicateChecks?.map((c) => c.met) ?? null,
      steps: info.stepCount as number,
      toolErrors: info.numErrors as number,
      messages: [...this.env.messages],
      ...(notes ? { mistakes: notes.mistakes.map((m) => ({ ...m })), mistakeOpportunities: notes.mistakeOpportunities } : {}),
      ...(notes?.slips?.length ? { slips: notes.slips.map((x) => ({ ...x })), contextOnly: notes.slips.map((x) => turnAt[x.turn]!) } : {}),
    };
  }

  async close(): Promise<void> {
    await this.env.close();
  }
}
