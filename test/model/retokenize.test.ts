import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { BpeTokenizer } from '../../src/llm/bpe.ts';
import { presetConfig } from '../../src/model/config.ts';
import { paramShapes } from '../../src/model/params.ts';
import { LLAMA_CPP_PRETOKENIZER_PATTERNS, type LoadedCheckpoint } from '../../src/model/checkpoint/index.ts';
import { retokenizeCheckpoint } from '../../src/model/checkpoint/retokenize.ts';
import { rng } from './checkpoint-helpers.ts';

const corpus = Array.from({ length: 400 }, (_, i) => `order #W${(7844496 + i * 7919) % 10_000_000} for item ${4392285068 + i * 104729}, the order details of Elena Moreau`).join('\n');
const single = BpeTokenizer.train(corpus, { vocabSize: 600, pattern: LLAMA_CPP_PRETOKENIZER_PATTERNS.starcoder });
const groups = BpeTokenizer.train(corpus, { vocabSize: 900, pattern: LLAMA_CPP_PRETOKENIZER_PATTERNS['llama-bpe'], separateSymbolsBeforeLetters: true });

function checkpoint(vocab: number): Pick<LoadedCheckpoint, 'config' | 'params'> {
  const config = presetConfig('tiny-1m', { vocab_size: vocab });
  const r = rng(3);
  const params: LoadedCheckpoint['params'] = new Map();
  for (const [name, shape] of paramShapes(config)) {
    const data = Float32Array.from({ length: shape.reduce((x, y) => x * y, 1) }, () => r() * 2 - 1);
    params.set(name, { dtype: 'F32', shape, data });
  }
  return { config, params };
}

const row = (p: { data: Float32Array }, id: number, H: number) => Array.from(p.data.subarray(id * H, (id + 1) * H));

describe('retokenizeCheckpoint (a checkpoint moved onto another tokenizer)', () => {
  const old = checkpoint(single.vocabSize);
  const H = old.config.hidden_size;

  it('onto its own tokenizer changes nothing', () => {
    const r = retokenizeCheckpoint(old, single.model, single.model);
    assert.equal(r.averaged, 0);
    assert.equal(r.copied, single.vocabSize);
    for (const [name, p] of old.params) assert.deepEqual(Array.from(r.params.get(name)!.data), Array.from(p.data), name);
  });

  it('onto digit groups: shared tokens keep their rows, a new group starts from its old digits, the blocks are untouched', () => {
    const r = retokenizeCheckpoint(old, single.model, groups.model);
    assert.equal(r.config.vocab_size, groups.vocabSize);
    assert.deepEqual(r.params.get('lm_head.weight')!.shape, [groups.vocabSize, H]);
    assert.ok(r.averaged > 0 && r.copied > 256);
    const E = old.params.get('model.embed_tokens.weight')!, O = old.params.get('lm_head.weight')!;
    const E2 = r.params.get('model.embed_tokens.weight')!, O2 = r.params.get('lm_head.weight')!;
    const one = (tok: BpeTokenizer, text: string) => {
      const ids = tok.encode(text);
      assert.equal(ids.length, 1, `${text} is one token`);
      return ids[0];
    };
    // "order" is one token in both: same rows.
    assert.deepEqual(row(E2, one(groups, 'order'), H), row(E, one(single, 'order'), H));
    assert.deepEqual(row(O2, one(groups, 'order'), H), row(O, one(single, 'order'), H));
    // A three-digit group: the mean of its digits' embeddings, the output row of its first digit.
    const g = groups.encode('784');
    assert.equal(g.length, 1, '784 is one token of the grouped tokenizer');
    const digits = single.encode('784');
    assert.equal(digits.length, 3);
    const mean = row(E, digits[0], H).map((v, h) => (v + E.data[digits[1] * H + h] + E.data[digits[2] * H + h]) / 3);
    row(E2, g[0], H).forEach((v, h) => assert.ok(Math.abs(v - mean[h]) < 1e-6));
    assert.deepEqual(row(O2, g[0], H), row(O, digits[0], H));
    // Special tokens by name.
    const ret = '<|return|>';
    assert.deepEqual(row(E2, groups.specialTokens.get(ret)!, H), row(E, single.specialTokens.get(ret)!, H));
    for (const [name, p] of old.params) if (!/embed_tokens|lm_head/.test(name)) assert.equal(r.params.get(name)!.data, p.data, name);
  });

  it('noise tells averaged permutations apart, is seeded, and leaves copied rows alone', () => {
    const a = retokenizeCheckpoint(old, single.model, groups.model, { noise: 0.3, seed: 7 });
    const b = retokenizeCheckpoint(old, single.model, groups.model, { noise: 0.3, seed: 7 });
    const plain = retokenizeCheckpoint(old, single.model, groups.model);
    const E = a.params.get('model.embed_tokens.weight')!, P = plain.params.get('model.embed_tokens.weight')!;
    assert.deepEqual(Array.from(E.data), Array.from(b.params.get('model.embed_tokens.weight')!.data));
    const id = (text: string) => groups.encode(text)[0];
    assert.deepEqual(row(E, id('order'), H), row(P, id('order'), H));
    const g = groups.encode('784');
    assert.equal(g.length, 1);
    const diff = row(E, g[0], H).map((v, h) => v - P.data[g[0] * H + h]);
    const rmsDiff = Math.sqrt(diff.reduce((s, v) => s + v * v, 0) / H);
    const rmsOld = Math.sqrt(old.params.get('model.embed_tokens.weight')!.data.reduce((s, v) => s + v * v, 0) / old.params.get('model.embed_tokens.weight')!.data.length);
    assert.ok(rmsDiff > 0.15 * rmsOld && rmsDiff < 0.6 * rmsOld, `noise rms ${rmsDiff} against 0.3 × ${rmsOld}`);
    assert.throws(() => retokenizeCheckpoint(old, single.model, groups.model, { noise: -1 }), /noise/);
    assert.throws(() => retokenizeCheckpoint(old, single.model, groups.model, { noise: 0.3, seed: Number('x') }), /seed must be an integer/);
    const untied = new Map(old.params);
    untied.delete('lm_head.weight');
    assert.throws(() => retokenizeCheckpoint({ config: old.config, params: untied }, single.model, groups.model), /lm_head\.weight/);
  });

  it('refuses a tokenizer that is not the checkpoint\'s, and a special token the old one lacks', () => {
    assert.throws(() => retokenizeCheckpoint(checkpoint(single.vocabSize + 1), single.model, groups.model), /vocab_size/);
    assert.throws(() => retokenizeCheckpoint(old, single.model, { ...groups.model, specialTokens: [...groups.model.specialTokens, '<|new|>'] }), /<\|new\|>/);
  });
});
