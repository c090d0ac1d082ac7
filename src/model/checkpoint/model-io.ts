/** Bridges checkpoints and a live `GptOssModel`: save its parameters, build a model from a checkpoint directory. */
import { GptOssModel, type ModelOptions } from '../model.ts';
import { CheckpointError } from './errors.ts';
import { loadCheckpoint, saveCheckpoint, type LoadedCheckpoint, type SaveOptions } from './hf.ts';
import { sameShape, shapeString } from './tensors.ts';

export function saveModel(dir: string, model: GptOssModel, options: SaveOptions = {}): { files: string[] } {
  return saveCheckpoint(dir, model.config, model.parameters(), options);
}

/** Copies loaded parameters into the model's tensors (names and shapes must match exactly). */
export function loadWeightsInto(model: GptOssModel, params: LoadedCheckpoint['params']): void {
  const targets = model.parameters();
  for (const [name, target] of targets) {
    const src = params.get(name);
    if (!src) throw new CheckpointError('MISSING_TENSOR', `checkpoint has no tensor '${name}' for this model`);
    if (!sameShape(src.shape, target.shape)) throw new CheckpointError('SHAPE_MISMATCH', `tensor '${name}' has shape ${shapeString(src.shape)}, the model wants ${shapeString(target.shape)}`);
  }
  for (const name of params.keys()) {
    if (!targets.has(name)) throw new CheckpointError('UNEXPECTED_TENSOR', `checkpoint tensor '${name}' is not a parameter of this model`);
  }
  for (const [name, target] of targets) target.data().set(params.get(name)!.data);
}

/** A model with the checkpoint's config and weights (inference-only unless `options.grads` is true). */
export function loadModel(dir: string, options: Omit<ModelOptions, 'seed'> = {}): GptOssModel {
  const loaded = loadCheckpoint(dir);
  const model = new GptOssModel(loaded.config, { grads: false, ...options });
  try {
    loadWeightsInto(model, loaded.params);
  } catch (error) {
    model.dispose();
    throw error;
  }
  return model;
}
