/**
 * Builds an evaluation from `longrun eval` options: the task set (τ² retail v0/v1 + split, or a generated tasks
 * file), the agent, the user simulator and the judge. Problems are reported before any episode runs: a v1 task set
 * whose NL assertions have no judge is refused with the ways out.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { loadRetailTaskSet, resolveRetailDataDir } from '../../domains/retail/register.ts';
import { ExpertAgent } from '../../domains/retail/synth/expert.ts';
import type { SynthScenario } from '../../domains/retail/synth/scenario.ts';
import { ScriptedRetailUser } from '../../domains/retail/synth/user-sim.ts';
import { ChatClient, type ChatClientOptions } from '../../llm/openai/chat-client.ts';
import { LLMJudge } from '../../llm/openai/judge.ts';
import { ConcurrencyLimiter } from '../../llm/openai/limiter.ts';
import { LLMUserSimulator } from '../../llm/openai/user-simulator.ts';
import type { Judge } from '../../tooluse/evaluator.ts';
import { needsJudge } from '../../tooluse/evaluator.ts';
import type { Task } from '../../tooluse/tasks.ts';
import { TicketUser, type UserSimulator } from '../../tooluse/user.ts';
import type { RetailDomain } from '../../domains/retail/domain.ts';
import { OpenAIEvalAgent, SynthEvalAgent, type AnyEvalAgent } from './agents.ts';
import { CommunicateFallbackJudge, FALLBACK_JUDGE_NAME } from '../../tooluse/fallback-judge.ts';
import type { EvalRunOptions, Metered } from './runner.ts';

export const AGENT_KINDS = ['openai', 'expert'] as const;
export const USER_KINDS = ['ticket', 'llm', 'scripted'] as const;

export interface EvalCliOptions {
  agent: string;
  baseUrl?: string;
  model?: string;
  temperature?: number;
  /** Completion cap per LLM request (sent as max_tokens). */
  maxTokens?: number;
  data?: string;
  taskSet: string;
  split?: string;
  tasks?: string;
  taskIds?: string;
  numTasks?: number;
  trials: number;
  user: string;
  userBaseUrl?: string;
  userModel?: string;
  userGuidelines?: string;
  judge?: string;
  judgeBaseUrl?: string;
  judgeModel?: string;
  concurrency: number;
  maxRequests: number;
  timeout: number;
  maxRetries: number;
  maxSteps: number;
  maxErrors: number;
  /**
   * --user scripted: proposals the customer turns down before it leaves (`ScriptedUserOptions.maxRefusals`); absent, it
   * turns them down as often as they come. 1 is the impatient customer: any wrong proposal ends the episode unsolved.
   */
  maxRefusals?: number;
  seed: number;
  out: string;
  /** Set when the agent is a checkpoint served for the run (its URL changes every run, so it is not the identity). */
  checkpoint?: string;
  /** An agent built by the caller (`--agent checkpoint`: the token-level agent over the served model). */
  agentInstance?: AnyEvalAgent;
  /** The checkpoint agent's prompt and sampling settings, recorded in config.json and compared on resume. */
  agentSettings?: Record<string, unknown>;
}

/** Config fields that must match when resuming into the same --out folder. */
export const IDENTITY_KEYS = ['agent', 'model', 'baseUrl', 'checkpoint', 'agentSettings', 'taskSet', 'tasksFile', 'split', 'taskIds', 'trials', 'user', 'userModel', 'judge', 'seed', 'maxSteps', 'maxErrors', 'maxRefusals'] as const;

function scenariosFromFile(file: string): Map<string, SynthScenario> {
  const raw = JSON.parse(readFileSync(file, 'utf8')) as { id?: unknown; longrun?: unknown }[];
  const out = new Map<string, SynthScenario>();
  if (!Array.isArray(raw)) return out;
  for (const t of raw) if (typeof t?.id === 'string' && t.longrun && typeof t.longrun === 'object') out.set(t.id, t.longrun as SynthScenario);
  return out;
}

function pickTasks(all: readonly Task[], o: EvalCliOptions): Task[] {
  let tasks = [...all];
  if (o.taskIds) {
    const ids = o.taskIds.split(',').map((s) => s.trim()).filter(Boolean);
    const known = new Set(all.map((t) => t.id));
    const missing = ids.filter((id) => !known.has(id));
    if (missing.length) throw new Error(`--task-ids: unknown task id(s) ${missing.join(', ')} in this task set`);
    const wanted = new Set(ids);
    tasks = tasks.filter((t) => wanted.has(t.id));
  }
  if (o.numTasks !== undefined) tasks = tasks.slice(0, o.numTasks);
  if (tasks.length === 0) throw new Error('No tasks selected');
  return tasks;
}

export interface BuiltEval {
  run: Omit<EvalRunOptions<unknown>, 'onStart' | 'onEpisode'>;
  notes: string[];
}

export function buildEval(o: EvalCliOptions): BuiltEval {
  if (!o.agentInstance && !(AGENT_KINDS as readonly string[]).includes(o.agent)) throw new Error(`--agent must be one of ${AGENT_KINDS.join(', ')} (got ${o.agent})`);
  if (!(USER_KINDS as readonly string[]).includes(o.user)) throw new Error(`--user must be one of ${USER_KINDS.join(', ')} (got ${o.user})`);
  if (o.taskSet !== 'v0' && o.taskSet !== 'v1') throw new Error(`--task-set must be v0 or v1 (got ${o.taskSet})`);
  if (o.maxRefusals !== undefined) {
    if (o.user !== 'scripted') throw new Error(`--max-refusals applies to --user scripted (the customer of generated tasks), not --user ${o.user}`);
    if (!Number.isInteger(o.maxRefusals) || o.maxRefusals < 1) throw new Error(`--max-refusals must be an integer >= 1, got ${o.maxRefusals}`);
  }
  const notes: string[] = [];

  // Tasks: a generated tasks file in its task-set folder (with its own db.json), or one of τ²'s task sets.
  let dataDir = resolveRetailDataDir(o.data);
  const tasksFile = o.tasks ? resolve(o.tasks) : undefined;
  if (tasksFile) {
    if (!existsSync(tasksFile)) throw new Error(`--tasks: ${tasksFile} does not exist`);
    if (existsSync(join(dirname(tasksFile), 'db.json')) && o.data === undefined) dataDir = dirname(tasksFile);
  }
  const set = loadRetailTaskSet({ dataDir, version: o.taskSet, tasksFile, split: o.split });
  const domain: RetailDomain = set.domain;
  const tasks = pickTasks(tasksFile && o.split === undefined ? set.allTasks : set.tasks, o);

  const limiter = new ConcurrencyLimiter(o.maxRequests);
  const client = (baseUrl: string | undefined, model: string | undefined, what: string): ChatClientOptions => {
    if (!baseUrl || !model) throw new Error(`${what} needs a base URL and a model (${what === 'the agent' ? '--base-url and --model' : what === 'the LLM user' ? '--user-base-url and --user-model' : '--judge-base-url and --judge-model'})`);
    return { baseUrl, model, timeoutMs: o.timeout * 1000, retry: { maxRetries: o.maxRetries, seed: o.seed }, limiter, params: { temperature: o.temperature ?? 0, ...(o.maxTokens !== undefined ? { max_tokens: o.maxTokens } : {}) } };
  };

  const agent: AnyEvalAgent = o.agentInstance ?? (o.agent === 'openai' ? new OpenAIEvalAgent(client(o.baseUrl, o.model, 'the agent')) : new SynthEvalAgent(new ExpertAgent()));

  let makeUser: () => Metered<UserSimulator>;
  if (o.user === 'llm') {
    const opts = client(o.userBaseUrl ?? o.baseUrl, o.userModel, 'the LLM user');
    const guidelines = o.userGuidelines ? readFileSync(o.userGuidelines, 'utf8') : undefined;
    if (!guidelines) notes.push("user: LLM with longrun's own wording of τ²'s simulation guidelines; pass --user-guidelines FILE (τ²'s simulation_guidelines.md) for exact parity.");
    makeUser = () => {
      const c = new ChatClient(opts);
      return { value: new LLMUserSimulator(c, { guidelines }), usage: () => ({ ...c.usage }) };
    };
  } else if (o.user === 'scripted') {
    const file = tasksFile ?? join(dataDir, o.taskSet === 'v0' ? join('v0.x', 'tasks.json') : 'tasks.json');
    const scenarios = scenariosFromFile(file);
    const missing = tasks.filter((t) => !scenarios.has(t.id)).map((t) => t.id);
    if (missing.length) throw new Error(`--user scripted plays generated tasks only; ${missing.length} selected task(s) have no synthetic scenario (e.g. ${missing.slice(0, 3).join(', ')}). Use --tasks with a generated task set, or --user ticket|llm`);
    const user = new ScriptedRetailUser(scenarios, o.maxRefusals !== undefined ? { maxRefusals: o.maxRefusals } : {});
    makeUser = () => ({ value: user, usage: () => null });
  } else {
    const user = new TicketUser();
    makeUser = () => ({ value: user, usage: () => null });
    notes.push('user: ticket (deterministic; states the request verbatim and confirms). Not comparable to τ² LLM-user scores.');
  }

  const judged = tasks.filter(needsJudge);
  let makeJudge: (() => Metered<Judge>) | undefined;
  let judgeName: string | null = null;
  let comparable = o.user === 'llm' && o.agent === 'openai' && !tasksFile;
  if (o.judge === FALLBACK_JUDGE_NAME) {
    const j = new CommunicateFallbackJudge(tasks);
    makeJudge = () => ({ value: j, usage: () => null });
    judgeName = FALLBACK_JUDGE_NAME;
    if (judged.length) {
      comparable = false;
      notes.push(`judge: ${FALLBACK_JUDGE_NAME} grades the NL assertions of ${judged.length} task(s) by their communicate_info; these scores are NOT comparable to τ² scores.`);
    }
  } else if (o.judge !== undefined && o.judge !== 'llm') {
    throw new Error(`--judge must be "llm" (with --judge-base-url/--judge-model) or "${FALLBACK_JUDGE_NAME}" (got ${o.judge})`);
  } else if (o.judgeBaseUrl || o.judgeModel || o.judge === 'llm') {
    const opts = client(o.judgeBaseUrl ?? o.baseUrl, o.judgeModel, 'the judge');
    makeJudge = () => {
      const c = new ChatClient(opts);
      return { value: new LLMJudge(c, { seed: o.seed }), usage: () => ({ ...c.usage }) };
    };
    judgeName = `llm:${o.judgeModel}`;
  } else if (judged.length) {
    throw new Error(
      `${judged.length} of the ${tasks.length} selected task(s) are graded on NL assertions (task set ${o.taskSet}), which need a judge. ` +
        `Give one with --judge-base-url URL --judge-model M, or pass --judge ${FALLBACK_JUDGE_NAME} for a deterministic stand-in (not comparable to τ² scores), or use --task-set v0.`,
    );
  }

  const config = {
    agent: agent.name,
    model: o.model ?? null,
    baseUrl: o.agent === 'openai' && o.checkpoint === undefined ? (o.baseUrl ?? null) : null,
    checkpoint: o.checkpoint !== undefined ? resolve(o.checkpoint) : null,
    ...(o.agentSettings !== undefined ? { agentSettings: o.agentSettings } : {}),
    taskSet: tasksFile ? 'file' : o.taskSet,
    toolSet: o.taskSet,
    tasksFile: tasksFile ?? null,
    dataDir,
    split: o.split ?? (tasksFile ? null : 'base'),
    taskIds: tasks.map((t) => t.id),
    trials: o.trials,
    user: o.user,
    userModel: o.user === 'llm' ? (o.userModel ?? null) : null,
    judge: judgeName,
    seed: o.seed,
    maxSteps: o.maxSteps,
    maxErrors: o.maxErrors,
    ...(o.maxRefusals !== undefined ? { maxRefusals: o.maxRefusals } : {}),
    temperature: o.temperature ?? 0,
  };
  return {
    notes,
    run: {
      domain: domain as never,
      tasks,
      agent,
      makeUser,
      makeJudge,
      trials: o.trials,
      seed: o.seed,
      concurrency: o.concurrency,
      maxSteps: o.maxSteps,
      maxErrors: o.maxErrors,
      outDir: o.out,
      config,
      identityKeys: IDENTITY_KEYS,
      resultsExtra: { comparableToTau2: comparable, notes },
    },
  };
}
