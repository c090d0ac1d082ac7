/**
 * Export of a gpt-oss model (HF tensor names, `paramShapes(config)`) to GGUF for llama.cpp's `gpt-oss` architecture
 * (LLM_ARCH_OPENAI_MOE). Tensor mapping, with row-major shapes (GGUF `ne` is their reverse):
 *   model.embed_tokens.weight [V, C]                 → token_embd.weight
 *   model.norm.weight / lm_head.weight               → output_norm.weight / output.weight
 *   layers.N.input_layernorm / post_attention_layernorm → blk.N.attn_norm / blk.N.post_attention_norm
 *   self_attn.{q,k,v,o}_proj.{weight,bias}           → blk.N.attn_{q,k,v,output}.{weight,bias}
 *   self_attn.sinks [Hq]                             → blk.N.attn_sinks.weight
 *   mlp.router.{weight,bias}                         → blk.N.ffn_gate_inp.{weight,bias}
 *   mlp.experts.gate_up_proj [E, C, 2I]              → transposed to [E, 2I, C], even rows → blk.N.ffn_gate_exps.weight
 *                                                      [E, I, C], odd rows → blk.N.ffn_up_exps.weight
 *   mlp.experts.gate_up_proj_bias [E, 2I]            → even/odd columns → ffn_gate_exps.bias / ffn_up_exps.bias [E, I]
 *   mlp.experts.down_proj [E, I, C]                  → transposed [E, C, I] → blk.N.ffn_down_exps.weight
 *   mlp.experts.down_proj_bias [E, C]                → blk.N.ffn_down_exps.bias
 * The dense variant is written as one expert with a zero router (top-1 of one expert has weight 1: the same model);
 * a config without attention biases gets zero biases (llama.cpp's loader requires them).
 *
 * What GGUF cannot say: llama.cpp always rounds YaRN's correction range to whole dimensions (HF's
 * `rope_scaling.truncate: true`) and hard-codes the SwiGLU clamp at 7. A config that differs would run in llama.cpp as
 * another model, so it is refused unless `allowYarnTruncate` accepts the rounded RoPE (then with a warning).
 */
import type { GptOssConfig } from '../config.ts';
import { paramShapes } from '../params.ts';
import type { BpeModel } from '../../llm/bpe-model.ts';
import { CheckpointError } from './errors.ts';
import type { GgufValue } from './gguf.ts';
import { writeGguf, type GgufLayout, type GgufTensorToWrite } from './gguf-writer.ts';
import { bpeTokenizerMetadata, type GgufTokenizerOptions } from './gguf-tokenizer.ts';
import { checkAgainstConfig, type ParamLike } from './hf.ts';
import { transposeLast2 } from './tensors.ts';
import { toFloat32 } from './dtypes.ts';

export const GGUF_ARCH = 'gpt-oss';
const FILE_TYPE = { F32: 0, F16: 1 } as const;

export interface GgufExportOptions {
  /** Storage of matrices (2-D and up, except the router); norms, biases, sinks and the router stay F32. */
  type?: 'F32' | 'F16';
  name?: string;
  tokenizer?: BpeModel;
  tokenizerOptions?: GgufTokenizerOptions;
  alignment?: number;
  /**
   * Write a config with `rope_scaling.truncate: false` anyway. llama.cpp rounds the YaRN correction range, so it then
   * runs a slightly different model: its log-probs drift from this checkpoint's as the position grows.
   */
  allowYarnTruncate?: boolean;
}

/** What a GGUF file written for this config would run differently in llama.cpp; refused unless allowed. */
function checkExpressible(config: GptOssConfig, options: Pick<GgufExportOptions, 'allowYarnTruncate'>, warnings: string[]): void {
  if (config.swiglu_limit !== 7) {
    throw new CheckpointError('BAD_ARGUMENT', `swiglu_limit is ${config.swiglu_limit}, but llama.cpp's gpt-oss clamps SwiGLU at 7 and GGUF has no key for another limit; the file would run a different model`);
  }
  const y = config.rope_scaling;
  if (y && !y.truncate) {
    const consequence = 'llama.cpp always rounds the YaRN correction range to whole dimensions (truncate: true) and GGUF has no key for truncate: false, '
      + 'so llama.cpp would run a slightly different model whose log-probs drift further from this checkpoint\'s as the position grows';
    if (!options.allowYarnTruncate) {
      throw new CheckpointError('BAD_ARGUMENT', `this config says rope_scaling.truncate: false, but ${consequence}. Pass --allow-yarn-truncate (allowYarnTruncate) to write it anyway, or use a model trained with truncate: true (the tiny presets are)`);
    }
    warnings.push(`rope_scaling.truncate is false: ${consequence}`);
  }
}

/**
 * The `gpt-oss.*` hyperparameter keys llama.cpp reads, plus `general.*`. Throws for what llama.cpp would run
 * differently (see the file comment); what was accepted anyway is pushed onto `warnings`.
 */
export function ggufModelMetadata(config: GptOssConfig, options: Pick<GgufExportOptions, 'type' | 'name' | 'allowYarnTruncate'> = {}, warnings: string[] = []): Map<string, GgufValue> {
  checkExpressible(config, options, warnings);
  const a = GGUF_ARCH;
  const u32 = (value: number): GgufValue => ({ type: 'u32', value });
  const f32 = (value: number): GgufValue => ({ type: 'f32', value });
  const experts = config.mlp === 'moe' ? config.num_local_experts : 1;
  const used = config.mlp === 'moe' ? config.num_experts_per_tok : 1;
  const kv = new Map<string, GgufValue>([
    ['general.architecture', { type: 'string', value: a }],
    ['general.name', { type: 'string', value: options.name ?? 'longrun gpt-oss' }],
    ['general.file_type', u32(FILE_TYPE[options.type ?? 'F32'])],
    [`${a}.block_count`, u32(config.num_hidden_layers)],
    [`${a}.context_length`, u32(config.max_position_embeddings)],
    [`${a}.embedding_length`, u32(config.hidden_size)],
    [`${a}.feed_forward_length`, u32(config.intermediate_size)],
    [`${a}.expert_feed_forward_length`, u32(config.intermediate_size)],
    [`${a}.attention.head_count`, u32(config.num_attention_heads)],
    [`${a}.attention.head_count_kv`, u32(config.num_key_value_heads)],
    [`${a}.attention.key_length`, u32(config.head_dim)],
    [`${a}.attention.value_length`, u32(config.head_dim)],
    [`${a}.attention.layer_norm_rms_epsilon`, f32(config.rms_norm_eps)],
    [`${a}.attention.sliding_window`, u32(config.sliding_window)],
    [`${a}.rope.freq_base`, f32(config.rope_theta)],
    [`${a}.expert_count`, u32(experts)],
    [`${a}.expert_used_count`, u32(used)],
    [`${a}.vocab_size`, u32(config.vocab_size)],
  ]);
  const y = config.rope_scaling;
  if (y) {
    kv.set(`${a}.rope.scaling.type`, { type: 'string', value: 'yarn' });
    kv.set(`${a}.rope.scaling.factor`, f32(y.factor));
    kv.set(`${a}.rope.scaling.original_context_length`, u32(y.original_max_position_embeddings));
    kv.set(`${a}.rope.scaling.yarn_beta_fast`, f32(y.beta_fast));
    kv.set(`${a}.rope.scaling.yarn_beta_slow`, f32(y.beta_slow));
  }
  const pattern = config.layer_types;
  const standard = pattern.every((t, i) => t === (i % 2 === 0 ? 'sliding_attention' : 'full_attention'));
  if (!standard) {
    throw new CheckpointError('BAD_ARGUMENT', 'llama.cpp\'s gpt-oss loader assumes even layers slide and odd layers are full; this config\'s layer_types differ');
  }
  return kv;
}

/** Pulls even (parity 0) or odd (parity 1) entries of the last axis. */
function deinterleaveLast(data: Float32Array, outer: number, width: number, parity: 0 | 1): Float32Array {
  const half = width / 2;
  const out = new Float32Array(outer * half);
  for (let r = 0; r < outer; r++) {
    for (let j = 0; j < half; j++) out[r * half + j] = data[r * width + 2 * j + parity];
  }
  return out;
}

/** The GGUF tensors for a model, in llama.cpp order; data is produced lazily, one tensor at a time. */
export function ggufTensors(config: GptOssConfig, params: ReadonlyMap<string, ParamLike>, type: 'F32' | 'F16' = 'F32'): GgufTensorToWrite[] {
  CheckpointError.throwAll('cannot export to GGUF', checkAgainstConfig(paramShapes(config), new Map([...params].map(([n, p]) => [n, p.shape]))));
  const f32 = (name: string): Float32Array => {
    const p = params.get(name)!;
    if ('dtype' in p) return toFloat32(p.data, p.dtype);
    return p.data();
  };
  const C = config.hidden_size, I = config.intermediate_size, E = config.mlp === 'moe' ? config.num_local_experts : 1;
  const out: GgufTensorToWrite[] = [];
  const matrix = (name: string, shape: number[], data: () => Float32Array): void => { out.push({ name, shape, type, data }); };
  const vector = (name: string, shape: number[], data: () => Float32Array): void => { out.push({ name, shape, type: 'F32', data }); };
  const shapeOf = (name: string): number[] => [...params.get(name)!.shape];

  matrix('token_embd.weight', shapeOf('model.embed_tokens.weight'), () => f32('model.embed_tokens.weight'));
  for (let i = 0; i < config.num_hidden_layers; i++) {
    const p = `model.layers.${i}`, b = `blk.${i}`;
    vector(`${b}.attn_norm.weight`, [C], () => f32(`${p}.input_layernorm.weight`));
    for (const [hf, gg] of [['q_proj', 'attn_q'], ['k_proj', 'attn_k'], ['v_proj', 'attn_v'], ['o_proj', 'attn_output']] as const) {
      matrix(`${b}.${gg}.weight`, shapeOf(`${p}.self_attn.${hf}.weight`), () => f32(`${p}.self_attn.${hf}.weight`));
      const out = shapeOf(`${p}.self_attn.${hf}.weight`)[0];
      if (config.attention_bias) vector(`${b}.${gg}.bias`, [out], () => f32(`${p}.self_attn.${hf}.bias`));
      else vector(`${b}.${gg}.bias`, [out], () => new Float32Array(out));
    }
    vector(`${b}.attn_sinks.weight`, [config.num_attention_heads], () => f32(`${p}.self_attn.sinks`));
    vector(`${b}.post_attention_norm.weight`, [C], () => f32(`${p}.post_attention_layernorm.weight`));

    const moe = config.mlp === 'moe';
    const m = moe ? `${p}.mlp.experts` : `${p}.mlp`;
    vector(`${b}.ffn_gate_inp.weight`, [E, C], () => (moe ? f32(`${p}.mlp.router.weight`) : new Float32Array(E * C)));
    vector(`${b}.ffn_gate_inp.bias`, [E], () => (moe ? f32(`${p}.mlp.router.bias`) : new Float32Array(E)));
    // gate_up [E, C, 2I] (y = x W) → [E, 2I, C] rows (ggml: out × in), then split even (gate) / odd (up) rows.
    const gateUpRows = (): Float32Array => transposeLast2(f32(`${m}.gate_up_proj`), [E, C, 2 * I]);
    matrix(`${b}.ffn_gate_exps.weight`, [E, I, C], () => evenOddRows(gateUpRows(), E, I, C, 0));
    matrix(`${b}.ffn_up_exps.weight`, [E, I, C], () => evenOddRows(gateUpRows(), E, I, C, 1));
    matrix(`${b}.ffn_down_exps.weight`, [E, C, I], () => transposeLast2(f32(`${m}.down_proj`), [E, I, C]));
    vector(`${b}.ffn_gate_exps.bias`, [E, I], () => deinterleaveLast(f32(`${m}.gate_up_proj_bias`), E, 2 * I, 0));
    vector(`${b}.ffn_up_exps.bias`, [E, I], () => deinterleaveLast(f32(`${m}.gate_up_proj_bias`), E, 2 * I, 1));
    vector(`${b}.ffn_down_exps.bias`, [E, C], () => f32(`${m}.down_proj_bias`));
  }
  vector('output_norm.weight', [C], () => f32('model.norm.weight'));
  matrix('output.weight', shapeOf('lm_head.weight'), () => f32('lm_head.weight'));
  return out;
}

/** Rows 2k + parity of each expert's [2I, C] matrix → [E, I, C]. */
function evenOddRows(rows: Float32Array, E: number, I: number, C: number, parity: 0 | 1): Float32Array {
  const out = new Float32Array(E * I * C);
  for (let e = 0; e < E; e++) {
    for (let j = 0; j < I; j++) {
      const src = (e * 2 * I + 2 * j + parity) * C;
      out.set(rows.subarray(src, src + C), (e * I + j) * C);
    }
  }
  return out;
}

/**
 * Writes a GGUF file llama.cpp's gpt-oss loader can read (given a tokenizer; without one the vocab is absent).
 * `warnings` lists what llama.cpp will do differently from this checkpoint (only where an option accepted it).
 */
export function exportGguf(path: string, config: GptOssConfig, params: ReadonlyMap<string, ParamLike>, options: GgufExportOptions = {}): GgufLayout & { warnings: string[] } {
  const warnings: string[] = [];
  const metadata = ggufModelMetadata(config, options, warnings);
  if (options.tokenizer) {
    for (const [k, v] of bpeTokenizerMetadata(options.tokenizer, config.vocab_size, options.tokenizerOptions, warnings)) metadata.set(k, v);
  }
  return { ...writeGguf(path, metadata, ggufTensors(config, params, options.type ?? 'F32'), options.alignment), warnings };
}
