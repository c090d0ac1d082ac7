import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, rmSync, truncateSync, statSync, writeFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { presetConfig, type GptOssConfig } from '../../src/model/config.ts';
import { paramShapes } from '../../src/model/params.ts';
import {
  bf16BitsToF32, CheckpointError, f32ToBf16Bits, loadCheckpoint, readHfConfig, readSafetensors, saveCheckpoint, writeSafetensors, type NamedTensor,
} from '../../src/model/checkpoint/index.ts';
import { randomF32, rng, tempDir } from './checkpoint-helpers.ts';

const tmp = tempDir('hf');
after(tmp.cleanup);

const config = presetConfig('tiny-1m', { vocab_size: 64 });

function randomParams(c: GptOssConfig, seed: number): Map<string, NamedTensor> {
  let s = seed;
  return new Map([...paramShapes(c)].map(([name, shape]) => [name, { dtype: 'F32', shape, data: randomF32(shape.reduce((a, b) => a * b, 1), s++, 0.1) }]));
}

function expectProblem(fn: () => unknown, code: string, pattern: RegExp): void {
  assert.throws(fn, (e: unknown) => {
    assert.ok(e instanceof CheckpointError, String(e));
    assert.ok(e.problems.some((p) => p.code === code && pattern.test(p.message)), `wanted ${code} ${pattern}, got:\n${e.message}`);
    return true;
  });
}

/** E2M1 value of a nibble, written out from its bits. */
function e2m1(nibble: number): number {
  const sign = nibble & 8 ? -1 : 1;
  const e = (nibble >> 1) & 3, m = nibble & 1;
  return sign * (e === 0 ? m * 0.5 : 2 ** (e - 1) * (1 + m / 2));
}

describe('HF checkpoint save/load', () => {
  it('round-trips a tiny config and its F32 parameters exactly', () => {
    const dir = join(tmp.dir, 'f32');
    const params = randomParams(config, 1);
    const { files } = saveCheckpoint(dir, config, params);
    assert.deepEqual(files, ['model.safetensors']);
    const json = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8'));
    assert.equal(json.model_type, 'gpt_oss');
    assert.deepEqual(json.architectures, ['GptOssForCausalLM']);
    assert.equal(json.torch_dtype, 'float32');
    assert.equal(json.hidden_size, 96);
    assert.equal(json.mlp, undefined);
    const loaded = loadCheckpoint(dir);
    assert.deepEqual(loaded.config, config);
    assert.deepEqual([...loaded.params.keys()], [...paramShapes(config).keys()]);
    for (const [name, t] of params) {
      assert.deepEqual(loaded.params.get(name)!.data, t.data, name);
      assert.equal(loaded.stored.get(name), 'F32');
    }
  });

  it('stores BF16 on request and loads the rounded values', () => {
    const dir = join(tmp.dir, 'bf16');
    const params = randomParams(config, 2);
    saveCheckpoint(dir, config, params, { dtype: 'BF16' });
    assert.equal(JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')).torch_dtype, 'bfloat16');
    const loaded = loadCheckpoint(dir);
    const name = 'model.layers.1.self_attn.q_proj.weight';
    assert.equal(loaded.stored.get(name), 'BF16');
    const want = (params.get(name)!.data as Float32Array).map((v) => bf16BitsToF32(f32ToBf16Bits(v)));
    assert.deepEqual(loaded.params.get(name)!.data, want);
  });

  it('accepts engine-style parameters (shape + data()) and shards on request', () => {
    const dir = join(tmp.dir, 'sharded');
    const params = randomParams(config, 3);
    const engineLike = new Map([...params].map(([n, t]) => [n, { shape: t.shape, data: () => t.data as Float32Array }]));
    const { files } = saveCheckpoint(dir, config, engineLike, { maxShardBytes: 300_000 });
    assert.ok(files.length > 2 && files.includes('model.safetensors.index.json'), files.join());
    const loaded = loadCheckpoint(dir);
    for (const [name, t] of params) assert.deepEqual(loaded.params.get(name)!.data, t.data, name);
  });

  it('round-trips the dense variant', () => {
    const dense = presetConfig('tiny-1m-dense', { vocab_size: 40 });
    const dir = join(tmp.dir, 'dense');
    const params = randomParams(dense, 4);
    saveCheckpoint(dir, dense, params);
    assert.equal(JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')).mlp, 'dense');
    const loaded = loadCheckpoint(dir);
    assert.equal(loaded.config.mlp, 'dense');
    assert.deepEqual(loaded.params.get('model.layers.0.mlp.gate_up_proj')!.data, params.get('model.layers.0.mlp.gate_up_proj')!.data);
  });
});

describe('config.json', () => {
  it('reads the field set of the released gpt-oss-120b config.json', () => {
    const dir = join(tmp.dir, 'released-config');
    mkdirSync(dir, { recursive: true });
    const released = {
      architectures: ['GptOssForCausalLM'], attention_bias: true, attention_dropout: 0.0, eos_token_id: 200002, experts_per_token: 4,
      head_dim: 64, hidden_act: 'silu', hidden_size: 2880, initial_context_length: 4096, initializer_range: 0.02, intermediate_size: 2880,
      layer_types: Array.from({ length: 36 }, (_, i) => (i % 2 === 0 ? 'sliding_attention' : 'full_attention')), max_position_embeddings: 131072,
      model_type: 'gpt_oss', num_attention_heads: 64, num_experts_per_tok: 4, num_hidden_layers: 36, num_key_value_heads: 8,
      num_local_experts: 128, output_router_logits: false, pad_token_id: 199999,
      quantization_config: { modules_to_not_convert: ['model.layers.*.self_attn', 'model.layers.*.mlp.router', 'model.embed_tokens', 'lm_head'], quant_method: 'mxfp4' },
      rms_norm_eps: 1e-5, rope_scaling: { beta_fast: 32.0, beta_slow: 1.0, factor: 32.0, original_max_position_embeddings: 4096, rope_type: 'yarn', truncate: false },
      rope_theta: 150000, router_aux_loss_coef: 0.9, sliding_window: 128, swiglu_limit: 7.0, tie_word_embeddings: false,
      transformers_version: '4.55.0.dev0', use_cache: true, vocab_size: 201088,
    };
    writeFileSync(join(dir, 'config.json'), JSON.stringify(released));
    assert.deepEqual(readHfConfig(dir), presetConfig('gpt-oss-120b'));
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ ...released, initial_context_length: 8192 }));
    assert.throws(() => readHfConfig(dir), /initial_context_length 8192 disagrees/);
  });
});

describe('MXFP4 expert storage', () => {
  it('writes experts as transposed _blocks/_scales pairs and reads MXFP4-exact values back exactly', () => {
    const dir = join(tmp.dir, 'mxfp4');
    const params = randomParams(config, 5);
    const r = rng(9);
    // Make expert weights MXFP4-exact along the stored (transposed) orientation: each run of 32 consecutive values of
    // the HF parameter's second axis shares one power of two.
    for (const [name, t] of params) {
      if (!/experts\.(gate_up_proj|down_proj)$/.test(name)) continue;
      const [E, A, B] = t.shape;
      const d = t.data as Float32Array;
      for (let e = 0; e < E; e++) for (let b = 0; b < B; b++) for (let g = 0; g < A / 32; g++) {
        const exp = Math.floor(r() * 10) - 8;
        for (let i = 0; i < 32; i++) d[(e * A + g * 32 + i) * B + b] = e2m1(Math.floor(r() * 16)) * 2 ** exp;
      }
    }
    saveCheckpoint(dir, config, params, { mxfp4Experts: true, dtype: 'BF16' });
    const { tensors } = readSafetensors(join(dir, 'model.safetensors'));
    const C = config.hidden_size, I = config.intermediate_size, E = config.num_local_experts;
    assert.deepEqual(tensors.get('model.layers.0.mlp.experts.gate_up_proj_blocks')!.shape, [E, 2 * I, C / 32, 16]);
    assert.deepEqual(tensors.get('model.layers.0.mlp.experts.gate_up_proj_scales')!.shape, [E, 2 * I, C / 32]);
    assert.deepEqual(tensors.get('model.layers.0.mlp.experts.down_proj_blocks')!.shape, [E, C, I / 32, 16]);
    assert.equal(tensors.get('model.layers.0.mlp.experts.down_proj_scales')!.dtype, 'U8');
    assert.ok(!tensors.has('model.layers.0.mlp.experts.gate_up_proj'));
    assert.equal(tensors.get('model.layers.0.mlp.experts.gate_up_proj_bias')!.dtype, 'BF16');
    assert.equal(JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')).quantization_config.quant_method, 'mxfp4');

    const loaded = loadCheckpoint(dir);
    for (const name of ['model.layers.0.mlp.experts.gate_up_proj', 'model.layers.1.mlp.experts.down_proj']) {
      assert.equal(loaded.stored.get(name), 'MXFP4');
      assert.deepEqual(loaded.params.get(name)!.data, params.get(name)!.data, name);
    }
  });

  it('reads a hand-built MXFP4 checkpoint laid out like the released gpt-oss files', () => {
    const dir = join(tmp.dir, 'handmade');
    const params = randomParams(config, 6);
    saveCheckpoint(dir, config, params);
    const { tensors } = readSafetensors(join(dir, 'model.safetensors'));
    const C = config.hidden_size, I = config.intermediate_size, E = config.num_local_experts;
    const r = rng(12);
    const made = new Map<string, { blocks: Uint8Array; scales: Uint8Array; rows: number; cols: number }>();
    for (const [name, rows, cols] of [['model.layers.0.mlp.experts.gate_up_proj', 2 * I, C], ['model.layers.0.mlp.experts.down_proj', C, I]] as const) {
      const blocks = Uint8Array.from({ length: E * rows * (cols / 32) * 16 }, () => Math.floor(r() * 256));
      const scales = Uint8Array.from({ length: E * rows * (cols / 32) }, () => 118 + Math.floor(r() * 12));
      tensors.delete(name);
      tensors.set(`${name}_blocks`, { dtype: 'U8', shape: [E, rows, cols / 32, 16], data: blocks });
      tensors.set(`${name}_scales`, { dtype: 'U8', shape: [E, rows, cols / 32], data: scales });
      made.set(name, { blocks, scales, rows, cols });
    }
    writeSafetensors(join(dir, 'model.safetensors'), tensors);
    const loaded = loadCheckpoint(dir);
    for (const [name, { blocks, scales, rows, cols }] of made) {
      const p = loaded.params.get(name)!;
      assert.deepEqual(p.shape, [E, cols, rows]); // HF orientation is the transpose of the stored rows × cols
      for (let probe = 0; probe < 500; probe++) {
        const e = Math.floor(r() * E), row = Math.floor(r() * rows), col = Math.floor(r() * cols);
        const block = (e * rows + row) * (cols / 32) + Math.floor(col / 32);
        const byte = blocks[block * 16 + Math.floor((col % 32) / 2)];
        const want = e2m1(col % 2 === 0 ? byte & 15 : byte >> 4) * 2 ** (scales[block] - 127);
        assert.equal(p.data[(e * cols + col) * rows + row], want, `${name}[${e}, ${col}, ${row}]`);
      }
    }
  });
});

describe('HF checkpoint validation', () => {
  const fresh = (label: string): { dir: string; tensors: Map<string, NamedTensor> } => {
    const dir = join(tmp.dir, label);
    saveCheckpoint(dir, config, randomParams(config, 7));
    return { dir, tensors: readSafetensors(join(dir, 'model.safetensors')).tensors };
  };
  const rewrite = (dir: string, tensors: Map<string, NamedTensor>): void => writeSafetensors(join(dir, 'model.safetensors'), tensors);

  it('names a missing tensor', () => {
    const { dir, tensors } = fresh('missing');
    tensors.delete('model.layers.1.self_attn.sinks');
    rewrite(dir, tensors);
    expectProblem(() => loadCheckpoint(dir), 'MISSING_TENSOR', /'model\.layers\.1\.self_attn\.sinks' \(expected shape \[4\]\)/);
  });

  it('names an unexpected tensor', () => {
    const { dir, tensors } = fresh('unexpected');
    tensors.set('model.layers.2.self_attn.sinks', { dtype: 'F32', shape: [4], data: new Float32Array(4) });
    rewrite(dir, tensors);
    expectProblem(() => loadCheckpoint(dir), 'UNEXPECTED_TENSOR', /model\.layers\.2\.self_attn\.sinks/);
  });

  it('names a wrong shape and a wrong dtype, all in one error', () => {
    const { dir, tensors } = fresh('shape');
    tensors.set('model.norm.weight', { dtype: 'F32', shape: [95], data: new Float32Array(95) });
    tensors.set('lm_head.weight', { dtype: 'I32', shape: [64, 96], data: new Int32Array(64 * 96) });
    rewrite(dir, tensors);
    expectProblem(() => loadCheckpoint(dir), 'SHAPE_MISMATCH', /'model\.norm\.weight' has shape \[95\], expected \[96\]/);
    expectProblem(() => loadCheckpoint(dir), 'DTYPE_MISMATCH', /'lm_head\.weight' has dtype I32/);
  });

  it('names half an MXFP4 pair and badly shaped blocks', () => {
    const { dir, tensors } = fresh('halfpair');
    tensors.delete('model.layers.0.mlp.experts.down_proj');
    tensors.set('model.layers.0.mlp.experts.down_proj_blocks', { dtype: 'U8', shape: [4, 96, 4, 16], data: new Uint8Array(4 * 96 * 4 * 16) });
    tensors.delete('model.layers.1.mlp.experts.down_proj');
    tensors.set('model.layers.1.mlp.experts.down_proj_blocks', { dtype: 'U8', shape: [4, 96, 2, 16], data: new Uint8Array(4 * 96 * 2 * 16) });
    tensors.set('model.layers.1.mlp.experts.down_proj_scales', { dtype: 'U8', shape: [4, 96, 2], data: new Uint8Array(4 * 96 * 2) });
    rewrite(dir, tensors);
    expectProblem(() => loadCheckpoint(dir), 'MISSING_TENSOR', /'model\.layers\.0\.mlp\.experts\.down_proj_scales'/);
    expectProblem(() => loadCheckpoint(dir), 'SHAPE_MISMATCH', /down_proj_blocks' has shape \[4, 96, 2, 16\], expected \[4, 96, 4, 16\]/);
  });

  it('reports corrupt config.json, truncated weights and a missing weights file clearly', () => {
    const { dir } = fresh('corrupt');
    const weights = join(dir, 'model.safetensors');
    truncateSync(weights, statSync(weights).size - 100);
    assert.throws(() => loadCheckpoint(dir), (e: unknown) => e instanceof CheckpointError && e.code === 'TRUNCATED');
    rmSync(weights);
    assert.throws(() => loadCheckpoint(dir), (e: unknown) => e instanceof CheckpointError && e.code === 'NO_WEIGHTS');
    const cfg = join(dir, 'config.json');
    writeFileSync(cfg, readFileSync(cfg, 'utf8').slice(0, 50));
    assert.throws(() => loadCheckpoint(dir), (e: unknown) => e instanceof CheckpointError && e.code === 'BAD_CONFIG' && /not valid JSON/.test(e.message));
    writeFileSync(cfg, JSON.stringify({ model_type: 'llama' }));
    assert.throws(() => loadCheckpoint(dir), /only "gpt_oss"/);
    writeFileSync(cfg, JSON.stringify({ model_type: 'gpt_oss', hidden_size: 'big' }));
    assert.throws(() => loadCheckpoint(dir), (e: unknown) => e instanceof CheckpointError && e.code === 'BAD_CONFIG' && /hidden_size/.test(e.message));
    rmSync(cfg);
    assert.throws(() => loadCheckpoint(dir), (e: unknown) => e instanceof CheckpointError && e.code === 'BAD_CONFIG' && /cannot read/.test(e.message));
  });

  it('refuses to save parameters that do not match the config, writing nothing', () => {
    const dir = join(tmp.dir, 'refuse');
    const params = randomParams(config, 8);
    params.delete('lm_head.weight');
    expectProblem(() => saveCheckpoint(dir, config, params), 'MISSING_TENSOR', /lm_head\.weight/);
    assert.equal(existsSync(join(dir, 'model.safetensors')), false);
    const dense = presetConfig('tiny-1m-dense', { vocab_size: 40 });
    assert.throws(() => saveCheckpoint(dir, dense, randomParams(dense, 1), { mxfp4Experts: true }), /dense/);
  });
});
