/**
 * A `ToolUseEnv` over a synthetic task set with the scripted user, for trainers that play the agent themselves
 * (the gym seam): the env of the synthetic set's definition on the environment API (`synthTau2Options`, ../define.ts).
 * Register it with the gym registry where the built-in envs are registered, if wanted.
 */
import { ToolUseEnv } from '../../../tooluse/env.ts';
import type { RetailDb } from '../db.ts';
import { synthTau2Options } from '../define.ts';
import { readTaskSet, type LoadedSynthTaskSet } from './taskset.ts';
import type { ScriptedUserOptions } from './user-sim.ts';

export interface SynthEnvOptions extends ScriptedUserOptions {
  /** Default 200 (τ²'s CLI). */
  maxSteps?: number;
  maxErrors?: number;
  allMessagesAsObservation?: boolean;
  renderMode?: string | null;
}

/** `source`: a task-set folder written by `longrun gen tasks`, or one already read. */
export function makeSynthRetailEnv(source: string | LoadedSynthTaskSet, options: SynthEnvOptions = {}): ToolUseEnv<RetailDb> {
  const set = typeof source === 'string' ? readTaskSet(source) : source;
  const { allMessagesAsObservation, renderMode, ...rest } = options;
  const { id, domain, user, maxSteps, maxErrors } = synthTau2Options(set, rest);
  return new ToolUseEnv({ id, domain, tasks: set.tasks, user, maxSteps, maxErrors, allMessagesAsObservation, renderMode });
}
