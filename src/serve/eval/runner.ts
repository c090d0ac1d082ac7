/**
 * Runs an evaluation: every (task, trial) pair once, `concurrency` episodes at a time, each in its own
 * `ToolUseEnv` (its own DB) or, with `makeEnv`, its own env of that shape (an env defined with defineEnv), with a
 * per-pair seed derived from the run seed (so order and concurrency do not change what an episode sees). Every
 * finished episode is appended to the output folder at once, so a crashed or stopped run resumes where it was:
 * finished pairs are skipped, infrastructure errors (an LLM that kept failing, a judge that gave no usable answer, an
 * env error) are run again. Metrics follow τ² (tau2.md §7.6): infrastructure errors are excluded, and
 * success means reward within 1e-6 of 1.
 */
import { createHash } from 'node:crypto';
import type { TokenUsage } from '../../llm/openai/chat-client.ts';
import { sumUsage } from '../../llm/openai/chat-client.ts';
import { ToolUseEnv } from '../../tooluse/env.ts';
import type { Judge, RewardInfo } from '../../tooluse/evaluator.ts';
import { computeMetrics, type AgentMetrics } from '../../tooluse/metrics.ts';
import type { Task } from '../../tooluse/tasks.ts';
import type { Message } from '../../tooluse/messages.ts';
import type { Domain, ToolSchema } from '../../tooluse/types.ts';
import type { UserSimulator } from '../../tooluse/user.ts';
import { isEpisodeAgent, type AnyEvalAgent, type EpisodeEvalAgent, type EvalAgent, type EvalAgentSession } from './agents.ts';
import { pairKey, TrajectoryLog, type EpisodeRecord } from './trajectory-log.ts';

/** A per-episode component and the usage it ran up (null for non-LLM ones). */
export interface Metered<T> {
  value: T;
  usage(): TokenUsage | null;
}

/**
 * What an episode is played on: τ²'s `ToolUseEnv`, or any env of the same shape (an env defined with defineEnv,
 * `DefinedToolEnv`, whose tools come in the reset info).
 */
export interface EvalEnv {
  reset: ToolUseEnv['reset'];
  step: ToolUseEnv['step'];
  close(): Promise<void>;
  readonly messages: readonly Message[];
  readonly tools?: readonly ToolSchema[];
}

export interface EvalRunOptions<DB> {
  /** The τ² domain episodes run on (a ToolUseEnv each), unless `makeEnv` is given. */
  domain?: Domain<DB>;
  /** A fresh env per episode (instead of a ToolUseEnv over `domain`); the user and turn limit are the env's. */
  makeEnv?: () => EvalEnv;
  tasks: readonly { id: string }[];
  agent: AnyEvalAgent;
  /** A user simulator per episode (ToolUseEnv only). */
  makeUser?: () => Metered<UserSimulator>;
  /** A judge per episode, when the tasks need one. */
  makeJudge?: () => Metered<Judge>;
  trials: number;
  seed: number;
  concurrency: number;
  maxSteps: number;
  maxErrors: number;
  outDir: string;
  /** Written to config.json; `identityKeys` of it must match a previous run in the same folder. */
  config: Record<string, unknown>;
  identityKeys: readonly string[];
  /** Extra fields for results.json (labels such as comparability). */
  resultsExtra?: Record<string, unknown>;
  onStart?: (info: { total: number; alreadyDone: number }) => void;
  onEpisode?: (record: EpisodeRecord, progress: { done: number; total: number }) => void;
}

export interface EvalSummary {
  planned: number;
  finished: number;
  infrastructureErrors: number;
  complete: boolean;
  /** Over finished episodes; null when none finished. */
  metrics: AgentMetrics | null;
  terminations: Record<string, number>;
  usage: { agent: TokenUsage; user: TokenUsage; judge: TokenUsage };
  meanSteps: number | null;
  resumedEpisodes: number;
  droppedLines: number;
  wallS: number;
}

/** A seed for one (task, trial) pair, independent of the order episodes run in. */
export function pairSeed(runSeed: number, taskId: string, trial: number): number {
  const h = createHash('sha256').update(`${runSeed}\u0000${taskId}\u0000${trial}`).digest();
  return h.readUInt32BE(0) & 0x7fffffff;
}

const emptyUsage = (): TokenUsage => ({ requests: 0, promptTokens: 0, completionTokens: 0, retries: 0, failures: 0 });

function makeEpisodeEnv<DB>(o: EvalRunOptions<DB>): { env: EvalEnv; user: Metered<UserSimulator> | null; judge: Metered<Judge> | undefined } {
  if (o.makeEnv) return { env: o.makeEnv(), user: null, judge: undefined };
  if (!o.domain || !o.makeUser) throw new Error('runEval needs a domain and makeUser, or makeEnv');
  const user = o.makeUser();
  const judge = o.makeJudge?.();
  return { env: new ToolUseEnv({ domain: o.domain, tasks: o.tasks as readonly Task[], user: user.value, judge: judge?.value, maxSteps: o.maxSteps, maxErrors: o.maxErrors }), user, judge };
}

async function runEpisode<DB>(o: EvalRunOptions<DB>, task: Task, trial: number): Promise<EpisodeRecord> {
  const seed = pairSeed(o.seed, task.id, trial);
  const { env, user, judge } = makeEpisodeEnv(o);
  const started = Date.now();
  let info: Record<string, unknown> = {};
  let status: EpisodeRecord['status'] = 'ok';
  let error: string | undefined;
  let messages: EpisodeRecord['messages'];
  let played: Played = { reward: null, agentEnded: undefined, usage: null };
  // A turn agent's usage is read even when the episode failed half-way.
  const turnSession: { current?: EvalAgentSession } = {};
  try {
    if (isEpisodeAgent(o.agent)) ({ info, played } = await playEpisode(o.agent, env, task, seed));
    else info = await turnEpisode(o.agent, env, task, seed, o.maxSteps, turnSession);
  } catch (err) {
    status = 'infrastructure_error';
    error = (err as Error)?.message ?? String(err);
  } finally {
    messages = [...env.messages];
    await env.close();
  }
  const session = turnSession.current;
  if (session) played = { ...played, usage: session.usage?.() ?? null, ...(session.stats ? { stats: { ...session.stats() } } : {}) };
  const rewardInfo = (info.rewardInfo as RewardInfo | null | undefined) ?? null;
  const ok = status === 'ok';
  return {
    taskId: task.id,
    trial,
    seed,
    status,
    reward: ok ? (played.reward ?? rewardInfo?.reward ?? 0) : null,
    terminationReason: ok ? (played.agentEnded ?? (info.terminationReason as string | null) ?? null) : 'infrastructure_error',
    steps: (info.stepCount as number | undefined) ?? (info.turns as number | undefined) ?? 0,
    toolErrors: (info.numErrors as number | undefined) ?? (o.makeEnv ? messages.filter((m) => m.role === 'tool' && m.error === true).length : 0),
    durationMs: Date.now() - started,
    usage: { agent: played.usage, user: user?.usage() ?? null, judge: judge?.usage() ?? null },
    ...(played.stats ? { agentStats: { ...played.stats } } : {}),
    rewardInfo,
    messages,
    ...(played.tokens ? { tokens: played.tokens } : {}),
    ...(error !== undefined ? { error } : {}),
  };
}

interface Played {
  /** Null: the env's evaluated reward. */
  reward: number | null;
  agentEnded: string | undefined;
  usage: TokenUsage | null;
  stats?: Record<string, number>;
  tokens?: EpisodeRecord['tokens'];
}

/** A turn agent: the runner resets the env and asks the agent for each turn; returns the env's last info. */
async function turnEpisode(agent: EvalAgent, env: EvalEnv, task: Task, seed: number, maxSteps: number, holder: { current?: EvalAgentSession }): Promise<Record<string, unknown>> {
  const [obs0, info0] = await env.reset({ seed, options: { taskId: task.id } });
  let info: Record<string, unknown> = info0;
  let obs = obs0;
  const tools = env.tools ?? (Array.isArray(info0.tools) ? (info0.tools as ToolSchema[]) : []);
  const session = agent.start({ task, tools, systemPrompt: String(info0.systemPrompt ?? ''), seed });
  holder.current = session;
  let done = info.terminationReason !== null && info.terminationReason !== undefined;
  // The env ends the episode by max steps; this bound only guards against an env that never does.
  for (let turns = 0; !done && turns <= maxSteps; turns++) {
    const turn = await session.act(env.messages, obs.messages);
    const [next, , terminated, truncated, stepInfo] = await env.step(turn);
    obs = next;
    info = stepInfo;
    done = terminated || truncated;
  }
  if (!done) throw new Error(`The episode did not end within ${maxSteps} agent turns`);
  return info;
}

/** An episode agent plays on the env itself; an episode it ended (a loop limit) scores 0, as in training. */
async function playEpisode(agent: EpisodeEvalAgent, env: EvalEnv, task: Task, seed: number): Promise<{ info: Record<string, unknown>; played: Played }> {
  const p = await agent.play(env, { task, seed });
  return {
    info: p.info,
    played: { reward: p.reward, agentEnded: p.agentEnded, usage: p.usage ?? null, ...(p.stats ? { stats: p.stats } : {}), ...(p.tokens ? { tokens: p.tokens } : {}) },
  };
}

export function summarize(records: readonly EpisodeRecord[], planned: number): Omit<EvalSummary, 'resumedEpisodes' | 'droppedLines' | 'wallS'> {
  const ok = records.filter((r) => r.status === 'ok');
  const terminations: Record<string, number> = {};
  for (const r of records) terminations[r.terminationReason ?? 'unknown'] = (terminations[r.terminationReason ?? 'unknown'] ?? 0) + 1;
  const usage = { agent: emptyUsage(), user: emptyUsage(), judge: emptyUsage() };
  for (const r of records) {
    for (const role of ['agent', 'user', 'judge'] as const) {
      const u = r.usage?.[role];
      if (u) usage[role] = sumUsage(usage[role], u);
    }
  }
  return {
    planned,
    finished: ok.length,
    infrastructureErrors: records.length - ok.length,
    complete: ok.length === planned,
    metrics: ok.length ? computeMetrics(ok.map((r) => ({ taskId: r.taskId, reward: r.reward ?? 0 }))) : null,
    terminations,
    usage,
    meanSteps: ok.length ? ok.reduce((s, r) => s + r.steps, 0) / ok.length : null,
  };
}

export async function runEval<DB>(o: EvalRunOptions<DB>): Promise<EvalSummary> {
  if (!Number.isInteger(o.trials) || o.trials < 1) throw new Error(`--trials must be a positive integer, got ${o.trials}`);
  if (!Number.isInteger(o.concurrency) || o.concurrency < 1) throw new Error(`--concurrency must be a positive integer, got ${o.concurrency}`);
  if (o.tasks.length === 0) throw new Error('No tasks to evaluate');
  const started = Date.now();
  const log = new TrajectoryLog(o.outDir);
  log.checkOrWriteConfig(o.config, o.identityKeys);
  const { records: previous, dropped } = log.load();
  const wanted = new Set(o.tasks.flatMap((t) => Array.from({ length: o.trials }, (_, k) => pairKey(t.id, k))));
  const results = new Map<string, EpisodeRecord>();
  for (const r of previous) if (wanted.has(pairKey(r.taskId, r.trial))) results.set(pairKey(r.taskId, r.trial), r);
  const finishedBefore = [...results.values()].filter((r) => r.status === 'ok').length;

  const queue: { task: Task; trial: number }[] = [];
  for (const task of o.tasks as readonly Task[]) {
    for (let trial = 0; trial < o.trials; trial++) {
      if (results.get(pairKey(task.id, trial))?.status !== 'ok') queue.push({ task, trial });
    }
  }
  const total = o.tasks.length * o.trials;
  let done = total - queue.length;
  o.onStart?.({ total, alreadyDone: done });
  let next = 0;
  const worker = async () => {
    while (next < queue.length) {
      const { task, trial } = queue[next++]!;
      const record = await runEpisode(o, task, trial);
      log.append(record);
      results.set(pairKey(task.id, trial), record);
      done++;
      o.onEpisode?.(record, { done, total });
    }
  };
  await Promise.all(Array.from({ length: Math.min(o.concurrency, Math.max(1, queue.length)) }, worker));

  const summary: EvalSummary = {
    ...summarize([...results.values()], total),
    resumedEpisodes: finishedBefore,
    droppedLines: dropped,
    wallS: (Date.now() - started) / 1000,
  };
  log.writeResults({ config: o.config, ...o.resultsExtra, ...summary });
  return summary;
}
