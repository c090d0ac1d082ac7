import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { REPO_ROOT } from '../helpers/paths.ts';
import { GptOssModel } from '../../src/model/model.ts';
import { presetConfig } from '../../src/model/config.ts';
import { exportCommand, ggufGet, loadCheckpoint, loadModel, logprobsCommand, parseTokenList, readGguf, readGgufTensor } from '../../src/model/checkpoint/index.ts';
import { tempDir } from './checkpoint-helpers.ts';

const tmp = tempDir('model-cli');
after(tmp.cleanup);

const BIN = join(REPO_ROOT, 'bin', 'longrun');
const run = (...args: string[]): string => execFileSync(process.execPath, [BIN, 'model', ...args], { encoding: 'utf8', env: { ...process.env, LONGRUN_THREADS: '1' } });

describe('longrun model CLI', () => {
  const ckpt = join(tmp.dir, 'tiny');
  const tokens = [5, 17, 3, 200, 42];

  it('init writes a checkpoint whose weights are the seeded model\'s', () => {
    const out = run('init', '--preset', 'tiny-1m', '--seed', '7', '--out', ckpt);
    assert.match(out, /wrote .* parameters/);
    assert.ok(existsSync(join(ckpt, 'config.json')) && existsSync(join(ckpt, 'model.safetensors')));
    const loaded = loadCheckpoint(ckpt);
    assert.deepEqual(loaded.config, presetConfig('tiny-1m'));
    const model = new GptOssModel(presetConfig('tiny-1m'), { seed: 7, grads: false, impl: 'reference' });
    try {
      for (const [name, t] of model.parameters()) assert.deepEqual(loaded.params.get(name)!.data, t.data(), name);
    } finally {
      model.dispose();
    }
  });

  it('logprobs prints the full-vocabulary log-softmax per position, equal to the in-process model', () => {
    const out = JSON.parse(run('logprobs', ckpt, '--tokens', tokens.join(','))) as { logprobs: number[][] };
    const V = presetConfig('tiny-1m').vocab_size;
    assert.equal(out.logprobs.length, tokens.length);
    for (const row of out.logprobs) {
      assert.equal(row.length, V);
      const total = row.reduce((s, lp) => s + Math.exp(lp), 0);
      assert.ok(Math.abs(total - 1) < 1e-4, `probabilities sum to ${total}`);
    }
    const model = loadModel(ckpt);
    try {
      const full = model.logprobs({ tokens }, { fullLogprobs: true }).fullLogprobs!;
      const data = full.data();
      for (let i = 0; i < tokens.length; i++) for (let v = 0; v < V; v += 97) assert.ok(Math.abs(out.logprobs[i][v] - data[i * V + v]) < 1e-5);
      full.dispose();
    } finally {
      model.dispose();
    }
  });

  it('widen writes a checkpoint with more heads and the same log-probs; it refuses its own folder and bad head counts', () => {
    const wide = join(tmp.dir, 'tiny-wide');
    writeFileSync(join(ckpt, 'tokenizer.json'), '{"placeholder": true}');
    const out = run('widen', ckpt, '--kv-heads', '4', '--query-heads', '8', '--out', wide);
    assert.match(out, /wrote .*tiny-wide: .* → .* parameters \(model\.safetensors, tokenizer\.json\)/);
    const w = loadCheckpoint(wide);
    assert.equal(w.config.num_key_value_heads, 4);
    assert.equal(w.config.num_attention_heads, 8);
    assert.equal(readFileSync(join(wide, 'tokenizer.json'), 'utf8'), '{"placeholder": true}');
    const a = logprobsCommand(ckpt, tokens), b = logprobsCommand(wide, tokens);
    for (let i = 0; i < tokens.length; i++) for (let v = 0; v < a[i].length; v++) assert.ok(Math.abs(a[i][v] - b[i][v]) < 1e-4);
    const fail = (...args: string[]) => spawnSync(process.execPath, [BIN, 'model', 'widen', ...args], { encoding: 'utf8', env: { ...process.env, LONGRUN_THREADS: '1' } });
    const same = fail(ckpt, '--kv-heads', '4', '--out', ckpt);
    assert.notEqual(same.status, 0);
    assert.match(same.stderr, /--out must be another folder/);
    const bad = fail(ckpt, '--kv-heads', '3', '--out', join(tmp.dir, 'tiny-bad'));
    assert.notEqual(bad.status, 0);
    assert.match(bad.stderr, /multiple of the checkpoint's 2 key\/value heads/);
    assert.ok(!existsSync(join(tmp.dir, 'tiny-bad', 'model.safetensors')));
  });

  it('export writes GGUF and safetensors (BF16, MXFP4 experts) that load back', () => {
    const ggufPath = join(tmp.dir, 'tiny.gguf');
    assert.match(run('export', ckpt, '--format', 'gguf', '--out', ggufPath, '--dtype', 'f16'), /wrote .*tiny\.gguf/);
    const file = readGguf(ggufPath);
    assert.equal(ggufGet(file, 'general.architecture'), 'gpt-oss');
    assert.equal(file.tensors.find((t) => t.name === 'blk.0.attn_q.weight')!.type, 'F16');
    assert.equal(readGgufTensor(file, 'output_norm.weight').length, 96);

    const st = join(tmp.dir, 'tiny-mxfp4');
    exportCommand(ckpt, { format: 'safetensors', out: st, dtype: 'BF16', mxfp4: true }); // in-process: each CLI spawn costs seconds
    const loaded = loadCheckpoint(st);
    assert.equal(loaded.stored.get('model.layers.0.mlp.experts.down_proj'), 'MXFP4');
    assert.equal(loaded.stored.get('lm_head.weight'), 'BF16');
    const original = loadCheckpoint(ckpt).params.get('model.layers.0.mlp.experts.down_proj')!.data;
    const q = loaded.params.get('model.layers.0.mlp.experts.down_proj')!.data;
    let maxRel = 0;
    const amax = original.reduce((m, v) => Math.max(m, Math.abs(v)), 0);
    for (let i = 0; i < q.length; i++) maxRel = Math.max(maxRel, Math.abs(q[i] - original[i]) / amax);
    assert.ok(maxRel > 0 && maxRel < 0.25, `MXFP4 error relative to the tensor's max: ${maxRel}`);
    assert.equal(JSON.parse(readFileSync(join(st, 'config.json'), 'utf8')).quantization_config.quant_method, 'mxfp4');
  });

  it('fails with a clear message and exit code 1 on bad input', () => {
    const bad = spawnSync(process.execPath, [BIN, 'model', 'logprobs', join(tmp.dir, 'nope'), '--tokens', '1,2'], { encoding: 'utf8' });
    assert.equal(bad.status, 1);
    assert.match(bad.stderr, /longrun: cannot read .*config\.json/);
    assert.throws(() => logprobsCommand(ckpt, [1, 999999]), /token id 999999 is outside the vocabulary/);
    assert.throws(() => exportCommand(ckpt, { format: 'gguf', out: join(tmp.dir, 'x.gguf'), dtype: 'BF16' }), /F32 or F16/);
    assert.throws(() => parseTokenList('1,x'), /'x' is not a non-negative integer/);
    assert.throws(() => parseTokenList(''), /at least one token/);
    assert.deepEqual(parseTokenList(' 1, 2 ,3'), [1, 2, 3]);
  });

  it('export --format gguf refuses a truncate: false checkpoint unless --allow-yarn-truncate, then warns', () => {
    const untruncated = join(tmp.dir, 'untruncated');
    exportCommand(ckpt, { format: 'safetensors', out: untruncated });
    const cfgPath = join(untruncated, 'config.json');
    const cfg = JSON.parse(readFileSync(cfgPath, 'utf8'));
    cfg.rope_scaling.truncate = false;
    writeFileSync(cfgPath, JSON.stringify(cfg));
    const out = join(tmp.dir, 'untruncated.gguf');
    const refused = spawnSync(process.execPath, [BIN, 'model', 'export', untruncated, '--format', 'gguf', '--out', out], { encoding: 'utf8' });
    assert.equal(refused.status, 1);
    assert.match(refused.stderr, /truncate: false.*--allow-yarn-truncate/s);
    assert.equal(existsSync(out), false);
    const allowed = spawnSync(process.execPath, [BIN, 'model', 'export', untruncated, '--format', 'gguf', '--out', out, '--allow-yarn-truncate'], { encoding: 'utf8' });
    assert.equal(allowed.status, 0, allowed.stderr);
    assert.match(allowed.stderr, /^warning: rope_scaling.truncate is false: llama.cpp always rounds/m);
    assert.ok(existsSync(out));
  });
});
