/**
 * Scores a finished episode the way τ²-bench does (tau2.md §7): 0 unless it ended with `agent_stop`/`user_stop`,
 * otherwise the product of the components named in the task's `reward_basis`. Components outside the basis are still
 * computed (except NL assertions, which cost a judge call) and reported for diagnostics.
 */
import { executeToolCall, findTool } from './execute.ts';
import type { Message, ToolCall } from './messages.ts';
import { hasTextContent, toolCallsOf } from './messages.ts';
import type { Action, RewardType, Task } from './tasks.ts';
import { rewardBasisOf } from './tasks.ts';
import type { Domain, ToolKind } from './types.ts';

export type TerminationReason = 'user_stop' | 'agent_stop' | 'max_steps' | 'too_many_errors' | 'agent_error' | 'user_error';

export const EVALUABLE_TERMINATIONS: ReadonlySet<TerminationReason> = new Set(['user_stop', 'agent_stop']);

export interface DbCheck {
  dbMatch: boolean;
  dbReward: number;
  goldHash: string;
  predictedHash: string;
}

export interface ActionCheck {
  action: Action;
  actionMatch: boolean;
  actionReward: number;
  toolType: ToolKind | null;
}

export interface CommunicateCheck {
  info: string;
  met: boolean;
  justification: string;
}

export interface NlAssertionCheck {
  nlAssertion: string;
  met: boolean;
  justification: string;
}

/** The breakdown of one episode's reward, like τ²'s RewardInfo. */
export interface RewardInfo {
  reward: number;
  /** null when the episode ended prematurely (nothing was evaluated). */
  rewardBasis: RewardType[] | null;
  rewardBreakdown: Partial<Record<RewardType, number>>;
  dbCheck: DbCheck | null;
  actionChecks: ActionCheck[] | null;
  communicateChecks: CommunicateCheck[] | null;
  nlAssertions: NlAssertionCheck[] | null;
  info: Record<string, unknown>;
}

/** One graded outcome from an NL-assertion judge (τ²'s `{expectedOutcome, reasoning, metExpectation}`). */
export interface JudgeResult {
  expectedOutcome: string;
  reasoning: string;
  metExpectation: boolean;
}

export interface JudgeRequest {
  /** The whole trajectory as `role: content` lines, tool results included. */
  transcript: string;
  messages: readonly Message[];
  assertions: readonly string[];
}

/** Grades natural-language assertions on a conversation (an LLM in τ²). It may return fewer results than asked. */
export interface Judge {
  judge(request: JudgeRequest): Promise<JudgeResult[]>;
}

export interface EpisodeOutcome {
  messages: readonly Message[];
  terminationReason: TerminationReason;
  /** Hash of the live DB at the end. Omitted: the trajectory's write calls are replayed on a fresh DB (τ²'s way). */
  finalDbHash?: string;
}

export interface EvaluateOptions {
  /** Needed only when NL_ASSERTION is in the basis and the task has assertions. */
  judge?: Judge;
  /** Reuses the gold hash across episodes of the same task (gold replay is deterministic). */
  goldHashCache?: GoldHashCache;
}

/** Gold-replay hashes per task, for one domain. */
export class GoldHashCache {
  private readonly hashes = new WeakMap<Task, string>();
  get(task: Task, compute: () => string): string {
    let h = this.hashes.get(task);
    if (h === undefined) {
      h = compute();
      this.hashes.set(task, h);
    }
    return h;
  }
}

export interface GoldReplay<DB> {
  db: DB;
  outputs: { output: string; error: boolean }[];
}

/** Runs the task's gold actions in order on a fresh DB. Failing calls are recorded and ignored, as in τ². */
export function replayGoldActions<DB>(domain: Domain<DB>, task: Task, db: DB = domain.freshDb()): GoldReplay<DB> {
  const outputs = (task.evaluation_criteria?.actions ?? []).map((a) => executeToolCall(domain, db, { name: a.name, arguments: a.arguments }));
  return { db, outputs };
}

/** The DB a trajectory leads to: its write tool calls re-executed in order on a fresh DB (unknown tools skipped). */
export function replayTrajectoryWrites<DB>(domain: Domain<DB>, messages: readonly Message[], db: DB = domain.freshDb()): DB {
  for (const call of toolCallsOf(messages)) {
    const tool = findTool(domain, call.name);
    if (tool?.kind === 'write') executeToolCall(domain, db, call);
  }
  return db;
}

export function checkDb<DB>(domain: Domain<DB>, task: Task, outcome: EpisodeOutcome, cache?: GoldHashCache): DbCheck {
  const gold = () => domain.hashDb(replayGoldActions(domain, task).db);
  const goldHash = cache ? cache.get(task, gold) : gold();
  const predictedHash = outcome.finalDbHash ?? domain.hashDb(replayTrajectoryWrites(domain, outcome.messages));
  const dbMatch = goldHash === predictedHash;
  return { dbMatch, dbReward: dbMatch ? 1 : 0, goldHash, predictedHash };
}

/** Nested JSON strings compare by meaning (τ² normalises them before comparing arguments). */
function normalizeArg(v: unknown): unknown {
  if (typeof v === 'string') {
    const s = v.trim();
    if (s.startsWith('{') || s.startsWith('[')) {
      try {
        return normalizeArg(JSON.parse(s));
      } catch {
        return v;
      }
    }
    return v;
  }
  if (Array.isArray(v)) return v.map(normalizeArg);
  if (typeof v === 'object' && v !== null) return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, normalizeArg(x)]));
  return v;
}

/** Python `==` on JSON values: key order does not matter, list order does, 1 == 1.0. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    return a.every((x, i) => jsonEqual(x, b[i]));
  }
  if (typeof a === 'object' && a !== null && typeof b === 'object' && b !== null) {
    const ka = Object.keys(a);
    const kb = Object.keys(b);
    if (ka.length !== kb.length) return false;
    return ka.every((k) => Object.hasOwn(b, k) && jsonEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]));
  }
  return false;
}

/** τ²'s `Action.compare_with_tool_call`: same name, and equal arguments restricted to `compare_args`. */
export function actionMatchesToolCall(action: Action, call: Pick<ToolCall, 'name' | 'arguments'>): boolean {
  if (action.name !== call.name) return false;
  const keys = action.compare_args ?? Object.keys(call.arguments);
  if (keys.length === 0) return true;
  const pick = (args: Record<string, unknown>) =>
    Object.fromEntries(Object.entries(args).filter(([k]) => keys.includes(k)).map(([k, v]) => [k, normalizeArg(v)]));
  return jsonEqual(pick(call.arguments), pick(action.arguments));
}

export function checkActions<DB>(domain: Domain<DB>, task: Task, messages: readonly Message[]): { reward: number; checks: ActionCheck[] } {
  const gold = task.evaluation_criteria?.actions ?? [];
  if (gold.length === 0) return { reward: 1, checks: [] };
  const calls = toolCallsOf(messages);
  const checks = gold.map((action) => {
    const actionMatch = calls.some((c) => actionMatchesToolCall(action, c));
    return { action, actionMatch, actionReward: actionMatch ? 1 : 0, toolType: findTool(domain, action.name)?.kind ?? null };
  });
  // All or nothing, as tau2.md §7.5 specifies (newer τ² code averages per-action partial credit instead).
  return { reward: checks.every((c) => c.actionMatch) ? 1 : 0, checks };
}

/**
 * τ²'s communicate rule: S counts as said if some assistant text contains it, ignoring case, after removing commas
 * from the text only (so `1093.34` matches "$1,093.34" but `1,093.34` never matches).
 */
export function communicated(info: string, messages: readonly Message[]): Message | null {
  const needle = info.toLowerCase();
  for (const m of messages) {
    if (m.role !== 'assistant' || !hasTextContent(m)) continue;
    if (m.content!.toLowerCase().replaceAll(',', '').includes(needle)) return m;
  }
  return null;
}

export function checkCommunicate(task: Task, messages: readonly Message[]): { reward: number; checks: CommunicateCheck[] } {
  const infos = task.evaluation_criteria?.communicate_info ?? [];
  const checks = infos.map((info) => {
    const m = communicated(info, messages);
    return m
      ? { info, met: true, justification: `Information '${info}' communicated in the message:\n '${m.content}'` }
      : { info, met: false, justification: `Information '${info}' not communicated.` };
  });
  return { reward: checks.every((c) => c.met) ? 1 : 0, checks };
}

/** Whether scoring this task calls the NL-assertion judge (NL_ASSERTION in its basis and a non-empty list). */
export function needsJudge(task: Task): boolean {
  return rewardBasisOf(task).includes('NL_ASSERTION') && (task.evaluation_criteria?.nl_assertions?.length ?? 0) > 0;
}

/** The conversation as τ²'s NL judge sees it: `role: content` per message, `None` for tool-call messages. */
export function judgeTranscript(messages: readonly Message[]): string {
  return messages.map((m) => `${m.role}: ${m.content ?? 'None'}`).join('\n');
}

export async function checkNlAssertions(task: Task, messages: readonly Message[], judge: Judge | undefined): Promise<{ reward: number; checks: NlAssertionCheck[] }> {
  const assertions = task.evaluation_criteria?.nl_assertions ?? [];
  if (assertions.length === 0) return { reward: 1, checks: [] };
  if (!judge) throw new Error(`Task ${task.id} is graded on NL assertions, which need a judge: pass one in the evaluation options`);
  const results = await judge.judge({ transcript: judgeTranscript(messages), messages, assertions });
  const checks = results.map((r) => ({ nlAssertion: r.expectedOutcome, met: r.metExpectation === true, justification: r.reasoning }));
  // τ² quirk kept on purpose: only the results the judge returned count, so fewer results can still pass.
  return { reward: checks.every((c) => c.met) ? 1 : 0, checks };
}

function prematureReward(reason: TerminationReason): RewardInfo {
  return {
    reward: 0,
    rewardBasis: null,
    rewardBreakdown: {},
    dbCheck: null,
    actionChecks: null,
    communicateChecks: null,
    nlAssertions: null,
    info: { note: `Simulation terminated prematurely. Termination reason: ${reason}` },
  };
}

export async function evaluateEpisode<DB>(domain: Domain<DB>, task: Task, outcome: EpisodeOutcome, options: EvaluateOptions = {}): Promise<RewardInfo> {
  if (!EVALUABLE_TERMINATIONS.has(outcome.terminationReason)) return prematureReward(outcome.terminationReason);
  if (task.evaluation_criteria === null) {
    return { ...prematureReward(outcome.terminationReason), reward: 1, info: { note: 'No evaluation criteria' } };
  }
  const basis = [...new Set(rewardBasisOf(task))];
  if (basis.includes('ENV_ASSERTION') && (task.evaluation_criteria.env_assertions?.length ?? 0) > 0) {
    throw new Error(`Task ${task.id} uses env_assertions, which this kit does not evaluate`);
  }
  const db = checkDb(domain, task, outcome, options.goldHashCache);
  const action = checkActions(domain, task, outcome.messages);
  const communicate = checkCommunicate(task, outcome.messages);
  const nl = basis.includes('NL_ASSERTION') ? await checkNlAssertions(task, outcome.messages, options.judge) : null;

  const components: Record<RewardType, number | null> = {
    DB: db.dbReward,
    ENV_ASSERTION: 1,
    ACTION: action.reward,
    COMMUNICATE: communicate.reward,
    NL_ASSERTION: nl?.reward ?? null,
  };
  let reward = 1;
  const rewardBreakdown: Partial<Record<RewardType, number>> = {};
  for (const type of basis) {
    const value = components[type];
    if (value === null) throw new Error(`Task ${task.id}: reward basis ${type} was not evaluated`);
    rewardBreakdown[type] = value;
    reward *= value;
  }
  return {
    reward,
    rewardBasis: basis,
    rewardBreakdown,
    dbCheck: db,
    actionChecks: action.checks,
    communicateChecks: communicate.checks,
    nlAssertions: nl?.checks ?? null,
    info: {},
  };
}
