/**
 * Registers the τ²-bench retail environments with the gym registry:
 * - `longrun/retail-v0`: the τ² paper task set (`v0.x/tasks.json`, 15 tools, reward DB × COMMUNICATE, no judge);
 * - `longrun/retail-v1`: the current task set (`tasks.json`, 16 tools, reward DB × NL_ASSERTION on most tasks). The
 *   NL assertions need a judge: pass a `Judge` (e.g. the OpenAI-compatible `LLMJudge`) as `judge`. Without one the
 *   env grades them with the deterministic `communicate-fallback` judge and warns once that such scores are not
 *   comparable to τ²'s; `judge: 'none'` refuses NL-graded tasks instead.
 *
 * Kwargs: `dataDir` (default: env var LONGRUN_TAU2_RETAIL, else `../shared/tau2/retail` from the working directory),
 * `split` (default `base`), `user` (a UserSimulator; default the deterministic `TicketUser`, see src/tooluse/user.ts),
 * `judge`, `maxSteps` (100), `maxErrors` (10), `enforceCommunicationProtocol`, `allMessagesAsObservation`,
 * `renderMode` ('ansi').
 */
import { join, resolve } from 'node:path';
import { register, registry } from '../../gym/registry/registry.ts';
import { ToolUseEnv } from '../../tooluse/env.ts';
import type { Judge } from '../../tooluse/evaluator.ts';
import type { Task } from '../../tooluse/tasks.ts';
import type { Splits } from '../../tooluse/tasks.ts';
import { DEFAULT_SPLIT, loadTasks, parseSplits, parseTasks, selectSplit } from '../../tooluse/tasks.ts';
import type { UserSimulator } from '../../tooluse/user.ts';
import { TicketUser } from '../../tooluse/user.ts';
import { CommunicateFallbackJudge } from '../../tooluse/fallback-judge.ts';
import type { RetailDb } from './db.ts';
import { createRetailDomain, type RetailDomain } from './domain.ts';
import { loadRetailData, type RetailData } from './load.ts';
import type { RetailToolSet } from './tools.ts';

export const RETAIL_ENV_IDS = { v0: 'longrun/retail-v0', v1: 'longrun/retail-v1' } as const;

/** The task file of each τ² release, relative to the data folder. */
export const RETAIL_TASK_FILES: Record<RetailToolSet, string> = { v0: join('v0.x', 'tasks.json'), v1: 'tasks.json' };

export function resolveRetailDataDir(dataDir?: string): string {
  return resolve(dataDir ?? process.env.LONGRUN_TAU2_RETAIL ?? join('..', 'shared', 'tau2', 'retail'));
}

export interface RetailTaskSet {
  domain: RetailDomain;
  tasks: Task[];
  /** Every task of the file, whatever the split. */
  allTasks: Task[];
}

const dataByDir = new Map<string, RetailData>();
const taskSets = new Map<string, { domain: RetailDomain; allTasks: Task[]; splits: Splits }>();

/**
 * The retail domain and the tasks of one split, for one τ² release. A folder's DB is loaded once per process and
 * shared by both releases (episode DBs are copy-on-write views of it).
 */
export function loadRetailTaskSet(options: { dataDir?: string; version?: RetailToolSet; tasksFile?: string; split?: string } = {}): RetailTaskSet {
  const dir = resolveRetailDataDir(options.dataDir);
  const version = options.version ?? 'v1';
  const tasksPath = options.tasksFile ? resolve(options.tasksFile) : join(dir, RETAIL_TASK_FILES[version]);
  const key = `${dir}\0${tasksPath}\0${version}`;
  let entry = taskSets.get(key);
  if (!entry) {
    let data = dataByDir.get(dir);
    if (!data) {
      data = loadRetailData(dir);
      dataByDir.set(dir, data);
    }
    const allTasks = tasksPath === join(dir, 'tasks.json') ? parseTasks(data.tasks, tasksPath) : loadTasks(tasksPath);
    entry = { domain: createRetailDomain(data, { toolSet: version }), allTasks, splits: parseSplits(data.splits, join(dir, 'split_tasks.json')) };
    taskSets.set(key, entry);
  }
  return { domain: entry.domain, allTasks: entry.allTasks, tasks: selectSplit(entry.allTasks, entry.splits, options.split ?? DEFAULT_SPLIT) };
}

export interface RetailEnvKwargs {
  dataDir?: string;
  split?: string;
  user?: UserSimulator;
  judge?: Judge | 'communicate-fallback' | 'none';
  maxSteps?: number;
  maxErrors?: number;
  enforceCommunicationProtocol?: boolean;
  allMessagesAsObservation?: boolean;
  renderMode?: string | null;
}

export function makeRetailEnv(version: RetailToolSet, kwargs: RetailEnvKwargs = {}): ToolUseEnv<RetailDb> {
  const known = new Set(['dataDir', 'split', 'user', 'judge', 'maxSteps', 'maxErrors', 'enforceCommunicationProtocol', 'allMessagesAsObservation', 'renderMode']);
  const unknown = Object.keys(kwargs).filter((k) => !known.has(k));
  if (unknown.length) throw new Error(`Unknown retail env kwargs: ${unknown.join(', ')} (known: ${[...known].join(', ')})`);
  const { domain, tasks } = loadRetailTaskSet({ dataDir: kwargs.dataDir, version, split: kwargs.split });
  return new ToolUseEnv({
    domain,
    tasks,
    user: kwargs.user ?? new TicketUser(),
    judge: resolveJudge(version, kwargs.judge, tasks),
    maxSteps: kwargs.maxSteps,
    maxErrors: kwargs.maxErrors,
    enforceCommunicationProtocol: kwargs.enforceCommunicationProtocol,
    allMessagesAsObservation: kwargs.allMessagesAsObservation,
    renderMode: kwargs.renderMode,
  });
}

let warnedFallback = false;

function resolveJudge(version: RetailToolSet, judge: RetailEnvKwargs['judge'], tasks: readonly Task[]): Judge | undefined {
  if (judge === 'none') return undefined;
  if (judge !== undefined && judge !== 'communicate-fallback') return judge;
  // v0.x tasks are graded without a judge (DB × COMMUNICATE); only v1 needs one.
  if (version === 'v0' && judge === undefined) return undefined;
  if (judge === undefined && !warnedFallback) {
    warnedFallback = true;
    process.emitWarning(
      "longrun/retail-v1 has no judge: NL assertions are graded by the deterministic 'communicate-fallback' judge, so rewards are not comparable to τ²-bench's. Pass judge: <Judge> for LLM grading.",
      { code: 'LONGRUN_FALLBACK_JUDGE' },
    );
  }
  return new CommunicateFallbackJudge(tasks);
}

/** Registers both retail envs; already registered ids are left alone. */
export function registerRetailEnvs(): void {
  for (const version of ['v0', 'v1'] as const) {
    const id = RETAIL_ENV_IDS[version];
    if (registry.has(id)) continue;
    register({ id, entryPoint: (kw) => makeRetailEnv(version, kw as RetailEnvKwargs), nondeterministic: false });
  }
}
