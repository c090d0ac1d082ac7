/**
 * A τ²-bench domain as an env of the environment API (src/tooluse/api/): `defineTau2Env` turns a `Domain` (its tools,
 * policy, DB and hash), τ² tasks, a τ² user simulator and an NL judge into an `EnvDefinition` that plays exactly as
 * τ²'s half-duplex loop (orchestrator.ts, the reference kept for it, through `OrchestratorEnv`):
 * - tools: the domain's, in order, with their τ² JSON schemas as written, and τ²'s `done` (`title: 'parameters'`);
 *   calls run through τ²'s executor (`executeToolCall`: no schema check, Python-style binding errors, `Error: …`);
 *   arguments that are not an object are recorded as `{}` (`malformedArguments: 'empty'`);
 * - turns: a call to `done` becomes the text `###STOP###` (τ²'s gym); text holding `###STOP###` ends the episode
 *   `agent_stop`; an empty turn is refused, or, with the communication protocol, a turn with both text and calls or
 *   neither ends it `agent_error`;
 * - limits: τ²'s steps (`maxSteps`, default 100: agent messages, tool batches and user messages) and tool errors
 *   (`maxErrors`, default 10, in total);
 * - the user: a τ² `UserSimulator` (one session per episode, the user's view of the conversation, its stop tokens);
 * - the greeting (`TAU2_GREETING`) and system prompt (`agentSystemPrompt(policy)`) of τ²'s agent;
 * - the reward: τ²'s evaluator (DB hash × COMMUNICATE × NL assertions, as the task's basis says), its whole
 *   `RewardInfo` in `info.rewardInfo`.
 * `ToolUseEnv` (env.ts) is this definition's env with τ²'s gym surface; the retail domain's definition is
 * src/domains/retail/define.ts.
 */
import { defineEnv, type EnvDefinition } from './api/define.ts';
import type { DemoContext, DemoSession, RewardFn, TaskList, ToolDef, UserSpec } from './api/types.ts';
import { applyDoneTool } from './actions.ts';
import { evaluateEpisode, GoldHashCache, needsJudge, type Judge, type TerminationReason } from './evaluator.ts';
import { executeToolCall } from './execute.ts';
import type { AssistantMessage } from './messages.ts';
import { hasTextContent } from './messages.ts';
import { agentSystemPrompt } from './openai.ts';
import { TAU2_GREETING, type AgentTurn } from './orchestrator.ts';
import type { Task } from './tasks.ts';
import type { Domain, ToolSchema } from './types.ts';
import { isUserStop, STOP_TOKEN, userEpisodeContext, userView, type UserSession, type UserSimulator } from './user.ts';

/** τ²'s `done` pseudo-tool as τ² shows it (pydantic's schema of no parameters). */
export const TAU2_DONE_TOOL: ToolSchema = {
  type: 'function',
  function: {
    name: 'done',
    description: 'Call this function when you are done with the task.',
    parameters: { properties: {}, required: [], title: 'parameters', type: 'object' },
  },
};

export interface Tau2EnvOptions<DB, T extends Task = Task> {
  /** A gym-style id, e.g. `longrun/retail-v1`. */
  id: string;
  domain: Domain<DB>;
  /** τ² tasks: a list (split 'train'), a record of splits, or a function of the split. */
  tasks: TaskList<T>;
  user: UserSimulator;
  /** Grades NL assertions; a task that needs one and has none is refused at reset. */
  judge?: Judge;
  /** Default 100, as τ²'s gym. */
  maxSteps?: number;
  /** Default 10. */
  maxErrors?: number;
  /** τ²'s communication protocol: a turn with both text and calls, or neither, ends `agent_error` (default off). */
  enforceCommunicationProtocol?: boolean;
  family?: (task: T) => string;
  demonstratorSession?: (task: T, ctx: DemoContext) => DemoSession;
}

const toolDefsByTools = new WeakMap<readonly unknown[], ToolDef<any, any>[]>();

/**
 * The domain's tools as `ToolDef`s: τ²'s schemas and descriptions as written, `run` = the tool on the episode's DB
 * (a τ² `ToolError` thrown is the tool error). Made once per tool list, so their schemas compile once.
 */
export function tau2ToolDefs<DB, T extends Task = Task>(domain: Domain<DB>): ToolDef<DB, T>[] {
  let defs = toolDefsByTools.get(domain.tools);
  if (!defs) {
    defs = domain.tools.map((t): ToolDef<DB, T> => ({
      name: t.name,
      description: t.schema.function.description,
      parameters: t.schema.function.parameters,
      kind: t.kind,
      run: (args: Record<string, unknown>, ctx) => t.invoke(ctx.state, args),
    }));
    toolDefsByTools.set(domain.tools, defs);
  }
  return defs as ToolDef<DB, T>[];
}

/**
 * A τ² user simulator as the API's user: one session per episode (started at its first reply with the episode's
 * seed), shown τ²'s user view; a reply holding a stop token is recorded and ends the episode `user_stop`; an empty
 * reply ends it `user_error` under the communication protocol, and is refused (a throw) otherwise.
 */
export function tau2User<DB, T extends Task = Task>(simulator: UserSimulator, options: { enforceCommunicationProtocol?: boolean } = {}): UserSpec<DB, T> {
  const enforce = options.enforceCommunicationProtocol ?? false;
  const sessions = new WeakMap<AbortSignal, UserSession>();
  return {
    name: simulator.name,
    async respond(ctx) {
      let session = sessions.get(ctx.signal);
      if (!session) {
        session = simulator.start(userEpisodeContext(ctx.task, ctx.seed));
        sessions.set(ctx.signal, session);
      }
      const text = await session.respond(userView(ctx.messages));
      if (typeof text !== 'string') throw new Error('The user simulator must return a string');
      const content = text === '' ? null : text;
      if (isUserStop(content)) return { content, end: 'user_stop' };
      if (content === null || content.trim() === '') {
        if (!enforce) throw new Error('The user simulator returned an empty message');
        return { content, end: 'user_error' };
      }
      return content;
    },
  };
}

/** τ²'s evaluator as a reward: the final DB's hash against the gold replay's, COMMUNICATE, NL assertions. */
export function tau2Reward<DB, T extends Task = Task>(domain: Domain<DB>, judge?: Judge): RewardFn<DB, T> {
  const goldHashCache = new GoldHashCache();
  return async (ep) => {
    const { reward, ...breakdown } = await evaluateEpisode(
      domain,
      ep.task,
      { messages: ep.messages, terminationReason: ep.terminationReason as TerminationReason, finalDbHash: domain.hashDb(ep.state) },
      { judge, goldHashCache },
    );
    return { reward, breakdown };
  };
}

const hasText = (turn: AgentTurn): boolean => typeof turn.content === 'string' && turn.content.trim() !== '';
const hasCalls = (turn: AgentTurn): boolean => (turn.toolCalls?.length ?? 0) > 0;

/** τ²'s turn rules: `done` as `###STOP###`, an empty turn refused (without the protocol). */
export function tau2PrepareTurn(enforceCommunicationProtocol = false): (turn: AgentTurn) => AgentTurn {
  return (turn) => {
    const t = applyDoneTool(turn);
    if (!enforceCommunicationProtocol && !hasText(t) && !hasCalls(t)) {
      throw new Error('An agent turn needs text or at least one tool call (or enable enforceCommunicationProtocol to score it as agent_error)');
    }
    return t;
  };
}

/** τ²'s end of an agent message: `###STOP###` in its text (agent_stop); under the protocol, text and calls together or neither (agent_error). */
export function tau2CheckTurn(enforceCommunicationProtocol = false): (message: AssistantMessage) => 'agent_stop' | 'agent_error' | null {
  return (msg) => {
    let reason: 'agent_stop' | 'agent_error' | null = null;
    if (msg.content !== null && msg.content.includes(STOP_TOKEN)) reason = 'agent_stop';
    if (enforceCommunicationProtocol && hasTextContent(msg) === (msg.toolCalls !== null)) reason = 'agent_error';
    return reason;
  };
}

/** The τ² domain, tasks, user and judge as an env definition that plays as τ²'s loop does (see the file comment). */
export function defineTau2Env<DB, T extends Task = Task>(o: Tau2EnvOptions<DB, T>): EnvDefinition<DB, T> {
  const { domain, judge } = o;
  const enforce = o.enforceCommunicationProtocol ?? false;
  const maxSteps = o.maxSteps ?? 100;
  return defineEnv<DB, T>({
    id: o.id,
    instructions: agentSystemPrompt(domain.policy),
    greeting: TAU2_GREETING,
    tools: tau2ToolDefs<DB, T>(domain),
    doneTool: { description: TAU2_DONE_TOOL.function.description, parameters: TAU2_DONE_TOOL.function.parameters },
    state: (task) => {
      if (judge === undefined && needsJudge(task)) {
        throw new Error(`Task ${task.id} is scored on NL assertions: give the env a judge (or use a task set without them, e.g. longrun/retail-v0)`);
      }
      return domain.freshDb();
    },
    tasks: o.tasks,
    user: tau2User<DB, T>(o.user, { enforceCommunicationProtocol: enforce }),
    reward: tau2Reward<DB, T>(domain, judge),
    maxSteps,
    maxErrors: o.maxErrors ?? 10,
    // Agent turns never reach τ²'s step limit first (each is a step, and so is the user's first message).
    maxTurns: maxSteps,
    prepareTurn: tau2PrepareTurn(enforce),
    checkTurn: tau2CheckTurn(enforce),
    callTool: (call, ctx) => executeToolCall(domain, ctx.state, call),
    malformedArguments: 'empty',
    ...(o.family ? { family: o.family } : {}),
    ...(o.demonstratorSession ? { demonstratorSession: o.demonstratorSession } : {}),
  });
}
