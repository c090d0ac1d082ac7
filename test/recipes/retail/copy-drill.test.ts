import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Mulberry32Rng } from '../../../src/engine/random.ts';
import { BpeTokenizer } from '../../../src/llm/bpe.ts';
import { trainBpeModel } from '../../../src/llm/bpe-train.ts';
import { SINGLE_DIGIT_PRETOKENIZE_PATTERN } from '../../../src/llm/pretokenize.ts';
import { copyDrillDocuments, copyDrillText } from '../../../src/recipes/retail/copy-drill.ts';
import { parseRunFile } from '../../../src/recipes/train-setup.ts';

const tokenizer = new BpeTokenizer(trainBpeModel('ids: #W4615687, credit_card_2015949, gift_card_1, paypal_7, 1008292230\nagain: 10661\n'.repeat(20), {
  vocabSize: 300, pattern: SINGLE_DIGIT_PRETOKENIZE_PATTERN,
}));

test('copy drill text: the repetition is a subset of the listed ids, each id in a retail shape', () => {
  const rng = new Mulberry32Rng(3);
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

test('copy drill people: emails, user ids and names from the retail name lists; share 0 keeps the numeric stream', async () => {
  const { FIRST_NAMES, LAST_NAMES } = await import('../../../src/domains/retail/synth/catalog-data.ts');
  const first = new Set(FIRST_NAMES), last = new Set(LAST_NAMES);
  const lower = (xs: Set<string>) => new Set([...xs].map((x) => x.toLowerCase()));
  const firstLow = lower(first), lastLow = lower(last);
  const rng = new Mulberry32Rng(4);
  const shapes = { email: 0, userId: 0, name: 0 };
  for (let i = 0; i < 300; i++) {
    const { text } = copyDrillText(rng, [2, 6], 1);
    const [, listed, repeated] = /^ids: (.*)\nagain: (.*)\n$/.exec(text)!;
    for (const id of repeated.split(', ')) assert.ok(listed.split(', ').includes(id));
    for (const id of listed.split(', ')) {
      let m: RegExpExecArray | null;
      if ((m = /^([a-z]+)\.([a-z]+)([1-9]\d{3})@example\.com$/.exec(id))) { shapes.email++; assert.ok(firstLow.has(m[1]) && lastLow.has(m[2]), id); }
      else if ((m = /^([a-z]+)_([a-z]+)_([1-9]\d{3})$/.exec(id))) { shapes.userId++; assert.ok(firstLow.has(m[1]) && lastLow.has(m[2]), id); }
      else if ((m = /^([A-Z][a-z]+) ([A-Z][a-z]+)$/.exec(id))) { shapes.name++; assert.ok(first.has(m[1]) && last.has(m[2]), id); }
      else assert.fail(`not a person shape: ${id}`);
    }
  }
  assert.ok(shapes.email > 100 && shapes.userId > 100 && shapes.name > 100, JSON.stringify(shapes));
  // A share of 0 draws nothing extra: the same documents as the numeric drill.
  const a = new Mulberry32Rng(9), b = new Mulberry32Rng(9);
  for (let i = 0; i < 50; i++) assert.deepEqual(copyDrillText(a, [2, 8], 0), copyDrillText(b, [2, 8]));
  // A mixed share lists both kinds.
  const mixed = copyDrillDocuments(tokenizer, { documents: 200, seed: 2, people: 0.5 }).map((d) => tokenizer.decode([...d.tokens])).join('');
  assert.match(mixed, /@example\.com/);
  assert.match(mixed, /#W\d{7}|credit_card_\d{7}/);
  assert.throws(() => copyDrillDocuments(tokenizer, { documents: 1, people: 1.5 }), /people must be a share in \[0, 1\]/);
});

test('copy drill documents: deterministic, loss exactly on the repetition tokens', () => {
  const a = copyDrillDocuments(tokenizer, { documents: 30, seed: 5 });
  const b = copyDrillDocuments(tokenizer, { documents: 30, seed: 5 });
  const c = copyDrillDocuments(tokenizer, { documents: 30, seed: 6 });
  assert.deepEqual(a, b);
  assert.notDeepEqual(a, c);
  const rng = new Mulberry32Rng(5);
  for (const d of a) {
    const { text, trainedFrom } = copyDrillText(rng);
    assert.equal(tokenizer.decode([...d.tokens]), text);
    const head = tokenizer.encode(text.slice(0, trainedFrom)).length;
    assert.deepEqual([...d.lossMask], [...d.tokens].map((_, i) => (i >= head ? 1 : 0)));
  }
  assert.throws(() => copyDrillDocuments(tokenizer, { documents: 0 }), /documents must be a positive integer/);
  assert.throws(() => copyDrillDocuments(tokenizer, { documents: 1, ids: [3, 2] }), /ids must be \[min, max\]/);
});

test('run file: retail.drills.copy is validated', () => {
  const base = { task: 'retail-synth', policy: { type: 'gpt-oss', preset: 'tiny-1m', tokenizer: 't.json' }, grpo: { data: { trainBatchSize: 1 }, trainer: { totalSteps: 1 }, rollout: { n: 2 } } };
  const sft = (copy: unknown) => ({ ...base, sft: { data: 'x.jsonl', outDir: 'out' }, retail: { drills: { copy } } });
  assert.deepEqual(parseRunFile(sft({ documents: 10 })).run.retail?.drills?.copy, { documents: 10, seed: 0, ids: [4, 12], people: 0 });
  assert.equal(parseRunFile(sft({ documents: 10, people: 0.25 })).run.retail?.drills?.copy?.people, 0.25);
  assert.throws(() => parseRunFile(sft({ documents: 10, people: 2 })), /people|too big|<=/i);
  assert.throws(() => parseRunFile(sft({ documents: 0 })), /documents/);
  assert.throws(() => parseRunFile(sft({ documents: 5, ids: [5, 2] })), /min ≤ max/);
  assert.throws(() => parseRunFile(sft({ documents: 5, extra: 1 })), /extra|Unrecognized/i);
});

test('copy curriculum: stages train the model in turn, log their drill loss, and a rerun only reloads the finished stages', async () => {
  const { mkdtempSync, readFileSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { GptOssModel } = await import('../../../src/model/index.ts');
  const { validateConfig } = await import('../../../src/model/config.ts');
  const { runCopyCurriculum } = await import('../../../src/recipes/retail/copy-drill.ts');
  const config = validateConfig({
    num_hidden_layers: 2, hidden_size: 32, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8, sliding_window: 8,
    num_local_experts: 2, num_experts_per_tok: 1, intermediate_size: 32, vocab_size: tokenizer.vocabSize, rope_theta: 1000,
    max_position_embeddings: 256, rms_norm_eps: 1e-5, initializer_range: 0.1,
  });
  const snapshot = (m: InstanceType<typeof GptOssModel>) => [...m.parameters().values()].map((t) => t.toArray());
  const dir = mkdtempSync(join(tmpdir(), 'longrun-curriculum-'));
  try {
    const spec = {
      outDir: dir, documents: 40, seed: 1, config: { seqLen: 160, microBatchTokens: 320, rowsPerStep: 2, warmupSteps: 0, checkpointEvery: 0 },
      stages: [{ ids: [2, 3] as [number, number], steps: 2 }, { ids: [3, 5] as [number, number], steps: 3 }],
    };
    const model = new GptOssModel(config, { seed: 1 });
    const init = snapshot(model);
    const lines: string[] = [];
    const result = await runCopyCurriculum(spec, { model, tokenizer, padId: 0, log: (l) => lines.push(l) });
    assert.deepEqual(result.map((r) => [r.stage, r.steps]), [[1, 2], [2, 3]]);
    assert.ok(result.every((r) => r.finalLoss !== null && Number.isFinite(r.finalLoss) && r.finalLoss > 0));
    assert.ok(lines.some((l) => /^curriculum stage 2\/2 \(ids 3–5\): 3 steps, final drill loss \d/.test(l)), lines.join('\n'));
    const steps = (n: number) => readFileSync(join(dir, `stage-${n}`, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { type: string; step: number }).filter((m) => m.type === 'train').map((m) => m.step);
    assert.deepEqual([steps(1), steps(2)], [[1, 2], [1, 2, 3]]);
    const trained = snapshot(model);
    assert.ok(trained.some((t, i) => t.some((v, j) => v !== init[i][j])), 'the curriculum changed the weights');

    // A fresh model given the same spec reloads the finished stages: same weights, no new steps.
    const again = new GptOssModel(config, { seed: 1 });
    await runCopyCurriculum(spec, { model: again, tokenizer, padId: 0 });
    assert.deepEqual(snapshot(again), trained);
    assert.deepEqual([steps(1), steps(2)], [[1, 2], [1, 2, 3]]);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('run file: retail.curriculum is validated', () => {
  const base = { task: 'retail-synth', policy: { type: 'gpt-oss', preset: 'tiny-1m', tokenizer: 't.json' }, grpo: { data: { trainBatchSize: 1 }, trainer: { totalSteps: 1 }, rollout: { n: 2 } } };
  const withCurriculum = (curriculum: unknown) => ({ ...base, retail: { curriculum } });
  assert.deepEqual(parseRunFile(withCurriculum({ outDir: 'c', stages: [{ ids: [2, 3], steps: 5 }] })).run.retail?.curriculum,
    { outDir: 'c', documents: 40000, seed: 1, config: {}, stages: [{ ids: [2, 3], steps: 5 }] });
  assert.throws(() => parseRunFile(withCurriculum({ outDir: 'c', stages: [] })), /stages/);
  assert.throws(() => parseRunFile(withCurriculum({ outDir: 'c', stages: [{ ids: [4, 2], steps: 5 }] })), /min ≤ max/);
  assert.throws(() => parseRunFile(withCurriculum({ outDir: 'c', stages: [{ ids: [2, 3], steps: 0 }] })), /steps/);
  assert.throws(() => parseRunFile(withCurriculum({ stages: [{ ids: [2, 3], steps: 1 }] })), /outDir/);
  assert.equal(parseRunFile(withCurriculum({ outDir: 'c', stages: [{ ids: [2, 3], steps: 5, people: 0.5 }] })).run.retail?.curriculum?.stages[0].people, 0.5);
  assert.throws(() => parseRunFile(withCurriculum({ outDir: 'c', stages: [{ ids: [2, 3], steps: 5, people: -0.1 }] })), /people|too small|>=/i);
});
