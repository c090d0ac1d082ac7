import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Mulberry32Rng } from '../../src/engine/index.ts';
import { GptOssModel } from '../../src/model/index.ts';
import { accumulationGrad, documentWeight, microBatches, microBatchInput, packDocuments, type PackedRow, type SftDocument } from '../../src/rl/packing.ts';
import { parseSftConfig, SftPlan, splitEval } from '../../src/rl/sft.ts';
import { tinyConfig } from './sft-fixtures.ts';

function randomDocs(lengths: readonly number[], vocab: number, seed: number): SftDocument[] {
  const rng = new Mulberry32Rng(seed);
  return lengths.map((n) => ({
    tokens: Int32Array.from({ length: n }, () => rng.int(vocab)),
    lossMask: Uint8Array.from({ length: n }, (_, i) => (i > 0 && rng.next() < 0.6 ? 1 : 0)),
  }));
}

test('first-fit-decreasing: a worked example', () => {
  // 5→row0, 4→row1, 3→row0 (8), 3→row1 (7), 2→row2, 1→row1 (8).
  const rows = packDocuments([5, 4, 3, 3, 2, 1], 8);
  assert.deepEqual(rows, [{ docs: [0, 2], length: 8 }, { docs: [1, 3, 5], length: 8 }, { docs: [4], length: 2 }]);
});

test('packing: every document once, whole, rows within length, deterministic', () => {
  const rng = new Mulberry32Rng(3);
  const lengths = Array.from({ length: 200 }, () => 1 + rng.int(60));
  const rows = packDocuments(lengths, 64);
  const seen = rows.flatMap((r) => r.docs).sort((a, b) => a - b);
  assert.deepEqual(seen, lengths.map((_, i) => i));
  for (const r of rows) {
    assert.ok(r.length <= 64);
    assert.equal(r.length, r.docs.reduce((s, d) => s + lengths[d], 0));
  }
  const total = lengths.reduce((a, b) => a + b, 0);
  assert.ok(rows.length <= Math.ceil(total / 64) * 1.25 + 1, `FFD is near-optimal here: ${rows.length} rows for ${total} tokens`);
  assert.deepEqual(packDocuments(lengths, 64), rows);
  assert.throws(() => packDocuments([3, 70], 64), /document 1 has 70 tokens, more than a row holds \(64\)/);
  assert.throws(() => packDocuments([0], 64), /lengths must be integers ≥ 1/);
});

test('micro-batches respect the token budget (with padding) and cover each row once', () => {
  const rng = new Mulberry32Rng(5);
  const rows: PackedRow[] = Array.from({ length: 37 }, (_, i) => ({ docs: [i], length: 1 + rng.int(64) }));
  const ids = rows.map((_, i) => i).reverse();
  for (const budget of [64, 100, 256, 1000]) {
    const mbs = microBatches(rows, ids, budget);
    assert.deepEqual(mbs.flatMap((m) => m.rows).sort((a, b) => a - b), rows.map((_, i) => i));
    for (const m of mbs) {
      assert.ok(m.rows.length * m.seqLen <= budget, `budget ${budget}: ${m.rows.length}×${m.seqLen}`);
      assert.equal(m.seqLen, Math.max(...m.rows.map((r) => rows[r].length)));
    }
    assert.deepEqual(microBatches(rows, ids, budget), mbs);
  }
  assert.throws(() => microBatches(rows, ids, 10), /more than the micro-batch token budget 10/);
});

test('micro-batch input: docIds per row, next-token targets, mask shifted onto targets, padding inert', () => {
  const docs: SftDocument[] = [
    { tokens: Int32Array.of(10, 11, 12), lossMask: Uint8Array.of(0, 1, 1) },
    { tokens: Int32Array.of(20, 21), lossMask: Uint8Array.of(0, 1) },
    { tokens: Int32Array.of(30, 31, 32, 33), lossMask: Uint8Array.of(0, 0, 1, 1) },
  ];
  const rows: PackedRow[] = [{ docs: [2], length: 4 }, { docs: [0, 1], length: 5 }];
  const x = microBatchInput(docs, rows, { rows: [1, 0], seqLen: 5 }, 7);
  assert.equal(x.batch, 2);
  assert.deepEqual([...x.tokens], [10, 11, 12, 20, 21, 30, 31, 32, 33, 7]);
  assert.deepEqual([...x.docIds], [0, 0, 0, 1, 1, 0, 0, 0, 0, 1]);
  assert.deepEqual([...x.targets], [11, 12, -1, 21, -1, 31, 32, 33, -1, -1]);
  assert.deepEqual([...x.lossMask], [1, 1, 0, 1, 0, 0, 1, 1, 0, 0]);
  assert.equal(x.weightSum, 5);
  assert.equal(x.weightSum, docs.reduce((s, d) => s + documentWeight(d), 0));
  assert.equal(x.realTokens, 9);
  assert.deepEqual([...x.assistantMask], [...x.lossMask]);
  assert.equal(x.assistantWeight, 5);
  // Context weight: every other real target gets the weight, padding and document ends stay out.
  const c = microBatchInput(docs, rows, { rows: [1, 0], seqLen: 5 }, 7, 0.25);
  assert.deepEqual([...c.lossMask], [1, 1, 0, 1, 0, 0.25, 1, 1, 0, 0]);
  assert.deepEqual([...c.assistantMask], [1, 1, 0, 1, 0, 0, 1, 1, 0, 0]);
  assert.equal(c.weightSum, 5.25);
  assert.equal(c.assistantWeight, 5);
  assert.throws(() => microBatchInput(docs, rows, { rows: [0], seqLen: 5 }, 0, 1.5), /contextWeight must be in \[0, 1\]/);
});

test('the packed loss equals the unpacked loss of the same documents', () => {
  const cfg = tinyConfig(50);
  const model = new GptOssModel(cfg, { seed: 2, grads: false });
  const docs = randomDocs([7, 12, 5, 9, 3, 15, 11], cfg.vocab_size, 9);
  const rows = packDocuments(docs.map((d) => d.tokens.length), 24);
  assert.ok(rows.some((r) => r.docs.length > 1), 'some rows hold several documents');
  let packedNll = 0, packedW = 0;
  for (const mb of microBatches(rows, rows.map((_, i) => i), 48)) {
    const r = model.logprobs(microBatchInput(docs, rows, mb));
    packedNll += r.loss * r.tokenWeight;
    packedW += r.tokenWeight;
  }
  let nll = 0, w = 0;
  docs.forEach((d, i) => {
    const single: PackedRow[] = [{ docs: [i], length: d.tokens.length }];
    const r = model.logprobs(microBatchInput(docs, single, { rows: [0], seqLen: d.tokens.length }));
    nll += r.loss * r.tokenWeight;
    w += r.tokenWeight;
  });
  assert.equal(packedW, w);
  assert.ok(Math.abs(packedNll - nll) < 1e-4 * Math.abs(nll), `packed ${packedNll} vs unpacked ${nll}`);
  model.dispose();
});

test('gradient accumulation over k micro-batches equals one big batch (global token normalisation)', () => {
  const cfg = tinyConfig(50);
  const docs = randomDocs([6, 14, 9, 4, 16, 8, 12, 3], cfg.vocab_size, 11);
  const rows = packDocuments(docs.map((d) => d.tokens.length), 16);
  const ids = rows.map((_, i) => i);
  const gradsFor = (budget: number, normalise: 'global' | 'per-micro' | 'model-default'): { grads: Map<string, Float32Array>; k: number } => {
    const model = new GptOssModel(cfg, { seed: 4 });
    const inputs = microBatches(rows, ids, budget).map((mb) => microBatchInput(docs, rows, mb));
    const W = inputs.reduce((s, x) => s + x.weightSum, 0);
    for (const x of inputs) {
      model.forward(x);
      if (normalise === 'model-default') model.backward(); // the model's own −m/Σm over this (single) batch
      else if (normalise === 'global') model.backward(accumulationGrad(x.lossMask, W));
      else model.backward(accumulationGrad(x.lossMask, x.weightSum * inputs.length));
    }
    const grads = new Map([...model.gradients()].map(([n, g]) => [n, g.toArray()]));
    model.dispose();
    return { grads, k: inputs.length };
  };
  const big = gradsFor(16 * rows.length, 'model-default');
  const small = gradsFor(16, 'global');
  const meanOfMeans = gradsFor(16, 'per-micro');
  assert.equal(big.k, 1);
  assert.equal(small.k, rows.length);
  assert.ok(small.k >= 4);
  let maxRel = 0, naiveRel = 0;
  for (const [name, g] of big.grads) {
    const s = small.grads.get(name)!, n = meanOfMeans.grads.get(name)!;
    let num = 0, den = 0, numN = 0;
    for (let i = 0; i < g.length; i++) { num += (g[i] - s[i]) ** 2; den += g[i] ** 2; numN += (g[i] - n[i]) ** 2; }
    if (den > 0) { maxRel = Math.max(maxRel, Math.sqrt(num / den)); naiveRel = Math.max(naiveRel, Math.sqrt(numN / den)); }
  }
  assert.ok(maxRel < 1e-4, `accumulated vs big batch: relative difference ${maxRel}`);
  assert.ok(naiveRel > 1e-2, `the mean of per-micro-batch means is a different objective (${naiveRel})`);
});

test('the data plan: each epoch visits every row once, in a seeded order that changes per epoch', () => {
  const docs = randomDocs(Array.from({ length: 30 }, (_, i) => 3 + ((i * 7) % 20)), 50, 1);
  const config = parseSftConfig({ seqLen: 32, microBatchTokens: 64, rowsPerStep: 3, seed: 5 });
  const plan = new SftPlan(docs, config);
  const again = new SftPlan(docs, config);
  const epochRows = (p: SftPlan, e: number) => Array.from({ length: p.stepsPerEpoch }, (_, k) => p.stepRows(e * p.stepsPerEpoch + k)).flat();
  const e0 = epochRows(plan, 0), e1 = epochRows(plan, 1);
  assert.deepEqual([...e0].sort((a, b) => a - b), plan.rows.map((_, i) => i));
  assert.deepEqual([...e1].sort((a, b) => a - b), plan.rows.map((_, i) => i));
  assert.notDeepEqual(e0, e1);
  assert.deepEqual(epochRows(again, 1), e1, 'a fresh plan (as after a resume) gives the same order');
  assert.deepEqual(plan.stepRows(plan.stepsPerEpoch + 1), again.stepRows(plan.stepsPerEpoch + 1));
  const other = new SftPlan(docs, parseSftConfig({ seqLen: 32, microBatchTokens: 64, rowsPerStep: 3, seed: 6 }));
  assert.notDeepEqual(epochRows(other, 0), e0, 'the seed changes the order');
  for (let s = 0; s < plan.stepsPerEpoch; s++) {
    const { rows } = plan.stepData(s);
    for (const mb of microBatches(rows, rows.map((_, i) => i), 64)) assert.ok(mb.rows.length * mb.seqLen <= 64);
  }
});

test('eval split: seeded, disjoint, the requested share', () => {
  const docs = randomDocs(Array.from({ length: 20 }, (_, i) => 2 + i), 50, 2);
  const a = splitEval(docs, 0.25, 3), b = splitEval(docs, 0.25, 3), c = splitEval(docs, 0.25, 4);
  assert.equal(a.eval.length, 5);
  assert.equal(a.train.length, 15);
  assert.deepEqual(a, b);
  assert.notDeepEqual(a.eval, c.eval);
  for (const d of a.eval) assert.ok(!a.train.includes(d));
  assert.deepEqual(splitEval(docs, 0, 3).train.length, 20);
});
