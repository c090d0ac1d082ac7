/**
 * Registers the τ²-bench retail environments with the gym registry:
 * - `longrun/retail-v0`: the τ² paper task set (`v0.x/tasks.json`, 15 tools, reward DB × COMMUNICATE, no judge);
 * - `longrun/retail-v1`: the current task set (`tasks.json`, 16 tools, reward DB × NL_ASSERTION on most tasks). The
 *   NL assertions need a judge: pass a `Judge` (e.g. the OpenAI-compatible `LLMJudge`) as `judge`. Without one the
 *   env grades them with the deterministic `communicate-fallback` judge and warns once that such scores are not
 *   comparable to τ²'s; `judge: 'none'` refuses NL-graded tasks instead.
 *
 * Each is a `ToolUseEnv`: the env of the retail definition on the environment API (define.ts), over one split. The
 * definitions themselves (`defineRetailEnv`) are registered for `getEnvDefinition(id)` too, keeping these gym entry
 * points: a run file names them with `env: { id: longrun/retail-v1, split, valSplit, options }`, where `options` are
 * `RETAIL_RUN_OPTIONS` (the definition's options that a file can hold). They are made when first looked up, so the τ²
 * data is read only then.
 *
 * Kwargs: `dataDir` (default: env var LONGRUN_TAU2_RETAIL, else `../shared/tau2/retail` from the working directory),
 * `split` (default `base`), `user` (a UserSimulator; default the deterministic `TicketUser`, see src/tooluse/user.ts),
 * `judge`, `maxSteps` (100), `maxErrors` (10), `enforceCommunicationProtocol`, `allMessagesAsObservation`,
 * `renderMode` ('ansi').
 */
import { z } from 'zod';
import { register, registry } from '../../gym/registry/registry.ts';
import { definedEnvIds, registerEnv } from '../../tooluse/api/registry.ts';
import { ToolUseEnv } from '../../tooluse/env.ts';
import type { RetailDb } from './db.ts';
import { defineRetailEnv, retailTau2Options, type RetailDefinitionOptions } from './define.ts';
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

/**
 * The retail definition's options a run file can give (`env.options`): data, not objects (the user simulator is the
 * deterministic `TicketUser`; an LLM judge needs code, `judge: 'communicate-fallback'` names the deterministic one
 * without the warning that it is not τ²'s, `'none'` refuses NL-graded tasks).
 */
export const RETAIL_RUN_OPTIONS = z.object({
  /** Relative to the working directory, like every path of a run file. */
  dataDir: z.string().min(1).optional(),
  judge: z.enum(['communicate-fallback', 'none']).optional(),
  maxSteps: z.number().int().min(1).optional(),
  maxErrors: z.number().int().min(1).optional(),
  enforceCommunicationProtocol: z.boolean().optional(),
}).strict();

/** `env.options` of a run file as the retail definition's options; the error names the env and each bad key. */
export function retailRunOptions(id: string, options: Record<string, unknown>): RetailDefinitionOptions {
  const r = RETAIL_RUN_OPTIONS.safeParse(options);
  if (!r.success) throw new Error(`env.options of ${id}: ${r.error.issues.map((i) => `${i.path.join('.') || '(options)'}: ${i.message}`).join('; ')} (known: ${Object.keys(RETAIL_RUN_OPTIONS.shape).join(', ')})`);
  return r.data;
}

/**
 * Registers both retail envs with the gym registry (already registered ids are left alone) and their definitions for
 * `getEnvDefinition` (lazily: the τ² data is read when a definition is first looked up), keeping the gym entry points.
 */
export function registerRetailEnvs(): void {
  for (const version of ['v0', 'v1'] as const) {
    const id = RETAIL_ENV_IDS[version];
    if (!registry.has(id)) register({ id, entryPoint: (kw) => makeRetailEnv(version, kw as RetailEnvKwargs), nondeterministic: false });
    if (!definedEnvIds({ all: true }).includes(id)) registerEnv({ id, load: (options) => defineRetailEnv(version, retailRunOptions(id, options)) }, { entryPoint: 'keep' });
  }
}
