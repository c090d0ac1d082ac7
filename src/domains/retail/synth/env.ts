/**
 * A `ToolUseEnv` over a synthetic task set with the scripted user, for trainers that play the agent themselves
 * (the gym seam). Register it with the gym registry where the built-in envs are registered, if wanted.
 */
import { ToolUseEnv } from '../../../tooluse/env.ts';
import type { RetailDb } from '../db.ts';
import { readTaskSet, type LoadedSynthTaskSet } from './taskset.ts';
import { ScriptedRetailUser, type ScriptedUserOptions } from './user-sim.ts';

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
  const { maxSteps, maxErrors, allMessagesAsObservation, renderMode, ...user } = options;
  return new ToolUseEnv({
    domain: set.domain,
    tasks: set.tasks,
    user: new ScriptedRetailUser(set.scenarios, user),
    maxSteps: maxSteps ?? 200,
    maxErrors,
    allMessagesAsObservation,
    renderMode,
  });
}
