import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { createChatFormat } from '../../src/llm/index.ts';
import { GptOssModel } from '../../src/model/index.ts';
import { GptOssBackend } from '../../src/rl/backend.ts';
import { GptOssPolicy } from '../../src/rl/model-policy.ts';
import { runSft, type SftConfigInput, type SftResult } from '../../src/rl/sft.ts';
import { buildSftDocuments, trainSftTokenizer } from '../../src/rl/sft-data.ts';
import { sftDatums } from '../../src/rl/sft-backend.ts';
import { packDocuments } from '../../src/rl/packing.ts';
import { SYSTEM, TOOLS, tinyConfig, trajectories, withTempDir } from './sft-fixtures.ts';

const records = trajectories(8);
const tokenizer = trainSftTokenizer(records, { vocabSize: 500, systemPrompt: SYSTEM, tools: TOOLS });
const format = createChatFormat('harmony', tokenizer);
const SEQ = 192;
const { docs } = buildSftDocuments(records, format, { maxSeqLen: SEQ, systemPrompt: SYSTEM });
const cfg = tinyConfig(tokenizer.vocabSize);

// Two micro-batches per step (accumulation), an epoch boundary, a warmup + cosine schedule, weight decay, a clip that
// engages (the norm of an untrained model's gradient is above 0.5), context tokens weighted, and evaluations.
const base: SftConfigInput = {
  seed: 3, seqLen: SEQ, microBatchTokens: SEQ, rowsPerStep: 2, steps: 5, lr: 5e-3, warmupSteps: 2, minLrRatio: 0.2, evalFraction: 0.25, evalEvery: 2,
  gradClip: 0.5, weightDecay: 0.01, contextLossWeight: 0.25,
};

function backendOf(model: GptOssModel): GptOssBackend {
  // The policy's AdamW starts with other settings: every optim_step configures it from the SFT config.
  return new GptOssBackend(new GptOssPolicy(model, { optimizer: { lr: 1, beta1: 0.5, beta2: 0.5, weightDecay: 0 }, reference: null }));
}

const close = (a: number, b: number, tol: number, what: string) => assert.ok(Math.abs(a - b) <= tol * Math.max(1, Math.abs(b)), `${what}: ${a} vs ${b}`);

function compareRuns(via: SftResult, local: SftResult): void {
  assert.equal(via.history.length, local.history.length);
  via.history.forEach((m, i) => {
    const l = local.history[i];
    assert.equal(m.step, l.step);
    assert.equal(m.lr, l.lr, `step ${m.step} lr`);
    assert.equal(m.tokens, l.tokens);
    assert.equal(m.lossTokens, l.lossTokens);
    assert.equal(m.microBatches, l.microBatches);
    assert.equal(m.skipped, false);
    close(m.loss, l.loss, 1e-5, `step ${m.step} loss`);
    close(m.contextLoss!, l.contextLoss!, 1e-5, `step ${m.step} contextLoss`);
    close(m.gradNorm, l.gradNorm, 1e-4, `step ${m.step} gradNorm`);
  });
  assert.deepEqual(via.evals.map((e) => [e.step, e.evalTokens]), local.evals.map((e) => [e.step, e.evalTokens]));
  via.evals.forEach((e, i) => close(e.evalLoss, local.evals[i].evalLoss, 1e-5, `eval at step ${e.step}`));
}

function compareWeights(a: GptOssModel, b: GptOssModel): number {
  let worst = 0;
  for (const [name, t] of a.parameters()) {
    const x = t.toArray(), y = b.parameters().get(name)!.toArray();
    for (let i = 0; i < x.length; i++) worst = Math.max(worst, Math.abs(x[i] - y[i]));
  }
  return worst;
}

test('datums: one per document, targets shifted, weights = loss mask / W with the context weight', () => {
  const rows = packDocuments(docs.map((d) => d.tokens.length), SEQ);
  const { datums, assistant } = sftDatums(docs, rows, { rows: [0], seqLen: rows[0].length }, 10, 0.25);
  assert.equal(datums.length, rows[0].docs.length);
  datums.forEach((d, k) => {
    const doc = docs[rows[0].docs[k]];
    assert.equal(d.tokens.length, doc.tokens.length - 1);
    assert.deepEqual(Array.from(d.lossInputs.target_tokens), Array.from(doc.tokens.subarray(1)));
    for (let j = 0; j < d.tokens.length; j++) {
      assert.equal(assistant[k][j], doc.lossMask[j + 1]);
      assert.equal(d.lossInputs.weights![j], (doc.lossMask[j + 1] ? 1 : Math.fround(0.25)) / 10);
    }
  });
});

test('runSft through GptOssBackend equals in-process runSft: losses, grad norms, evals and final weights', async () => {
  await withTempDir(async (dir) => {
    const localModel = new GptOssModel(cfg, { seed: 1 });
    const local = await runSft(base, { model: localModel, data: docs, outDir: join(dir, 'local'), quiet: true });
    assert.ok(local.history.some((m) => m.microBatches > 1), 'gradient accumulation is exercised');
    assert.ok(local.history.some((m) => m.gradNorm > 0.5), 'the clip engages');
    assert.ok(local.stepsPerEpoch < 5, 'the run crosses an epoch boundary');

    const remoteModel = new GptOssModel(cfg, { seed: 1 });
    const via = await runSft(base, { backend: backendOf(remoteModel), vocabSize: tokenizer.vocabSize, data: docs, outDir: join(dir, 'via'), quiet: true });
    compareRuns(via, local);
    assert.ok(compareWeights(remoteModel, localModel) < 1e-4, `final weights differ by ${compareWeights(remoteModel, localModel)}`);
    assert.equal(via.modelDir, null, 'no local model folder on a backend');
    assert.ok(existsSync(join(via.checkpointDir!, 'sft-policy')), 'the checkpoint holds the backend state');
    const state = JSON.parse(readFileSync(join(via.checkpointDir!, 'trainer.json'), 'utf8')) as { backend?: boolean; step: number };
    assert.equal(state.backend, true);
    assert.equal(state.step, 5);
    localModel.dispose();
    remoteModel.dispose();
  });
});

test('a run through a backend resumes from its checkpoint (weights and optimizer state from the backend save)', async () => {
  await withTempDir(async (dir) => {
    const straightModel = new GptOssModel(cfg, { seed: 1 });
    const straight = await runSft(base, { backend: backendOf(straightModel), data: docs, outDir: join(dir, 'a'), quiet: true });
    const firstModel = new GptOssModel(cfg, { seed: 1 });
    const first = await runSft(base, { backend: backendOf(firstModel), data: docs, outDir: join(dir, 'b'), quiet: true, stopAfterStep: 3 });
    assert.equal(first.steps, 3);
    firstModel.dispose();
    const resumedModel = new GptOssModel(cfg, { seed: 99 }); // everything must come from the checkpoint
    const second = await runSft(base, { backend: backendOf(resumedModel), data: docs, outDir: join(dir, 'b'), quiet: true, resume: true });
    assert.equal(second.resumedFromStep, 3);
    assert.deepEqual([...first.history, ...second.history].map((m) => m.loss), straight.history.map((m) => m.loss));
    assert.deepEqual([...first.history, ...second.history].map((m) => m.gradNorm), straight.history.map((m) => m.gradNorm));
    assert.equal(compareWeights(resumedModel, straightModel), 0);
    const left = readdirSync(join(dir, 'b', 'checkpoints')).filter((n) => !/^step-\d{8}$/.test(n));
    assert.deepEqual(left, [], 'no partial checkpoint folder is left');
    straightModel.dispose();
    resumedModel.dispose();
  });
});

test('bad backend setups get clear errors', async () => {
  await withTempDir(async (dir) => {
    const model = new GptOssModel(cfg, { seed: 1 });
    await assert.rejects(runSft(base, { model, backend: backendOf(model), data: docs, outDir: join(dir, 'x'), quiet: true }), /either a model .* or a backend .*not both/);
    await assert.rejects(runSft(base, { data: docs, outDir: join(dir, 'x'), quiet: true }), /no model and no backend/);
    await assert.rejects(runSft(base, { backend: backendOf(model), vocabSize: 10, data: docs, outDir: join(dir, 'x'), quiet: true }), /outside the model's vocabulary \[0, 10\)/);
    // Checkpoints do not cross between the two ways of training.
    await runSft({ ...base, steps: 1, evalFraction: 0 }, { model, data: docs, outDir: join(dir, 'local'), quiet: true });
    await assert.rejects(runSft({ ...base, steps: 2, evalFraction: 0 }, { backend: backendOf(model), data: docs, outDir: join(dir, 'local'), quiet: true, resume: true }),
      /written by an in-process SFT run .* resumes only from checkpoints written through a backend/);
    await runSft({ ...base, steps: 1, evalFraction: 0 }, { backend: backendOf(model), data: docs, outDir: join(dir, 'remote'), quiet: true });
    await assert.rejects(runSft({ ...base, steps: 2, evalFraction: 0 }, { model, data: docs, outDir: join(dir, 'remote'), quiet: true, resume: true }),
      /written by an SFT run on a training backend .* resume it with the same backend/);
    model.dispose();
  });
});
