/**
 * The one name of a checkpoint folder, for SFT (`checkpoints/step-NNNNNNNN/`) and GRPO (`DIR/step-NNNNNNNN/`): the
 * step, zero-padded to eight digits, so folders sort by step. GRPO checkpoints written before the two were one used
 * `step_N`; `grpoCheckpointDir` still finds those.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';

/** `step-00000150` for step 150. */
export function checkpointDirName(step: number): string {
  return `step-${String(step).padStart(8, '0')}`;
}

/** The step of a checkpoint folder name, or null when the name is not one. */
export function checkpointStep(name: string): number | null {
  const m = /^step-(\d{8})$/.exec(name);
  return m ? Number(m[1]) : null;
}

/** The folder of the GRPO checkpoint of `step` under `dir`: `step-NNNNNNNN`, or a legacy `step_N` when only that exists. */
export function grpoCheckpointDir(dir: string, step: number): string {
  const named = join(dir, checkpointDirName(step));
  const legacy = join(dir, `step_${step}`);
  return !existsSync(named) && existsSync(legacy) ? legacy : named;
}
