import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Rng } from '../../src/engine/random.ts';
import { BpeTokenizer } from '../../src/llm/bpe.ts';
import { trainBpeModel } from '../../src/llm/bpeTrain.ts';
import { SINGLE_DIGIT_PRETOKENIZE_PATTERN } from '../../src/llm/pretokenize.ts';
import { copyDrillDocuments, copyDrillText } from '../../src/rl/copyDrill.ts';
import { parseRunFile } from '../../src/rl/trainSetup.ts';

const tokenizer = new BpeTokenizer(trainBpeModel('ids: #W4615687, credit_card_2015949, gift_card_1, paypal_7, 1008292230\nagain: 10661\n'.repeat(20), {
  vocabSize: 300, pattern: SINGLE_DIGIT_PRETOKENIZE_PATTERN,
}));

test('copy drill text: the repetition is a subset of the listed ids, each id in a retail shape', () => {
  const rng = new Rng(3);
  for (let i = 0; i < 200; i++) {
    const { text, trainedFrom } = copyDrillText(rng, [2, 6]);
    const m = /^ids: (.*)\nagain: (.*)\n$/.exec(text);
    assert.ok(m, text);
    assert.equal(text.slice(0, trainedFrom), `ids: ${m[1]}\nagain:`);
    const listed = m[1].split(', '), repeated = m[2].split(', ');
    assert.ok(listed.length >= 2 && listed.length <= 6);
    assert.ok(repeated.length >= 1 && repeated.length <= listed.length);
    assert.equal(new Set(repeated).size, repeated.length, 'no id repeated twice');
    for (const id of repeated) assert.ok(listed.includes(id), `${id} was not listed`);
    for (const id of listed) assert.match(id, /^(#W\d{7}|\d{10}|\d{4,6}|(credit_card|gift_card|paypal)_\d{7})$/);
  }
});

test('copy drill documents: deterministic, loss exactly on the repetition tokens', () => {
  const a = copyDrillDocuments(tokenizer, { documents: 30, seed: 5 });
  const b = copyDrillDocuments(tokenizer, { documents: 30, seed: 5 });
  const c = copyDrillDocuments(tokenizer, { documents: 30, seed: 6 });
  assert.deepEqual(a, b);
  assert.notDeepEqual(a, c);
  const rng = new Rng(5);
  for (const d of a) {
    const { text, trainedFrom } = copyDrillText(rng);
    assert.equal(tokenizer.decode([...d.tokens]), text);
    const head = tokenizer.encode(text.slice(0, trainedFrom)).length;
    assert.deepEqual([...d.lossMask], [...d.tokens].map((_, i) => (i >= head ? 1 : 0)));
  }
  assert.throws(() => copyDrillDocuments(tokenizer, { documents: 0 }), /documents must be a positive integer/);
  assert.throws(() => copyDrillDocuments(tokenizer, { documents: 1, ids: [3, 2] }), /ids must be \[min, max\]/);
});

test('run file: sft.copyDrill is validated', () => {
  const base = { task: 'toy', policy: { type: 'tabular' }, grpo: { data: { trainBatchSize: 1 }, trainer: { totalSteps: 1 }, rollout: { n: 2 } } };
  const sft = (copyDrill: unknown) => ({ ...base, sft: { data: 'x.jsonl', outDir: 'out', copyDrill } });
  assert.deepEqual(parseRunFile(sft({ documents: 10 })).run.sft?.copyDrill, { documents: 10, seed: 0, ids: [4, 12] });
  assert.throws(() => parseRunFile(sft({ documents: 0 })), /documents/);
  assert.throws(() => parseRunFile(sft({ documents: 5, ids: [5, 2] })), /min ≤ max/);
  assert.throws(() => parseRunFile(sft({ documents: 5, extra: 1 })), /extra|Unrecognized/i);
});
