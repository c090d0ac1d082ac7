import assert from 'node:assert/strict';
import { readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { gguf } from '@huggingface/gguf';
import { BpeTokenizer } from '../../src/llm/bpe.ts';
import { presetConfig, type GptOssConfig } from '../../src/model/config.ts';
import { paramShapes } from '../../src/model/params.ts';
import {
  byteToUnicode, CheckpointError, choosePretokenizer, exportGguf, f16BitsToF32, f32ToF16Bits, ggufGet, LLAMA_CPP_PRETOKENIZER_PATTERNS,
  readGguf, readGgufTensor, writeGguf, type GgufValue, type NamedTensor,
} from '../../src/model/checkpoint/index.ts';
import { assertPython, runPython, skipWithoutPython } from '../helpers/python.ts';
import { randomF32, tempDir } from './checkpoint-helpers.ts';

const tmp = tempDir('gguf');
after(tmp.cleanup);

function randomParams(c: GptOssConfig, seed: number): Map<string, NamedTensor> {
  let s = seed;
  return new Map([...paramShapes(c)].map(([name, shape]) => [name, { dtype: 'F32', shape, data: randomF32(shape.reduce((a, b) => a * b, 1), s++, 0.1) }]));
}

const sampleMetadata = (): Map<string, GgufValue> => new Map<string, GgufValue>([
  ['general.architecture', { type: 'string', value: 'test' }],
  ['k.u8', { type: 'u8', value: 200 }],
  ['k.i8', { type: 'i8', value: -100 }],
  ['k.u16', { type: 'u16', value: 60000 }],
  ['k.i16', { type: 'i16', value: -30000 }],
  ['k.u32', { type: 'u32', value: 4000000000 }],
  ['k.i32', { type: 'i32', value: -2000000000 }],
  ['k.f32', { type: 'f32', value: 0.5 }],
  ['k.bool', { type: 'bool', value: true }],
  ['k.string', { type: 'string', value: 'héllo ✓' }],
  ['k.u64', { type: 'u64', value: 2n ** 60n }],
  ['k.i64', { type: 'i64', value: -5 }],
  ['k.f64', { type: 'f64', value: Math.PI }],
  ['k.strings', { type: 'array', itemType: 'string', values: ['a', '', 'ßç'] }],
  ['k.ints', { type: 'array', itemType: 'i32', values: [1, -2, 3] }],
  ['k.empty', { type: 'array', itemType: 'f32', values: [] }],
]);

describe('GGUF format', () => {
  it('round-trips metadata of every value type and F32/F16 tensor data, with aligned offsets', () => {
    const path = join(tmp.dir, 'basic.gguf');
    const a = randomF32(3 * 5, 1), b = randomF32(7, 2), c = randomF32(2 * 3 * 4, 3);
    const layout = writeGguf(path, sampleMetadata(), [
      { name: 'a', shape: [3, 5], type: 'F32', data: a },
      { name: 'b', shape: [7], type: 'F16', data: () => b },
      { name: 'c', shape: [2, 3, 4], type: 'F32', data: c },
    ]);
    const file = readGguf(path);
    assert.equal(file.version, 3);
    assert.equal(file.alignment, 32);
    assert.equal(file.dataStart % 32, 0);
    assert.equal(file.dataStart, layout.dataStart);
    assert.equal(statSync(path).size, layout.fileSize);
    for (const [key, v] of sampleMetadata()) assert.deepEqual(file.metadata.get(key), v, key);
    assert.deepEqual(file.tensors.map((t) => [t.name, t.ne, t.shape, t.type]), [
      ['a', [5, 3], [3, 5], 'F32'], ['b', [7], [7], 'F16'], ['c', [4, 3, 2], [2, 3, 4], 'F32'],
    ]);
    for (const t of file.tensors) assert.equal(t.offset % 32, 0, t.name);
    assert.deepEqual(readGgufTensor(file, 'a'), a);
    assert.deepEqual(readGgufTensor(file, 'b'), b.map((v) => f16BitsToF32(f32ToF16Bits(v))));
    assert.deepEqual(readGgufTensor(file, 'c'), c);
  });

  it('honours a custom alignment through general.alignment', () => {
    const path = join(tmp.dir, 'align.gguf');
    writeGguf(path, new Map(), [{ name: 'x', shape: [3], type: 'F32', data: Float32Array.of(1, 2, 3) }, { name: 'y', shape: [1], type: 'F32', data: Float32Array.of(4) }], 256);
    const file = readGguf(path);
    assert.deepEqual(file.metadata.get('general.alignment'), { type: 'u32', value: 256 });
    assert.equal(file.dataStart % 256, 0);
    assert.deepEqual(file.tensors.map((t) => t.offset), [0, 256]);
    assert.deepEqual(readGgufTensor(file, 'y'), Float32Array.of(4));
    assert.throws(() => writeGguf(path, new Map(), [], 48), /power of two/);
  });

  it('rejects bad magic, wrong version, truncation and out-of-range values', () => {
    const good = join(tmp.dir, 'good.gguf');
    writeGguf(good, sampleMetadata(), [{ name: 'a', shape: [64], type: 'F32', data: new Float32Array(64) }]);
    const bytes = readFileSync(good);
    const variant = (name: string, edit: (b: Buffer) => void): string => {
      const copy = Buffer.from(bytes);
      edit(copy);
      const p = join(tmp.dir, name);
      writeFileSync(p, copy);
      return p;
    };
    const code = (p: string, c: string, re: RegExp): void => assert.throws(() => readGguf(p), (e: unknown) => e instanceof CheckpointError && e.code === c && re.test(e.message));
    code(variant('magic.gguf', (b) => b.write('GGML', 0)), 'BAD_GGUF', /bad magic/);
    code(variant('version.gguf', (b) => b.writeUInt32LE(1, 4)), 'BAD_GGUF', /version 1/);
    const cut = join(tmp.dir, 'cut.gguf');
    writeFileSync(cut, bytes);
    truncateSync(cut, bytes.length - 10);
    code(cut, 'TRUNCATED', /'a'/);
    const header = join(tmp.dir, 'cut-header.gguf');
    writeFileSync(header, bytes.subarray(0, 100));
    code(header, 'TRUNCATED', /end of file|remain/);
    assert.throws(() => writeGguf(join(tmp.dir, 'bad.gguf'), new Map([['x', { type: 'u8', value: 300 }]]), []), /not a valid u8/);
  });
});

describe('GGUF export of gpt-oss', () => {
  const corpus = ['the quick brown fox jumps over the lazy dog. ', 'hello world, hello tokens! 123 4567 ', 'über café naïve — ok'].join('\n').repeat(20);
  const tokenizer = BpeTokenizer.train(corpus, { vocabSize: 300, pattern: LLAMA_CPP_PRETOKENIZER_PATTERNS['gpt-2'] });
  const config = presetConfig('tiny-1m', { vocab_size: tokenizer.vocabSize });
  const params = randomParams(config, 10);
  const path = join(tmp.dir, 'model.gguf');
  exportGguf(path, config, params, { tokenizer: tokenizer.model, name: 'tiny' });
  const file = readGguf(path);
  const C = config.hidden_size, I = config.intermediate_size, E = config.num_local_experts, V = config.vocab_size;

  it('writes llama.cpp\'s gpt-oss hyperparameter keys', () => {
    const want: Record<string, unknown> = {
      'general.architecture': 'gpt-oss', 'general.name': 'tiny', 'general.file_type': 0,
      'gpt-oss.block_count': 2, 'gpt-oss.context_length': 2048, 'gpt-oss.embedding_length': 96, 'gpt-oss.feed_forward_length': 128,
      'gpt-oss.expert_feed_forward_length': 128, 'gpt-oss.attention.head_count': 4, 'gpt-oss.attention.head_count_kv': 2,
      'gpt-oss.attention.key_length': 24, 'gpt-oss.attention.value_length': 24, 'gpt-oss.attention.sliding_window': 32,
      'gpt-oss.rope.freq_base': 10000, 'gpt-oss.expert_count': 4, 'gpt-oss.expert_used_count': 2, 'gpt-oss.rope.scaling.type': 'yarn',
      'gpt-oss.rope.scaling.factor': 4, 'gpt-oss.rope.scaling.original_context_length': 512,
    };
    for (const [k, v] of Object.entries(want)) assert.equal(ggufGet(file, k), v, k);
    assert.equal(Math.fround(ggufGet(file, 'gpt-oss.attention.layer_norm_rms_epsilon') as number), Math.fround(1e-5));
    assert.equal(file.metadata.get('gpt-oss.block_count')!.type, 'u32');
  });

  it('uses llama.cpp\'s gpt-oss tensor names and ggml shapes', () => {
    const byName = new Map(file.tensors.map((t) => [t.name, t]));
    const expect = (name: string, ne: number[]): void => assert.deepEqual(byName.get(name)?.ne, ne, name);
    expect('token_embd.weight', [C, V]);
    expect('output.weight', [C, V]);
    expect('output_norm.weight', [C]);
    for (let i = 0; i < 2; i++) {
      expect(`blk.${i}.attn_norm.weight`, [C]);
      expect(`blk.${i}.post_attention_norm.weight`, [C]);
      expect(`blk.${i}.attn_q.weight`, [C, 4 * 24]);
      expect(`blk.${i}.attn_q.bias`, [4 * 24]);
      expect(`blk.${i}.attn_k.weight`, [C, 2 * 24]);
      expect(`blk.${i}.attn_v.bias`, [2 * 24]);
      expect(`blk.${i}.attn_output.weight`, [4 * 24, C]);
      expect(`blk.${i}.attn_output.bias`, [C]);
      expect(`blk.${i}.attn_sinks.weight`, [4]);
      expect(`blk.${i}.ffn_gate_inp.weight`, [C, E]);
      expect(`blk.${i}.ffn_gate_inp.bias`, [E]);
      expect(`blk.${i}.ffn_gate_exps.weight`, [C, I, E]);
      expect(`blk.${i}.ffn_up_exps.weight`, [C, I, E]);
      expect(`blk.${i}.ffn_down_exps.weight`, [I, C, E]);
      expect(`blk.${i}.ffn_gate_exps.bias`, [I, E]);
      expect(`blk.${i}.ffn_up_exps.bias`, [I, E]);
      expect(`blk.${i}.ffn_down_exps.bias`, [C, E]);
    }
    assert.equal(file.tensors.length, 3 + 2 * 19);
    for (const t of file.tensors) assert.equal(t.offset % 32, 0, t.name);
  });

  it('de-interleaves gate/up and transposes expert matrices', () => {
    const gateUp = params.get('model.layers.1.mlp.experts.gate_up_proj')!.data as Float32Array; // [E, C, 2I]
    const gateUpBias = params.get('model.layers.1.mlp.experts.gate_up_proj_bias')!.data as Float32Array; // [E, 2I]
    const down = params.get('model.layers.1.mlp.experts.down_proj')!.data as Float32Array; // [E, I, C]
    const gate = readGgufTensor(file, 'blk.1.ffn_gate_exps.weight'), up = readGgufTensor(file, 'blk.1.ffn_up_exps.weight'); // [E, I, C]
    const downG = readGgufTensor(file, 'blk.1.ffn_down_exps.weight'); // [E, C, I]
    const gateB = readGgufTensor(file, 'blk.1.ffn_gate_exps.bias'), upB = readGgufTensor(file, 'blk.1.ffn_up_exps.bias'); // [E, I]
    for (let e = 0; e < E; e++) {
      for (let j = 0; j < I; j++) {
        for (let c = 0; c < C; c += 7) {
          assert.equal(gate[(e * I + j) * C + c], gateUp[(e * C + c) * 2 * I + 2 * j]);
          assert.equal(up[(e * I + j) * C + c], gateUp[(e * C + c) * 2 * I + 2 * j + 1]);
          assert.equal(downG[(e * C + c) * I + j], down[(e * I + j) * C + c]);
        }
        assert.equal(gateB[e * I + j], gateUpBias[e * 2 * I + 2 * j]);
        assert.equal(upB[e * I + j], gateUpBias[e * 2 * I + 2 * j + 1]);
      }
    }
    assert.deepEqual(readGgufTensor(file, 'token_embd.weight'), params.get('model.embed_tokens.weight')!.data);
    assert.deepEqual(readGgufTensor(file, 'blk.0.attn_sinks.weight'), params.get('model.layers.0.self_attn.sinks')!.data);
  });

  it('writes the BPE tokenizer as llama.cpp gpt2-style vocab and merges', () => {
    const tokens = ggufGet(file, 'tokenizer.ggml.tokens') as string[];
    const types = ggufGet(file, 'tokenizer.ggml.token_type') as number[];
    const merges = ggufGet(file, 'tokenizer.ggml.merges') as string[];
    assert.equal(ggufGet(file, 'tokenizer.ggml.model'), 'gpt2');
    assert.equal(ggufGet(file, 'tokenizer.ggml.pre'), 'gpt-2');
    assert.equal(tokens.length, V);
    assert.equal(tokens[0x20], 'Ġ');
    assert.equal(tokens[0x41], 'A');
    assert.equal(tokens[0x0a], 'Ċ');
    assert.equal(new Set(byteToUnicode()).size, 256);
    const unmap = new Map(byteToUnicode().map((ch, b) => [ch, b]));
    for (let id = 0; id < 256 + tokenizer.model.merges.length; id++) {
      const bytes = Uint8Array.from([...tokens[id]].map((ch) => unmap.get(ch)!));
      assert.deepEqual(bytes, tokenizer.tokenBytes(id), `token ${id}`);
      assert.equal(types[id], 1);
    }
    assert.equal(merges.length, tokenizer.model.merges.length);
    tokenizer.model.merges.forEach(([a, b], i) => assert.equal(merges[i], `${tokens[a]} ${tokens[b]}`));
    for (const [name, id] of tokenizer.specialTokens) { assert.equal(tokens[id], name); assert.equal(types[id], 3); }
    assert.equal(ggufGet(file, 'tokenizer.ggml.eos_token_id'), tokenizer.eosIds[0]);
  });

  it('is parsed identically by an independent reader (@huggingface/gguf)', async () => {
    const parsed = await gguf(path, { allowLocalFile: true });
    assert.equal(parsed.metadata['general.architecture'], 'gpt-oss');
    assert.equal(parsed.metadata['gpt-oss.expert_count' as keyof typeof parsed.metadata], 4);
    assert.equal(Number(parsed.tensorDataOffset), file.dataStart);
    assert.equal(parsed.tensorInfos.length, file.tensors.length);
    parsed.tensorInfos.forEach((info, i) => {
      const ours = file.tensors[i];
      assert.equal(info.name, ours.name);
      assert.deepEqual(info.shape.map(Number), ours.ne);
      assert.equal(info.dtype, ours.typeId);
      assert.equal(Number(info.offset), ours.offset);
    });
    assert.deepEqual((parsed.metadata['tokenizer.ggml.tokens' as keyof typeof parsed.metadata] as unknown as string[]).slice(0, 300), (ggufGet(file, 'tokenizer.ggml.tokens') as string[]).slice(0, 300));
  });

  it('exports F16 matrices while norms, biases, sinks and the router stay F32', () => {
    const p16 = join(tmp.dir, 'model-f16.gguf');
    exportGguf(p16, config, params, { type: 'F16' });
    const f = readGguf(p16);
    const typeOf = (n: string): string | undefined => f.tensors.find((t) => t.name === n)?.type;
    assert.equal(ggufGet(f, 'general.file_type'), 1);
    assert.equal(typeOf('blk.0.attn_q.weight'), 'F16');
    assert.equal(typeOf('blk.0.ffn_gate_exps.weight'), 'F16');
    assert.equal(typeOf('blk.0.attn_q.bias'), 'F32');
    assert.equal(typeOf('blk.0.attn_sinks.weight'), 'F32');
    assert.equal(typeOf('blk.0.ffn_gate_inp.weight'), 'F32');
    assert.equal(f.metadata.has('tokenizer.ggml.tokens'), false);
    const q = readGgufTensor(f, 'blk.0.attn_q.weight');
    const want = (params.get('model.layers.0.self_attn.q_proj.weight')!.data as Float32Array).map((v) => f16BitsToF32(f32ToF16Bits(v)));
    assert.deepEqual(q, want);
  });

  it('exports the dense variant as a single always-chosen expert', () => {
    const dense = presetConfig('tiny-1m-dense', { vocab_size: 40 });
    const dp = randomParams(dense, 20);
    const p = join(tmp.dir, 'dense.gguf');
    exportGguf(p, dense, dp);
    const f = readGguf(p);
    assert.equal(ggufGet(f, 'gpt-oss.expert_count'), 1);
    assert.equal(ggufGet(f, 'gpt-oss.expert_used_count'), 1);
    assert.deepEqual(f.tensors.find((t) => t.name === 'blk.0.ffn_gate_exps.weight')!.ne, [96, 256, 1]);
    assert.ok(readGgufTensor(f, 'blk.0.ffn_gate_inp.weight').every((v) => v === 0));
    assert.deepEqual(readGgufTensor(f, 'blk.0.ffn_down_exps.bias'), dp.get('model.layers.0.mlp.down_proj_bias')!.data);
  });

  it('names the llama.cpp pre-tokenizer from the tokenizer pattern, and refuses a pattern llama.cpp does not reproduce', () => {
    assert.deepEqual(choosePretokenizer(LLAMA_CPP_PRETOKENIZER_PATTERNS.starcoder), { pre: 'starcoder' });
    const ours = BpeTokenizer.train(corpus, { vocabSize: 300 }); // the default pattern: digits grouped by three
    const x = join(tmp.dir, 'x.gguf');
    assert.throws(() => exportGguf(x, config, params, { tokenizer: ours.model }), (e: unknown) =>
      e instanceof CheckpointError && /nearest pre-tokenizer, 'gpt-2'/.test(e.message) && /digit runs longer than three/.test(e.message) && /--gguf-pre gpt-2/.test(e.message));
    const forced = exportGguf(x, config, params, { tokenizer: ours.model, tokenizerOptions: { pre: 'gpt-2' } });
    assert.equal(ggufGet(readGguf(x), 'tokenizer.ggml.pre'), 'gpt-2');
    assert.equal(forced.warnings.length, 1);
    assert.match(forced.warnings[0], /does not split text exactly like this tokenizer: it keeps digit runs/);
    assert.deepEqual(exportGguf(x, config, params, { tokenizer: tokenizer.model }).warnings, []);
    assert.throws(() => exportGguf(x, config, params, { tokenizer: tokenizer.model, tokenizerOptions: { pre: 'gpt 2; rm' } }), /must be a llama.cpp pre-tokenizer name/);
  });

  it('refuses what llama.cpp would run as another model: rope_scaling.truncate false (unless allowed), another SwiGLU limit', () => {
    const x = join(tmp.dir, 'x.gguf');
    const untruncated = presetConfig('tiny-1m', { vocab_size: tokenizer.vocabSize, rope_scaling: { ...config.rope_scaling!, truncate: false } });
    assert.throws(() => exportGguf(x, untruncated, params), (e: unknown) => e instanceof CheckpointError && /truncate: false/.test(e.message) && /--allow-yarn-truncate/.test(e.message) && /drift/.test(e.message));
    const written = exportGguf(x, untruncated, params, { allowYarnTruncate: true });
    assert.equal(written.warnings.length, 1);
    assert.match(written.warnings[0], /rope_scaling.truncate is false: llama.cpp always rounds/);
    assert.throws(() => exportGguf(x, presetConfig('tiny-1m', { vocab_size: tokenizer.vocabSize, swiglu_limit: 5 }), params), /swiglu_limit is 5/);
    assert.throws(() => exportGguf(x, presetConfig('gpt-oss-20b'), new Map()), /truncate: false/);
  });

  it('writes zero attention biases for a config without them (llama.cpp requires the tensors)', () => {
    const nb = presetConfig('tiny-1m', { vocab_size: 40, attention_bias: false });
    const p = join(tmp.dir, 'nobias.gguf');
    exportGguf(p, nb, randomParams(nb, 30));
    const f = readGguf(p);
    assert.deepEqual(f.tensors.find((t) => t.name === 'blk.1.attn_output.bias')!.ne, [96]);
    assert.ok(readGgufTensor(f, 'blk.1.attn_k.bias').every((v) => v === 0));
    assert.equal(readGgufTensor(f, 'blk.1.attn_k.bias').length, 2 * 24);
  });

  it('refuses a tokenizer whose vocabulary size differs from the model', () => {
    const other = presetConfig('tiny-1m', { vocab_size: tokenizer.vocabSize + 1 });
    assert.throws(() => exportGguf(join(tmp.dir, 'x.gguf'), other, randomParams(other, 1), { tokenizer: tokenizer.model }), /must match/);
  });

  it('is read by llama.cpp\'s own gguf-py reader', { skip: skipWithoutPython(['gguf']) }, () => {
    assertPython(['gguf']);
    const script = [
      'import sys, json', 'from gguf import GGUFReader', 'r = GGUFReader(sys.argv[1])',
      'print(json.dumps({"arch": bytes(r.fields["general.architecture"].parts[-1]).decode(), "alignment": r.alignment, "data_offset": r.data_offset,',
      ' "tensors": [[t.name, [int(x) for x in t.shape], int(t.tensor_type), int(t.data_offset)] for t in r.tensors]}))',
    ].join('\n');
    const py = JSON.parse(runPython(script, path)) as { arch: string; alignment: number; data_offset: number; tensors: [string, number[], number, number][] };
    assert.equal(py.arch, 'gpt-oss');
    assert.equal(py.data_offset, file.dataStart);
    assert.deepEqual(py.tensors.map((t) => [t[0], t[1], t[2], t[3] - file.dataStart]), file.tensors.map((t) => [t.name, t.ne, t.typeId, t.offset]));
  });
});
