import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PRESETS, presetConfig, validateConfig } from '../../src/model/config.ts';
import { countParams, paramShapes } from '../../src/model/params.ts';

test('gpt-oss-20b and -120b parameter counts match the model card (20.915 B / 3.608 B, 116.829 B / 5.133 B)', () => {
  const a = countParams(presetConfig('gpt-oss-20b'));
  assert.equal((a.total / 1e9).toFixed(3), '20.915');
  assert.equal((a.active / 1e9).toFixed(3), '3.608');
  const b = countParams(presetConfig('gpt-oss-120b'));
  assert.equal((b.total / 1e9).toFixed(3), '116.829');
  assert.equal((b.active / 1e9).toFixed(3), '5.133');
});

test('20b preset has the published values and the alternating sliding/full layer pattern', () => {
  const c = presetConfig('gpt-oss-20b');
  assert.equal(c.num_hidden_layers, 24);
  assert.equal(c.num_local_experts, 32);
  assert.equal(c.vocab_size, 201088);
  assert.deepEqual(c.layer_types.slice(0, 3), ['sliding_attention', 'full_attention', 'sliding_attention']);
  assert.equal(c.layer_types[23], 'full_attention');
  assert.equal(c.rope_scaling?.factor, 32);
  const shapes = paramShapes(c);
  assert.deepEqual(shapes.get('model.layers.0.self_attn.q_proj.weight'), [4096, 2880]);
  assert.deepEqual(shapes.get('model.layers.0.self_attn.k_proj.weight'), [512, 2880]);
  assert.deepEqual(shapes.get('model.layers.0.self_attn.o_proj.weight'), [2880, 4096]);
  assert.deepEqual(shapes.get('model.layers.0.mlp.experts.gate_up_proj'), [32, 2880, 5760]);
  assert.deepEqual(shapes.get('model.layers.0.mlp.experts.down_proj'), [32, 2880, 2880]);
  assert.deepEqual(shapes.get('model.layers.0.mlp.router.weight'), [32, 2880]);
  assert.deepEqual(shapes.get('model.layers.0.self_attn.sinks'), [64]);
  assert.deepEqual(shapes.get('lm_head.weight'), [201088, 2880]);
});

test('tiny presets validate; the dense preset uses the dense tensor names', () => {
  for (const name of Object.keys(PRESETS)) assert.ok(presetConfig(name).num_hidden_layers >= 2);
  const shapes = paramShapes(presetConfig('tiny-1m-dense'));
  assert.ok(shapes.has('model.layers.0.mlp.gate_up_proj'));
  assert.ok(!shapes.has('model.layers.0.mlp.router.weight'));
  const t = countParams(presetConfig('tiny-10m'));
  assert.ok(t.total > 5e6 && t.total < 2e7);
});

test('config validation: unknown keys are named, impossible shapes explained, HF bookkeeping keys accepted', () => {
  const base = { ...PRESETS['tiny-1m'] } as Record<string, unknown>;
  assert.throws(() => validateConfig({ ...base, num_heads: 4, foo: 1 }), /unknown key\(s\): num_heads, foo/);
  assert.throws(() => validateConfig({ ...base, num_attention_heads: 6, num_key_value_heads: 4 }), /divisible by num_key_value_heads/);
  assert.throws(() => validateConfig({ ...base, head_dim: 7 }), /head_dim \(7\) must be even/);
  assert.throws(() => validateConfig({ ...base, num_experts_per_tok: 9 }), /exceeds num_local_experts/);
  assert.throws(() => validateConfig({ ...base, layer_types: ['full_attention'] }), /layer_types has 1 entries/);
  assert.throws(() => validateConfig({ ...base, hidden_size: -3 }), /hidden_size/);
  assert.throws(() => validateConfig({ ...base, tie_word_embeddings: true }), /tie_word_embeddings/);
  assert.throws(() => presetConfig('gpt-oss-7b'), /unknown gpt-oss preset/);
  const c = validateConfig({ ...base, architectures: ['GptOssForCausalLM'], torch_dtype: 'bfloat16' });
  assert.equal(c.hidden_size, 96);
});

test('the published gpt-oss-20b config.json (with its bookkeeping keys) parses to the preset', () => {
  const json = {
    architectures: ['GptOssForCausalLM'], attention_bias: true, attention_dropout: 0.0, eos_token_id: 200002, experts_per_token: 4, head_dim: 64,
    hidden_act: 'silu', hidden_size: 2880, initial_context_length: 4096, initializer_range: 0.02, intermediate_size: 2880,
    layer_types: Array.from({ length: 24 }, (_, i) => (i % 2 === 0 ? 'sliding_attention' : 'full_attention')), max_position_embeddings: 131072,
    model_type: 'gpt_oss', num_attention_heads: 64, num_experts_per_tok: 4, num_hidden_layers: 24, num_key_value_heads: 8, num_local_experts: 32,
    output_router_logits: false, pad_token_id: 199999, quantization_config: { quant_method: 'mxfp4' }, rms_norm_eps: 1e-5,
    rope_scaling: { beta_fast: 32.0, beta_slow: 1.0, factor: 32.0, original_max_position_embeddings: 4096, rope_type: 'yarn', truncate: false },
    rope_theta: 150000, router_aux_loss_coef: 0.9, sliding_window: 128, swiglu_limit: 7.0, tie_word_embeddings: false,
    transformers_version: '4.55.0.dev0', use_cache: true, vocab_size: 201088,
  };
  assert.deepEqual(validateConfig(json), presetConfig('gpt-oss-20b'));
});

test('transformers 5 rope_parameters: the same model as rope_theta + rope_scaling; contradictions and other RoPE types refused', () => {
  const yarn = { rope_type: 'yarn', factor: 32, beta_fast: 32, beta_slow: 1, original_max_position_embeddings: 4096, truncate: false } as const;
  const { rope_theta: theta, rope_scaling: _scaling, ...rest } = PRESETS['gpt-oss-20b'];
  assert.deepEqual(validateConfig({ ...rest, rope_parameters: { ...yarn, rope_theta: theta } }), presetConfig('gpt-oss-20b'));
  // Both spellings at once are fine when they agree (key order aside).
  const both = { ...rest, rope_theta: theta, rope_scaling: { ...yarn }, rope_parameters: { rope_theta: theta, ...yarn } };
  assert.deepEqual(validateConfig(both), presetConfig('gpt-oss-20b'));
  const plain = validateConfig({ ...rest, rope_parameters: { rope_type: 'default', rope_theta: 5e5 } });
  assert.equal(plain.rope_scaling, null);
  assert.equal(plain.rope_theta, 5e5);
  assert.throws(() => validateConfig({ ...rest, rope_theta: 1e4, rope_parameters: { ...yarn, rope_theta: theta } }), /rope_parameters\.rope_theta \(150000\) disagrees with rope_theta \(10000\)/);
  assert.throws(() => validateConfig({ ...rest, rope_parameters: { rope_type: 'linear', factor: 2, rope_theta: theta } }), /rope_type "linear" is not supported/);
  assert.throws(() => validateConfig({ ...rest, rope_scaling: { ...yarn, factor: 8 }, rope_parameters: { ...yarn, rope_theta: theta } }), /both given and disagree/);
  assert.throws(() => validateConfig({ ...rest, rope_parameters: 'yarn' }), /rope_parameters must be an object/);
});
