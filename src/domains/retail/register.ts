/**
 * Registers the τ²-bench retail environments with the gym registry:
 * - `longrun/retail-v0`: the τ² paper task set (`v0.x/tasks.json`, 15 tools, reward DB × COMMUNICATE, no judge);
 * - `longrun/retail-v1`: the current task set (`tasks.json`, 16 tools, reward DB × NL_ASSERTION on most tasks). The
 *   NL assertions need a judge: pass a `Judge` (e.g. the OpenAI-compatible `LLMJudge`) as `judge`. Without one the
 *   env grades them with the deterministic `communicate-fallback` judge and warns once that such scores are not
 *   comparable to τ²'s; `judge: 'none'` refuses NL-graded tasks instead.
 *
 * Each is a `ToolUseEnv`: the env of the retail definition on the environment API (define.ts), over one split.
 *
 * Kwargs: `dataDir` (default: env var LONGRUN_TAU2_RETAIL, else `../shared/tau2/retail` from the working directory),
 * `split` (default `base`), `user` (a UserSimulator; default the deterministic `TicketUser`, see src/tooluse/user.ts),
 * `judge`, `maxSteps` (100), `maxErrors` (10), `enforceCommunicationProtocol`, `allMessagesAsObservation`,
 * `renderMode` ('ansi').
 */
import { register, registry } from '../../gym/registry/registry.ts';
import { ToolUseEnv } from '../../tooluse/env.ts';
import type { RetailDb } from './db.ts';
import { retailTau2Options, type RetailDefinitionOptions } from './define.ts';
import { loadRetailTaskSet, RETAIL_ENV_IDS } from './task-set.ts';
import type { RetailToolSet } from './tools.ts';

export { loadRetailTaskSet, RETAIL_ENV_IDS, RETAIL_TASK_FILES, resolveRetailDataDir, type RetailTaskSet } from './task-set.ts';

export interface RetailEnvKwargs extends RetailDefinitionOptions {
  split?: string;
  allMessagesAsObservation?: boolean;
  renderMode?: string | null;
}

const KNOWN_KWARGS = ['dataDir', 'split', 'user', 'judge', 'maxSteps', 'maxErrors', 'enforceCommunicationProtocol', 'allMessagesAsObservation', 'renderMode'];

/** The retail env of a release over one split: the retail definition's env (`retailTau2Options`, define.ts). */
export function makeRetailEnv(version: RetailToolSet, kwargs: RetailEnvKwargs = {}): ToolUseEnv<RetailDb> {
  const unknown = Object.keys(kwargs).filter((k) => !KNOWN_KWARGS.includes(k));
  if (unknown.length) throw new Error(`Unknown retail env kwargs: ${unknown.join(', ')} (known: ${KNOWN_KWARGS.join(', ')})`);
  const { domain, tasks } = loadRetailTaskSet({ dataDir: kwargs.dataDir, version, split: kwargs.split });
  return new ToolUseEnv({
    ...retailTau2Options(version, domain, tasks, kwargs),
    tasks,
    allMessagesAsObservation: kwargs.allMessagesAsObservation,
    renderMode: kwargs.renderMode,
  });
}

/** Registers both retail envs; already registered ids are left alone. */
export function registerRetailEnvs(): void {
  for (const version of ['v0', 'v1'] as const) {
    const id = RETAIL_ENV_IDS[version];
    if (registry.has(id)) continue;
    register({ id, entryPoint: (kw) => makeRetailEnv(version, kw as RetailEnvKwargs), nondeterministic: false });
  }
}
