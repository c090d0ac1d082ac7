/**
 * A run file as the tools under scripts/ use it: read (config-file.ts), optionally pointed at a checkpoint
 * (`runFileFromCheckpoint`: the data and curriculum stages dropped, SFT too unless kept), edited, parsed and built,
 * so a script evaluates or continues exactly the run that `longrun train --config` would build.
 */
import type { TrainerConfig } from '../rl/config.ts';
import { readConfigFile } from './config-file.ts';
import { buildRun, parseStagesRunFile, runFileFromCheckpoint, type BuiltRun, type RunFile } from './train-setup.ts';

export interface LoadRunOptions {
  /** Start the gpt-oss policy from this model folder or SFT checkpoint instead of the file's preset. */
  checkpoint?: string;
  /** With `checkpoint`: keep the `sft` section (its data and drills), e.g. to score or continue the SFT stage. */
  keepSft?: boolean;
  /** Changes the raw file before it is parsed (drop a section, point a path elsewhere, override trainer settings). */
  edit?: (raw: Record<string, unknown>) => void;
}

export interface LoadedRun<T extends TrainerConfig | null = TrainerConfig | null> {
  run: RunFile;
  /** The GRPO section, parsed; null when the file has none. */
  trainer: T;
  built: BuiltRun;
}

function parse(path: string, options: LoadRunOptions): { run: RunFile; trainer: TrainerConfig | null } {
  const read = readConfigFile(path);
  if (read === null || typeof read !== 'object' || Array.isArray(read)) throw new Error(`config file ${path} must hold a mapping`);
  const raw = options.checkpoint !== undefined ? runFileFromCheckpoint(read, options.checkpoint, { keepSft: options.keepSft }) : { ...(read as Record<string, unknown>) };
  options.edit?.(raw);
  return parseStagesRunFile(raw);
}

/** Reads, parses and builds the run file at `path`. */
export async function loadRun(path: string, options: LoadRunOptions = {}): Promise<LoadedRun> {
  const { run, trainer } = parse(path, options);
  return { run, trainer, built: await buildRun(run) };
}

/** `loadRun` for a file that must have a GRPO section. */
export async function loadGrpoRun(path: string, options: LoadRunOptions = {}): Promise<LoadedRun<TrainerConfig>> {
  const { run, trainer } = parse(path, options);
  if (trainer === null) throw new Error(`invalid run config ${path}:\n  grpo: the GRPO trainer section is required`);
  return { run, trainer, built: await buildRun(run) };
}
