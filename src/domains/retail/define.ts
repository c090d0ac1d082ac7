/**
 * The τ²-bench retail domain on the environment API (src/tooluse/api/): `defineRetailEnv(version)` is the retail env
 * as an `EnvDefinition` made by `defineTau2Env` (src/tooluse/tau2-define.ts, which is `defineEnv` with τ²'s rules):
 * - tools: the retail tools (15 in v0, 16 in v1) with their exact τ² JSON schemas and descriptions, in τ²'s order,
 *   then τ²'s `done`; calls run through τ²'s executor, so every output and error string is τ²'s;
 * - state: a fresh copy-on-write retail DB per episode;
 * - tasks: the τ² task file of the release, by split (`base`, `train`, `test`);
 * - user: a τ² user simulator (default the deterministic `TicketUser`);
 * - reward: τ²'s evaluator (DB hash × COMMUNICATE in v0; DB × NL assertions in v1, graded by the given judge, else
 *   the `communicate-fallback` judge with a warning; `judge: 'none'` refuses NL-graded tasks);
 * - greeting and instructions: τ²'s (`TAU2_GREETING`, τ²'s agent prompt with the retail policy).
 * `defineSynthRetailEnv(set)` is a synthetic task set (synth/) the same way, with the scripted customer, the task
 * families and the expert as an interactive demonstrator.
 *
 * The registered ids (`longrun/retail-v0`, `longrun/retail-v1`, register.ts) and the synthetic env of the recipes
 * (`makeSynthRetailEnv`) are `ToolUseEnv`s, i.e. envs of these same definitions with τ²'s gym surface.
 */
import type { EnvDefinition } from '../../tooluse/api/define.ts';
import type { DemoTurn } from '../../tooluse/api/types.ts';
import type { Judge } from '../../tooluse/evaluator.ts';
import { CommunicateFallbackJudge } from '../../tooluse/fallback-judge.ts';
import { defineTau2Env, type Tau2EnvOptions } from '../../tooluse/tau2-define.ts';
import type { Task } from '../../tooluse/tasks.ts';
import type { ToolSchema } from '../../tooluse/types.ts';
import type { UserSimulator } from '../../tooluse/user.ts';
import { TicketUser } from '../../tooluse/user.ts';
import type { RetailDb } from './db.ts';
import type { RetailDomain } from './domain.ts';
import { makeAgent, type MakeAgentOptions } from './synth/rollouts.ts';
import { readTaskSet, type LoadedSynthTaskSet } from './synth/taskset.ts';
import type { SynthTask } from './synth/task-gen.ts';
import { ScriptedRetailUser, type ScriptedUserOptions } from './synth/user-sim.ts';
import { loadRetailTaskSet, RETAIL_ENV_IDS } from './task-set.ts';
import type { RetailToolSet } from './tools.ts';

/** The id of a synthetic retail env (one task-set folder, the scripted customer). */
export const RETAIL_SYNTH_ENV_ID = 'longrun/retail-synth-v0';

/** What the retail env takes besides the split (the registered ids' kwargs, register.ts). */
export interface RetailDefinitionOptions {
  /** Default: env var LONGRUN_TAU2_RETAIL, else `../shared/tau2/retail` from the working directory. */
  dataDir?: string;
  /** Default the deterministic `TicketUser`. */
  user?: UserSimulator;
  /** A judge for v1's NL assertions; default `communicate-fallback` (v1) or none (v0); `'none'` refuses them. */
  judge?: Judge | 'communicate-fallback' | 'none';
  /** Default 100, as τ²'s gym. */
  maxSteps?: number;
  /** Default 10. */
  maxErrors?: number;
  enforceCommunicationProtocol?: boolean;
}

let warnedFallback = false;

/** The judge a retail env grades with; `tasks` are those the fallback judge may be asked about. */
export function resolveRetailJudge(version: RetailToolSet, judge: RetailDefinitionOptions['judge'], tasks: readonly Task[]): Judge | undefined {
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

/**
 * Everything of the retail definition but its tasks, for a release: the registered envs (one split's tasks) and
 * `defineRetailEnv` (every split) are made from the same parts. `judgeTasks`: the tasks the fallback judge knows.
 */
export function retailTau2Options(version: RetailToolSet, domain: RetailDomain, judgeTasks: readonly Task[], options: RetailDefinitionOptions = {}): Omit<Tau2EnvOptions<RetailDb>, 'tasks'> {
  return {
    id: RETAIL_ENV_IDS[version],
    domain,
    user: options.user ?? new TicketUser(),
    judge: resolveRetailJudge(version, options.judge, judgeTasks),
    maxSteps: options.maxSteps,
    maxErrors: options.maxErrors,
    enforceCommunicationProtocol: options.enforceCommunicationProtocol,
  };
}

/** The τ² retail env of a release (`v0`: the τ² paper's task set and 15 tools; `v1`: the current one, 16 tools). */
export function defineRetailEnv(version: RetailToolSet, options: RetailDefinitionOptions = {}): EnvDefinition<RetailDb, Task> {
  const { domain, allTasks } = loadRetailTaskSet({ dataDir: options.dataDir, version });
  return defineTau2Env<RetailDb>({
    ...retailTau2Options(version, domain, allTasks, options),
    tasks: (split) => loadRetailTaskSet({ dataDir: options.dataDir, version, split }).tasks,
  });
}

export interface SynthDefinitionOptions extends ScriptedUserOptions {
  /** Default 200 (τ²'s CLI). */
  maxSteps?: number;
  maxErrors?: number;
  /** The demonstrator's knobs (its mistake rate, notes, …); default the perfect expert. */
  expert?: MakeAgentOptions;
}

/** The parts of a synthetic set's definition (the synthetic env of the recipes is made from the same). */
export function synthTau2Options(set: LoadedSynthTaskSet, options: SynthDefinitionOptions = {}): Tau2EnvOptions<RetailDb, SynthTask> {
  const { maxSteps, maxErrors, expert, ...user } = options;
  const agent = makeAgent('expert', expert);
  return {
    id: RETAIL_SYNTH_ENV_ID,
    domain: set.domain,
    tasks: set.tasks,
    user: new ScriptedRetailUser(set.scenarios, user),
    maxSteps: maxSteps ?? 200,
    maxErrors,
    family: (task) => task.longrun.family,
    demonstratorSession: (task, ctx) => {
      const session = agent.start({ task, tools: ctx.tools as readonly ToolSchema[], seed: ctx.seed });
      return { act: (observed) => session.act(observed) as DemoTurn };
    },
  };
}

/**
 * A synthetic retail task set (`longrun gen tasks`, one world) as an env definition: its tasks (split `train`), the
 * scripted customer, the task families, and the expert as an interactive demonstrator (`demonstrationEpisodes`).
 */
export function defineSynthRetailEnv(source: string | LoadedSynthTaskSet, options: SynthDefinitionOptions = {}): EnvDefinition<RetailDb, SynthTask> {
  const set = typeof source === 'string' ? readTaskSet(source) : source;
  return defineTau2Env<RetailDb, SynthTask>(synthTau2Options(set, options));
}
