/** Bridges checkpoints and a live `GptOssModel`: save its parameters, build a model from a checkpoint directory. */
import { validateConfig, type GptOssConfigInput } from '../config.ts';
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

/**
 * Config keys a checkpoint may be loaded with changed: they reshape attention (the sliding window's width, which
 * layers slide, the positions RoPE is laid out for) but add, drop or resize no parameter.
 */
export const WEIGHT_FREE_CONFIG_KEYS = ['sliding_window', 'layer_types', 'max_position_embeddings'] as const;
export type WeightFreeConfig = Partial<Pick<GptOssConfigInput, (typeof WEIGHT_FREE_CONFIG_KEYS)[number]>>;

export interface LoadModelOptions extends Omit<ModelOptions, 'seed'> {
  /** Overrides of the checkpoint's config, limited to WEIGHT_FREE_CONFIG_KEYS (e.g. a narrower sliding window). */
  config?: WeightFreeConfig;
}

/** A model with the checkpoint's config and weights (inference-only unless `options.grads` is true). */
export function loadModel(dir: string, options: LoadModelOptions = {}): GptOssModel {
  const { config: overrides, ...modelOptions } = options;
  const loaded = loadCheckpoint(dir);
  let config = loaded.config;
  if (overrides !== undefined) {
    const allowed = new Set<string>(WEIGHT_FREE_CONFIG_KEYS);
    const other = Object.keys(overrides).filter((k) => !allowed.has(k));
    if (other.length > 0) throw new Error(`a checkpoint's config can be overridden only in ${WEIGHT_FREE_CONFIG_KEYS.join(', ')} (keys that change no weight), not ${other.join(', ')}`);
    config = validateConfig({ ...loaded.config, ...overrides });
  }
  const model = new GptOssModel(config, { grads: false, ...modelOptions });
  try {
    loadWeightsInto(model, loaded.params);
  } catch (error) {
    model.dispose();
    throw error;
  }
  return model;
}
