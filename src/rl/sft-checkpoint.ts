/**
 * SFT checkpoints with exact resume. A checkpoint is one directory `checkpoints/step-NNNNNNNN/` holding
 *   config.json + model.safetensors   the model (F32, HF names; `loadModel(dir)` reads it as a plain checkpoint)
 *   adapters.safetensors              extra trainable tensors (LoRA), when the model has any
 *   optimizer.safetensors             AdamW moments `m/NAME`, `v/NAME` (F32) for every trainable tensor
 *   trainer.json                      step, optimizer step, tokens seen, config, data fingerprint (written last)
 * It is written under a temporary name and renamed when complete, so a crash never leaves a half checkpoint under a
 * real name. The data order is a pure function of (seed, epoch), so no RNG state needs saving.
 * A run on a training backend writes `trainer.json` (with `backend: true`) and the backend's state instead
 * (sft-backend.ts); each kind of checkpoint is refused by the other kind of run.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import type { AdamW } from '../engine/index.ts';
import type { GptOssModel } from '../model/index.ts';
import { checkpointDirName, checkpointStep } from './checkpoint-dirs.ts';
import { loadCheckpoint, loadWeightsInto, readSafetensors, saveModel, writeSafetensors, type TensorToWrite } from '../model/checkpoint/index.ts';

export const CHECKPOINT_FORMAT = 'longrun-sft-checkpoint';

export const SftTrainerStateSchema = z.object({
  format: z.literal(CHECKPOINT_FORMAT),
  version: z.literal(1),
  step: z.number().int().min(0),
  totalSteps: z.number().int().min(1),
  optimizerStep: z.number().int().min(0),
  tokensSeen: z.number().int().min(0),
  skippedSteps: z.number().int().min(0),
  dataFingerprint: z.string(),
  config: z.record(z.string(), z.unknown()),
  trainableNames: z.array(z.string()),
  lastLoss: z.number().nullable(),
  /** Written through a training backend (sft-backend.ts): the weights are the backend's, in `sft-policy/`. */
  backend: z.literal(true).optional(),
});
export type SftTrainerState = z.infer<typeof SftTrainerStateSchema>;

/** Names of `model.trainable()` in optimizer order (found by gradient identity). */
export function trainableNames(model: GptOssModel): string[] {
  const byGrad = new Map([...model.gradients()].map(([name, g]) => [g, name]));
  return model.trainable().map(({ grad }, i) => {
    const name = byGrad.get(grad);
    if (name === undefined) throw new Error(`internal: trainable tensor ${i} has no name`);
    return name;
  });
}

/** Complete checkpoint directories under `root`, oldest first. */
export function listCheckpoints(root: string): { step: number; dir: string }[] {
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .map((name) => ({ step: checkpointStep(name), dir: join(root, name) }))
    .filter((e): e is { step: number; dir: string } => e.step !== null)
    .sort((a, b) => a.step - b.step);
}

/**
 * Writes checkpoint `step` under `root` as a whole or not at all: `fill` writes into `root/.partial/step-N` (which
 * `listCheckpoints` does not list, and whose base name is already the checkpoint's: a training backend names its
 * remote save after it), which is then renamed into place; a failure removes it and leaves the older checkpoints as
 * they were. Keeps the newest `keep`. Returns the checkpoint's folder.
 */
export function writeCheckpointFolder(root: string, step: number, keep: number, fill: (dir: string) => void): string {
  const { finalDir, tmp } = temporaryCheckpointDir(root, step);
  try {
    fill(tmp);
    return publishCheckpoint(root, tmp, finalDir, keep);
  } catch (error) {
    rmSync(tmp, { recursive: true, force: true });
    throw error;
  } finally {
    removeEmptyPartial(root);
  }
}

/** `writeCheckpointFolder` for a `fill` that is asynchronous (a training backend's save). */
export async function writeCheckpointFolderAsync(root: string, step: number, keep: number, fill: (dir: string) => Promise<void>): Promise<string> {
  const { finalDir, tmp } = temporaryCheckpointDir(root, step);
  try {
    await fill(tmp);
    return publishCheckpoint(root, tmp, finalDir, keep);
  } catch (error) {
    rmSync(tmp, { recursive: true, force: true });
    throw error;
  } finally {
    removeEmptyPartial(root);
  }
}

function temporaryCheckpointDir(root: string, step: number): { finalDir: string; tmp: string } {
  const finalDir = join(root, checkpointDirName(step));
  const tmp = join(root, '.partial', checkpointDirName(step));
  rmSync(tmp, { recursive: true, force: true });
  mkdirSync(tmp, { recursive: true });
  return { finalDir, tmp };
}

function removeEmptyPartial(root: string): void {
  const partial = join(root, '.partial');
  if (existsSync(partial) && readdirSync(partial).length === 0) rmSync(partial, { recursive: true, force: true });
}

function publishCheckpoint(root: string, tmp: string, finalDir: string, keep: number): string {
  rmSync(finalDir, { recursive: true, force: true });
  renameSync(tmp, finalDir);
  const all = listCheckpoints(root);
  for (const old of all.slice(0, Math.max(0, all.length - keep))) rmSync(old.dir, { recursive: true, force: true });
  return finalDir;
}

export function writeCheckpoint(root: string, model: GptOssModel, opt: AdamW, state: SftTrainerState, keep: number): string {
  return writeCheckpointFolder(root, state.step, keep, (tmp) => {
    saveModel(tmp, model);
    const extras = model.extraParameters();
    if (extras.size > 0) {
      writeSafetensors(join(tmp, 'adapters.safetensors'), new Map([...extras].map(([n, t]) => [n, { dtype: 'F32', shape: [...t.shape], data: () => t.data() } satisfies TensorToWrite])));
    }
    const moments = new Map<string, TensorToWrite>();
    state.trainableNames.forEach((name, i) => {
      const { m, v } = opt.moments(i);
      moments.set(`m/${name}`, { dtype: 'F32', shape: [...m.shape], data: () => m.data() });
      moments.set(`v/${name}`, { dtype: 'F32', shape: [...v.shape], data: () => v.data() });
    });
    writeSafetensors(join(tmp, 'optimizer.safetensors'), moments, { optimizer: 'AdamW', step: String(opt.step) });
    writeFileSync(join(tmp, 'trainer.json'), JSON.stringify(state, null, 2) + '\n');
  });
}

/** Everything read from a checkpoint, validated against the live model, before anything is changed. */
export interface LoadedSftCheckpoint {
  dir: string;
  state: SftTrainerState;
  apply(model: GptOssModel, opt: AdamW): void;
}

/** JSON with object keys sorted, for order-insensitive comparison. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v);
}

function fail(dir: string, what: string, cause?: unknown): never {
  throw new Error(`cannot resume from checkpoint ${dir}: ${what}. Nothing was changed; delete or move that checkpoint to resume from an earlier one, or start afresh in another --out folder.`, cause === undefined ? undefined : { cause });
}

export function readSftCheckpoint(dir: string, model: GptOssModel): LoadedSftCheckpoint {
  if (!existsSync(dir)) fail(dir, 'the directory does not exist');
  let state: SftTrainerState;
  try {
    const parsed = SftTrainerStateSchema.safeParse(JSON.parse(readFileSync(join(dir, 'trainer.json'), 'utf8')));
    if (!parsed.success) fail(dir, `trainer.json is not a valid SFT trainer state:\n${z.prettifyError(parsed.error)}`);
    state = parsed.data;
  } catch (error) {
    if (error instanceof Error && error.message.startsWith('cannot resume')) throw error;
    fail(dir, `trainer.json is missing or unreadable (${(error as Error).message}) — a partial checkpoint?`, error);
  }
  if (state.backend) fail(dir, 'it was written by an SFT run on a training backend (its weights are the backend\'s, see sft-policy/); resume it with the same backend');
  let weights: ReturnType<typeof loadCheckpoint>;
  try {
    weights = loadCheckpoint(dir);
  } catch (error) {
    fail(dir, `the model weights are unreadable (${(error as Error).message})`, error);
  }
  const theirs = weights.config as unknown as Record<string, unknown>, ours = model.config as unknown as Record<string, unknown>;
  const differing = [...new Set([...Object.keys(theirs), ...Object.keys(ours)])].filter((k) => canonical(theirs[k]) !== canonical(ours[k]));
  if (differing.length > 0) fail(dir, `its model config differs from the model given to runSft in ${differing.join(', ')} (same preset and overrides needed)`);
  const names = trainableNames(model);
  if (JSON.stringify(names) !== JSON.stringify(state.trainableNames)) fail(dir, 'its trainable tensors differ from the model\'s (LoRA/frozen base mismatch?)');
  let moments: ReturnType<typeof readSafetensors>;
  let adapters: ReturnType<typeof readSafetensors> | null = null;
  try {
    moments = readSafetensors(join(dir, 'optimizer.safetensors'));
    if (model.extraParameters().size > 0) adapters = readSafetensors(join(dir, 'adapters.safetensors'));
  } catch (error) {
    fail(dir, `the optimizer state is unreadable (${(error as Error).message})`, error);
  }
  const trainable = model.trainable();
  names.forEach((name, i) => {
    for (const kind of ['m', 'v']) {
      const t = moments.tensors.get(`${kind}/${name}`);
      if (!t) fail(dir, `optimizer.safetensors has no '${kind}/${name}'`);
      if (t.dtype !== 'F32' || t.data.length !== trainable[i].param.size) fail(dir, `optimizer tensor '${kind}/${name}' has the wrong type or size`);
    }
  });
  if (moments.tensors.size !== 2 * names.length) fail(dir, `optimizer.safetensors holds ${moments.tensors.size} tensors, expected ${2 * names.length}`);
  if (adapters) {
    for (const [name, t] of model.extraParameters()) {
      const s = adapters.tensors.get(name);
      if (!s || s.dtype !== 'F32' || s.data.length !== t.size) fail(dir, `adapters.safetensors lacks a matching '${name}'`);
    }
  }
  return {
    dir,
    state,
    apply(target: GptOssModel, opt: AdamW): void {
      loadWeightsInto(target, weights.params);
      if (adapters) for (const [name, t] of target.extraParameters()) t.data().set(adapters.tensors.get(name)!.data as Float32Array);
      names.forEach((name, i) => {
        const { m, v } = opt.moments(i);
        m.data().set(moments.tensors.get(`m/${name}`)!.data as Float32Array);
        v.data().set(moments.tensors.get(`v/${name}`)!.data as Float32Array);
      });
      opt.step = state.optimizerStep;
    },
  };
}
