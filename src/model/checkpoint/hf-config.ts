/** `config.json` in Hugging Face's gpt-oss format, to and from our validated `GptOssConfig`. */
import { readFileSync, renameSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { validateConfig, type GptOssConfig } from '../config.ts';
import { CheckpointError } from './errors.ts';

export const CONFIG_FILE = 'config.json';

const TORCH_DTYPE: Record<string, string> = { F32: 'float32', BF16: 'bfloat16', F16: 'float16' };

/**
 * The JSON object HF's `GptOssConfig.from_pretrained` reads. `mlp` is our extension and is written only for the
 * dense variant; `quantization_config` mirrors the released MXFP4 checkpoints.
 */
export function hfConfigJson(config: GptOssConfig, options: { dtype?: string; mxfp4Experts?: boolean } = {}): Record<string, unknown> {
  const { mlp, ...fields } = config;
  const out: Record<string, unknown> = {
    architectures: ['GptOssForCausalLM'],
    ...fields,
    model_type: 'gpt_oss',
    torch_dtype: TORCH_DTYPE[options.dtype ?? 'F32'] ?? 'float32',
  };
  if (mlp !== 'moe') out.mlp = mlp;
  if (options.mxfp4Experts) {
    out.quantization_config = {
      quant_method: 'mxfp4',
      modules_to_not_convert: ['model.layers.*.self_attn', 'model.layers.*.mlp.router', 'model.embed_tokens', 'lm_head'],
    };
  }
  return out;
}

export function writeHfConfig(dir: string, config: GptOssConfig, options: { dtype?: string; mxfp4Experts?: boolean } = {}): void {
  const tmp = join(dir, `${CONFIG_FILE}.partial-${process.pid}`);
  writeFileSync(tmp, JSON.stringify(hfConfigJson(config, options), null, 2) + '\n');
  renameSync(tmp, join(dir, CONFIG_FILE));
}

export function readHfConfig(dir: string): GptOssConfig {
  const path = join(dir, CONFIG_FILE);
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new CheckpointError('BAD_CONFIG', `cannot read ${path}: ${(error as Error).message}`, { cause: error });
  }
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw new CheckpointError('BAD_CONFIG', `${path} is not valid JSON (corrupt or truncated?): ${(error as Error).message}`, { cause: error });
  }
  const modelType = (raw as { model_type?: unknown } | null)?.model_type;
  if (modelType !== undefined && modelType !== 'gpt_oss') {
    throw new CheckpointError('BAD_CONFIG', `${path}: model_type is ${JSON.stringify(modelType)}, only "gpt_oss" is supported`);
  }
  try {
    return validateConfig(withoutReleaseOnlyKeys(raw, path));
  } catch (error) {
    throw new CheckpointError('BAD_CONFIG', `${path}: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * The released gpt-oss config.json files carry `initial_context_length` (the reference implementation's name for
 * YaRN's original context, 4096), which `validateConfig` does not know. Drop it when it agrees with
 * `rope_scaling.original_max_position_embeddings`; refuse it when it does not.
 */
function withoutReleaseOnlyKeys(raw: unknown, path: string): unknown {
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw) || !('initial_context_length' in raw)) return raw;
  const { initial_context_length: initial, ...rest } = raw as Record<string, unknown>;
  type Rope = { original_max_position_embeddings?: unknown } | null | undefined;
  const original = (rest.rope_scaling as Rope)?.original_max_position_embeddings ?? (rest.rope_parameters as Rope)?.original_max_position_embeddings;
  if (original !== undefined && initial !== original) {
    throw new CheckpointError('BAD_CONFIG', `${path}: initial_context_length ${JSON.stringify(initial)} disagrees with rope_scaling.original_max_position_embeddings ${JSON.stringify(original)}`);
  }
  return rest;
}
