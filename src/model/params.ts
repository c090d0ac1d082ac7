/**
 * Parameter names and shapes. Names are Hugging Face gpt-oss tensor names; orientation follows HF too:
 *   model.embed_tokens.weight                         [V, C]
 *   model.layers.{i}.input_layernorm.weight           [C]
 *   model.layers.{i}.self_attn.q_proj.{weight,bias}   [Hq·d, C], [Hq·d]      (nn.Linear: y = x Wᵀ + b)
 *   model.layers.{i}.self_attn.k_proj / v_proj        [Hkv·d, C], [Hkv·d]
 *   model.layers.{i}.self_attn.o_proj.{weight,bias}   [C, Hq·d], [C]
 *   model.layers.{i}.self_attn.sinks                  [Hq]
 *   model.layers.{i}.post_attention_layernorm.weight  [C]
 *   model.layers.{i}.mlp.router.{weight,bias}         [E, C], [E]
 *   model.layers.{i}.mlp.experts.gate_up_proj         [E, C, 2I]  (y = x W: gate = even columns, up = odd columns)
 *   model.layers.{i}.mlp.experts.gate_up_proj_bias    [E, 2I]
 *   model.layers.{i}.mlp.experts.down_proj            [E, I, C]
 *   model.layers.{i}.mlp.experts.down_proj_bias       [E, C]
 *   model.norm.weight                                 [C]
 *   lm_head.weight                                    [V, C]
 * Our dense option (`mlp: 'dense'`) has no router and one expert without the expert axis:
 *   model.layers.{i}.mlp.gate_up_proj [C, 2I], mlp.gate_up_proj_bias [2I], mlp.down_proj [I, C], mlp.down_proj_bias [C]
 * (same interleaved gate/up columns and the same clamped SwiGLU).
 */
import type { GptOssConfig } from './config.ts';

export type ParamKind = 'weight' | 'bias' | 'norm' | 'sinks' | 'embedding';

export interface ParamSpec {
  name: string;
  shape: number[];
  kind: ParamKind;
  /** Expert tensors: only k of E experts run per token (for active-parameter counts). */
  expert?: boolean;
}

export const layerPrefix = (i: number): string => `model.layers.${i}`;

/** Every parameter of the model, in a stable order (embedding, layers, final norm, head). */
export function paramSpecs(c: GptOssConfig): ParamSpec[] {
  const C = c.hidden_size, d = c.head_dim, Hq = c.num_attention_heads, Hkv = c.num_key_value_heads;
  const E = c.num_local_experts, I = c.intermediate_size, V = c.vocab_size;
  const specs: ParamSpec[] = [{ name: 'model.embed_tokens.weight', shape: [V, C], kind: 'embedding' }];
  for (let i = 0; i < c.num_hidden_layers; i++) {
    const p = layerPrefix(i);
    specs.push({ name: `${p}.input_layernorm.weight`, shape: [C], kind: 'norm' });
    for (const [proj, out] of [['q_proj', Hq * d], ['k_proj', Hkv * d], ['v_proj', Hkv * d]] as const) {
      specs.push({ name: `${p}.self_attn.${proj}.weight`, shape: [out, C], kind: 'weight' });
      if (c.attention_bias) specs.push({ name: `${p}.self_attn.${proj}.bias`, shape: [out], kind: 'bias' });
    }
    specs.push({ name: `${p}.self_attn.o_proj.weight`, shape: [C, Hq * d], kind: 'weight' });
    if (c.attention_bias) specs.push({ name: `${p}.self_attn.o_proj.bias`, shape: [C], kind: 'bias' });
    specs.push({ name: `${p}.self_attn.sinks`, shape: [Hq], kind: 'sinks' });
    specs.push({ name: `${p}.post_attention_layernorm.weight`, shape: [C], kind: 'norm' });
    if (c.mlp === 'moe') {
      specs.push({ name: `${p}.mlp.router.weight`, shape: [E, C], kind: 'weight' });
      specs.push({ name: `${p}.mlp.router.bias`, shape: [E], kind: 'bias' });
      specs.push({ name: `${p}.mlp.experts.gate_up_proj`, shape: [E, C, 2 * I], kind: 'weight', expert: true });
      specs.push({ name: `${p}.mlp.experts.gate_up_proj_bias`, shape: [E, 2 * I], kind: 'bias', expert: true });
      specs.push({ name: `${p}.mlp.experts.down_proj`, shape: [E, I, C], kind: 'weight', expert: true });
      specs.push({ name: `${p}.mlp.experts.down_proj_bias`, shape: [E, C], kind: 'bias', expert: true });
    } else {
      specs.push({ name: `${p}.mlp.gate_up_proj`, shape: [C, 2 * I], kind: 'weight' });
      specs.push({ name: `${p}.mlp.gate_up_proj_bias`, shape: [2 * I], kind: 'bias' });
      specs.push({ name: `${p}.mlp.down_proj`, shape: [I, C], kind: 'weight' });
      specs.push({ name: `${p}.mlp.down_proj_bias`, shape: [C], kind: 'bias' });
    }
  }
  specs.push({ name: 'model.norm.weight', shape: [C], kind: 'norm' });
  specs.push({ name: 'lm_head.weight', shape: [V, C], kind: 'weight' });
  return specs;
}

/** name → shape, for checkpoint I/O. */
export function paramShapes(c: GptOssConfig): Map<string, number[]> {
  return new Map(paramSpecs(c).map((s) => [s.name, s.shape]));
}

export interface ParamCount {
  total: number;
  /**
   * Parameters used per token as the model card counts them: everything except the embedding table (a lookup)
   * and the (E − k)/E unused share of the expert tensors.
   */
  active: number;
  embedding: number;
}

export function countParams(c: GptOssConfig): ParamCount {
  let total = 0, active = 0, embedding = 0;
  for (const s of paramSpecs(c)) {
    const n = s.shape.reduce((a, b) => a * b, 1);
    total += n;
    if (s.kind === 'embedding') embedding += n;
    else active += s.expert ? (n / c.num_local_experts) * c.num_experts_per_tok : n;
  }
  return { total, active, embedding };
}
