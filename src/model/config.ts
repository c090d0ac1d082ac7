/**
 * gpt-oss model configuration: the field names of Hugging Face's `config.json` for gpt-oss, validated with zod,
 * plus one extension, `mlp: 'moe' | 'dense'` (dense = one always-on expert with the same clamped SwiGLU; see
 * params.ts for its tensor names). Presets: the published gpt-oss-20b / gpt-oss-120b values and tiny models that
 * train on a laptop CPU.
 */
import { z } from 'zod';

const yarnSchema = z.strictObject({
  rope_type: z.literal('yarn').default('yarn'),
  factor: z.number().positive(),
  beta_fast: z.number().positive(),
  beta_slow: z.number().positive(),
  original_max_position_embeddings: z.number().int().positive(),
  truncate: z.boolean().default(false),
});

const layerType = z.enum(['sliding_attention', 'full_attention']);

const configSchema = z.strictObject({
  model_type: z.literal('gpt_oss').default('gpt_oss'),
  num_hidden_layers: z.number().int().positive(),
  hidden_size: z.number().int().positive(),
  num_attention_heads: z.number().int().positive(),
  num_key_value_heads: z.number().int().positive(),
  head_dim: z.number().int().positive(),
  sliding_window: z.number().int().positive(),
  layer_types: z.array(layerType).optional(),
  num_local_experts: z.number().int().positive(),
  num_experts_per_tok: z.number().int().positive(),
  intermediate_size: z.number().int().positive(),
  vocab_size: z.number().int().positive(),
  rope_theta: z.number().positive(),
  rope_scaling: yarnSchema.nullable().default(null),
  max_position_embeddings: z.number().int().positive(),
  rms_norm_eps: z.number().positive(),
  attention_bias: z.boolean().default(true),
  swiglu_limit: z.number().positive().default(7),
  initializer_range: z.number().positive().default(0.02),
  tie_word_embeddings: z.literal(false).default(false),
  mlp: z.enum(['moe', 'dense']).default('moe'),
});

export type YarnScaling = z.output<typeof yarnSchema>;
export type LayerType = z.output<typeof layerType>;
/** A validated configuration; `layer_types` is always filled in. */
export type GptOssConfig = Omit<z.output<typeof configSchema>, 'layer_types'> & { layer_types: LayerType[] };
export type GptOssConfigInput = z.input<typeof configSchema>;

/** The gpt-oss default: even layers (0, 2, …) slide, odd layers attend to everything before them. */
export function defaultLayerTypes(numLayers: number): LayerType[] {
  return Array.from({ length: numLayers }, (_, i) => (i % 2 === 0 ? 'sliding_attention' : 'full_attention'));
}

/**
 * Parses and checks a configuration object. Unknown keys, wrong types and impossible shapes throw an error that
 * names the offending fields. HF bookkeeping keys (architectures, torch_dtype, …) are accepted and dropped.
 */
export function validateConfig(input: unknown): GptOssConfig {
  const ignored = new Set(['architectures', 'torch_dtype', 'transformers_version', 'use_cache', 'eos_token_id', 'pad_token_id',
    'bos_token_id', 'hidden_act', 'output_router_logits', 'router_aux_loss_coef', 'attention_dropout', 'experts_per_token',
    'num_experts', 'quantization_config', 'dtype', 'initial_context_length']);
  const raw = typeof input === 'object' && input !== null && !Array.isArray(input)
    ? fromRopeParameters(Object.fromEntries(Object.entries(input).filter(([k]) => !ignored.has(k))))
    : input;
  const parsed = configSchema.safeParse(raw);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => {
      if (i.code === 'unrecognized_keys') return `unknown key(s): ${i.keys.join(', ')}`;
      return `${i.path.join('.') || '(root)'}: ${i.message}`;
    });
    throw new Error(`invalid gpt-oss config: ${lines.join('; ')}`);
  }
  const c = parsed.data;
  const problems: string[] = [];
  if (c.num_attention_heads % c.num_key_value_heads !== 0) {
    problems.push(`num_attention_heads (${c.num_attention_heads}) must be divisible by num_key_value_heads (${c.num_key_value_heads})`);
  }
  if (c.head_dim % 2 !== 0) problems.push(`head_dim (${c.head_dim}) must be even (RoPE rotates pairs of halves)`);
  if (c.num_experts_per_tok > c.num_local_experts) {
    problems.push(`num_experts_per_tok (${c.num_experts_per_tok}) exceeds num_local_experts (${c.num_local_experts})`);
  }
  if (c.mlp === 'dense' && (c.num_local_experts !== 1 || c.num_experts_per_tok !== 1)) {
    problems.push(`mlp 'dense' needs num_local_experts = num_experts_per_tok = 1 (got ${c.num_local_experts} / ${c.num_experts_per_tok})`);
  }
  const layerTypes = c.layer_types ?? defaultLayerTypes(c.num_hidden_layers);
  if (layerTypes.length !== c.num_hidden_layers) {
    problems.push(`layer_types has ${layerTypes.length} entries but num_hidden_layers is ${c.num_hidden_layers}`);
  }
  if (c.rope_scaling && c.rope_scaling.original_max_position_embeddings > c.max_position_embeddings) {
    problems.push('rope_scaling.original_max_position_embeddings exceeds max_position_embeddings');
  }
  if (problems.length) throw new Error(`invalid gpt-oss config: ${problems.join('; ')}`);
  return { ...c, layer_types: layerTypes };
}

/**
 * transformers 5 writes RoPE as one `rope_parameters` object (`rope_type`, `rope_theta` and, for YaRN, its four
 * numbers and `truncate`) where 4.x wrote `rope_theta` plus `rope_scaling`. Both spellings mean the same model, so
 * the new one is rewritten into the old; a file that gives both must agree with itself.
 */
function fromRopeParameters(raw: Record<string, unknown>): Record<string, unknown> {
  if (!('rope_parameters' in raw)) return raw;
  const { rope_parameters: rp, ...rest } = raw;
  if (typeof rp !== 'object' || rp === null || Array.isArray(rp)) {
    throw new Error(`invalid gpt-oss config: rope_parameters must be an object, got ${JSON.stringify(rp)}`);
  }
  const { rope_theta: theta, ...scaling } = rp as Record<string, unknown>;
  const problems: string[] = [];
  if (theta !== undefined) {
    if (rest.rope_theta !== undefined && rest.rope_theta !== theta) {
      problems.push(`rope_parameters.rope_theta (${JSON.stringify(theta)}) disagrees with rope_theta (${JSON.stringify(rest.rope_theta)})`);
    }
    rest.rope_theta = theta;
  }
  const type = scaling.rope_type ?? 'default';
  let implied: Record<string, unknown> | null;
  if (type === 'default') {
    const others = Object.keys(scaling).filter((k) => k !== 'rope_type');
    if (others.length) problems.push(`rope_parameters with rope_type 'default' takes no ${others.join(', ')}`);
    implied = null;
  } else if (type === 'yarn') {
    implied = scaling;
  } else {
    problems.push(`rope_parameters.rope_type ${JSON.stringify(type)} is not supported (gpt-oss uses 'yarn' or 'default')`);
    implied = null;
  }
  if (rest.rope_scaling !== undefined && JSON.stringify(canonical(rest.rope_scaling)) !== JSON.stringify(canonical(implied))) {
    problems.push('rope_parameters and rope_scaling are both given and disagree');
  }
  if (problems.length) throw new Error(`invalid gpt-oss config: ${problems.join('; ')}`);
  return { ...rest, rope_scaling: implied };
}

function canonical(value: unknown): unknown {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value;
  const v = value as Record<string, unknown>;
  return Object.fromEntries(Object.keys(v).sort().map((k) => [k, v[k]]));
}

const GPT_OSS_COMMON = {
  hidden_size: 2880,
  num_attention_heads: 64,
  num_key_value_heads: 8,
  head_dim: 64,
  sliding_window: 128,
  num_experts_per_tok: 4,
  intermediate_size: 2880,
  vocab_size: 201088,
  rope_theta: 150000,
  rope_scaling: { rope_type: 'yarn', factor: 32, beta_fast: 32, beta_slow: 1, original_max_position_embeddings: 4096, truncate: false },
  max_position_embeddings: 131072,
  rms_norm_eps: 1e-5,
  attention_bias: true,
  swiglu_limit: 7,
  initializer_range: 0.02,
  tie_word_embeddings: false,
} as const;

/**
 * Tiny models: YaRN with a small factor so the ramp and concentration are exercised, windows that bite. Unlike
 * gpt-oss they say `truncate: true` (correction range rounded to whole dimensions), which is what llama.cpp computes,
 * so their GGUF export is the same model.
 */
function tiny(layers: number, hidden: number, heads: number, kvHeads: number, headDim: number, vocab: number, experts: number,
  topK: number, inter: number, window: number, mlp: 'moe' | 'dense' = 'moe'): GptOssConfigInput {
  return {
    num_hidden_layers: layers, hidden_size: hidden, num_attention_heads: heads, num_key_value_heads: kvHeads, head_dim: headDim,
    sliding_window: window, num_local_experts: experts, num_experts_per_tok: topK, intermediate_size: inter, vocab_size: vocab,
    rope_theta: 10000,
    rope_scaling: { rope_type: 'yarn', factor: 4, beta_fast: 32, beta_slow: 1, original_max_position_embeddings: 512, truncate: true },
    max_position_embeddings: 2048, rms_norm_eps: 1e-5, attention_bias: true, swiglu_limit: 7, initializer_range: 0.02,
    tie_word_embeddings: false, mlp,
  };
}

export const PRESETS = {
  'gpt-oss-20b': { ...GPT_OSS_COMMON, num_hidden_layers: 24, num_local_experts: 32 },
  'gpt-oss-120b': { ...GPT_OSS_COMMON, num_hidden_layers: 36, num_local_experts: 128 },
  'tiny-1m': tiny(2, 96, 4, 2, 24, 2048, 4, 2, 128, 32),
  'tiny-1m-dense': tiny(2, 96, 4, 2, 24, 2048, 1, 1, 256, 32, 'dense'),
  'tiny-4m': tiny(4, 160, 8, 2, 24, 4096, 4, 2, 256, 64),
  'tiny-10m': tiny(6, 256, 8, 2, 32, 8192, 4, 2, 384, 64),
} satisfies Record<string, GptOssConfigInput>;

export type PresetName = keyof typeof PRESETS;

/** A validated preset, optionally with overrides (validated together). */
export function presetConfig(name: PresetName | string, overrides: Partial<GptOssConfigInput> = {}): GptOssConfig {
  const base = (PRESETS as Record<string, GptOssConfigInput>)[name];
  if (!base) throw new Error(`unknown gpt-oss preset '${name}' (known: ${Object.keys(PRESETS).join(', ')})`);
  const merged: Record<string, unknown> = { ...base, ...overrides };
  if (overrides.num_hidden_layers !== undefined && overrides.layer_types === undefined) delete merged.layer_types;
  return validateConfig(merged);
}
