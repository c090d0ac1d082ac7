import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { createChatFormat } from '../../src/llm/index.ts';
import { loadModel } from '../../src/model/checkpoint/index.ts';
import { GptOssModel } from '../../src/model/index.ts';
import type { SftDocument } from '../../src/rl/packing.ts';
import { evaluateSft, parseSftConfig, runSft, type SftConfigInput } from '../../src/rl/sft.ts';
import { buildSftDocuments, trainSftTokenizer } from '../../src/rl/sft-data.ts';
import { SYSTEM, TOOLS, tinyConfig, trajectories, withTempDir } from './sft-fixtures.ts';

const records = trajectories(8);
const tokenizer = trainSftTokenizer(records, { vocabSize: 500, systemPrompt: SYSTEM, tools: TOOLS });
const format = createChatFormat('harmony', tokenizer);
const SEQ = 192;
const { docs } = buildSftDocuments(records, format, { maxSeqLen: SEQ, systemPrompt: SYSTEM });
const cfg = tinyConfig(tokenizer.vocabSize);

const base: SftConfigInput = {
  seed: 3, seqLen: SEQ, microBatchTokens: SEQ, rowsPerStep: 2, steps: 7, lr: 5e-3, warmupSteps: 2, minLrRatio: 0.2, evalFraction: 0.25, evalEvery: 2,
  checkpointEvery: 0,
};

function weightsOf(model: GptOssModel): Map<string, Float32Array> {
  return new Map([...model.parameters()].map(([n, t]) => [n, t.toArray()]));
}

function snapshot(dir: string): Map<string, string> {
  const out = new Map<string, string>();
  const walk = (d: string) => {
    for (const name of readdirSync(d)) {
      const p = join(d, name);
      if (statSync(p).isDirectory()) walk(p);
      else out.set(p, readFileSync(p).toString('base64'));
    }
  };
  walk(dir);
  return out;
}

test('exact resume: N steps + resume + the rest equals one uninterrupted run, bit for bit', async () => {
  await withTempDir(async (dir) => {
    const straightModel = new GptOssModel(cfg, { seed: 1 });
    const straight = await runSft(base, { model: straightModel, data: docs, outDir: join(dir, 'a'), quiet: true });
    assert.equal(straight.steps, 7);
    assert.ok(straight.stepsPerEpoch < 7, 'the run crosses an epoch boundary');
    assert.ok(straight.history.some((m) => m.microBatches > 1), 'gradient accumulation is exercised');

    const firstModel = new GptOssModel(cfg, { seed: 1 });
    const first = await runSft(base, { model: firstModel, data: docs, outDir: join(dir, 'b'), quiet: true, stopAfterStep: 4 });
    assert.equal(first.steps, 4);
    assert.ok(first.stoppedEarly);
    assert.equal(first.modelDir, null);
    firstModel.dispose();

    const resumedModel = new GptOssModel(cfg, { seed: 99 }); // different init: everything must come from the checkpoint
    const second = await runSft(base, { model: resumedModel, data: docs, outDir: join(dir, 'b'), quiet: true, resume: true });
    assert.equal(second.resumedFromStep, 4);
    assert.deepEqual([...first.history, ...second.history].map((m) => m.loss), straight.history.map((m) => m.loss));
    assert.deepEqual([...first.history, ...second.history].map((m) => m.gradNorm), straight.history.map((m) => m.gradNorm));
    assert.deepEqual([...first.history, ...second.history].map((m) => m.lr), straight.history.map((m) => m.lr));
    assert.deepEqual([...first.evals, ...second.evals].map((m) => [m.step, m.evalLoss]), straight.evals.map((m) => [m.step, m.evalLoss]));
    assert.equal(second.tokensSeen, straight.tokensSeen);
    const a = weightsOf(straightModel), b = weightsOf(resumedModel);
    for (const [name, w] of a) assert.deepEqual(b.get(name), w, name);

    // The metrics file of the resumed run reads like the uninterrupted one (timings aside).
    const strip = (path: string) => readFileSync(path, 'utf8').trim().split('\n').map((l) => {
      const m = JSON.parse(l) as Record<string, unknown>;
      delete m.tokensPerSec;
      delete m.peakBytes;
      delete m.seconds;
      return m;
    });
    assert.deepEqual(strip(join(dir, 'b', 'metrics.jsonl')), strip(join(dir, 'a', 'metrics.jsonl')));
    straightModel.dispose();
    resumedModel.dispose();
  });
});

test('outputs: metrics JSONL, final model loadable with the same predictions, tokenizer, checkpoints kept', async () => {
  await withTempDir(async (dir) => {
    const model = new GptOssModel(cfg, { seed: 1 });
    const r = await runSft({ ...base, checkpointEvery: 2, keepCheckpoints: 2 }, { model, tokenizer, data: docs, outDir: dir, quiet: true });
    const lines = readFileSync(join(dir, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, number | string | boolean>);
    const train = lines.filter((l) => l.type === 'train');
    assert.deepEqual(train.map((l) => l.step), [1, 2, 3, 4, 5, 6, 7]);
    for (const l of train) {
      for (const k of ['loss', 'lr', 'gradNorm', 'tokensPerSec', 'tokensSeen', 'peakBytes', 'lossTokens']) assert.equal(typeof l[k], 'number', k);
      assert.ok((l.peakBytes as number) > 0);
    }
    assert.equal(train.at(-1)!.tokensSeen, r.tokensSeen);
    assert.deepEqual(lines.filter((l) => l.type === 'eval').map((l) => l.step), [2, 4, 6, 7]);
    assert.deepEqual(readdirSync(join(dir, 'checkpoints')), ['step-00000006', 'step-00000007']);
    assert.ok(existsSync(join(dir, 'tokenizer.json')));
    const loaded = loadModel(r.modelDir!);
    const evalDocs = docs.slice(0, 2);
    assert.equal(evaluateSft(loaded, evalDocs, { seqLen: SEQ, microBatchTokens: SEQ, padId: 0 }).loss, evaluateSft(model, evalDocs, { seqLen: SEQ, microBatchTokens: SEQ, padId: 0 }).loss);
    loaded.dispose();
    model.dispose();
  });
});

test('a tiny model overfits a small trajectory corpus', async () => {
  await withTempDir(async (dir) => {
    const model = new GptOssModel(cfg, { seed: 7 });
    const small = docs.slice(0, 4);
    const r = await runSft({ seed: 1, seqLen: SEQ, microBatchTokens: 2 * SEQ, rowsPerStep: 4, steps: 60, lr: 1e-2, warmupSteps: 5, minLrRatio: 0.1, weightDecay: 0 },
      { model, data: small, outDir: dir, quiet: true });
    const firstLoss = r.history[0].loss, last = r.finalLoss!;
    assert.ok(firstLoss > 5, `initial loss ${firstLoss} is near ln(vocab)`);
    assert.ok(last < 0.3 * firstLoss, `final loss ${last} vs initial ${firstLoss}`);
    model.dispose();
  });
});

test('bad config values get clear errors', () => {
  assert.throws(() => parseSftConfig({ lr: -1 }), /invalid SFT config[\s\S]*lr/);
  assert.throws(() => parseSftConfig({ seqLen: 512, microBatchTokens: 100 }), /microBatchTokens \(100\) must be ≥ seqLen \(512\)/);
  assert.throws(() => parseSftConfig({ learningRate: 1e-3 }), /invalid SFT config[\s\S]*learningRate/);
  assert.throws(() => parseSftConfig({ steps: 0 }), /steps/);
  assert.throws(() => parseSftConfig({ beta2: 1 }), /beta2/);
  assert.throws(() => parseSftConfig({ evalFraction: 0.9 }), /evalFraction/);
  const c = parseSftConfig({});
  assert.equal(c.seqLen, 512);
  assert.equal(c.steps, undefined);
});

test('bad data and models are rejected before anything is written', async () => {
  await withTempDir(async (dir) => {
    const model = new GptOssModel(cfg, { seed: 1 });
    const long: SftDocument = { tokens: new Int32Array(SEQ + 1), lossMask: new Uint8Array(SEQ + 1).fill(1) };
    await assert.rejects(runSft(base, { model, data: [long], outDir: join(dir, 'x'), quiet: true }), /more than seqLen 192/);
    const bad: SftDocument = { tokens: Int32Array.of(1, cfg.vocab_size + 5), lossMask: Uint8Array.of(0, 1) };
    await assert.rejects(runSft(base, { model, data: [bad, ...docs], outDir: join(dir, 'x'), quiet: true }), /outside the model's vocabulary/);
    const silent: SftDocument = { tokens: Int32Array.of(1, 2, 3), lossMask: Uint8Array.of(1, 0, 0) };
    await assert.rejects(runSft(base, { model, data: [...docs, silent], outDir: join(dir, 'x'), quiet: true }), /document \d+ has no loss tokens/);
    await assert.rejects(runSft(base, { model, data: docs, outDir: join(dir, 'x'), quiet: true, stopAfterStep: 0 }), /stopAfterStep must be an integer ≥ 1/);
    const frozen = new GptOssModel(cfg, { seed: 1, grads: false });
    await assert.rejects(runSft(base, { model: frozen, data: docs, outDir: join(dir, 'x'), quiet: true }), /no gradient buffers/);
    assert.ok(!existsSync(join(dir, 'x')));
    frozen.dispose();
    model.dispose();
  });
});

test('maxWallSeconds ends the run after the step that spends it: checkpoint, eval, model; a resume past the budget trains no more', async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, 'budget');
    const config: SftConfigInput = { ...base, maxWallSeconds: 1e-6 };
    const model = new GptOssModel(cfg, { seed: 1 });
    const r = await runSft(config, { model, data: docs, outDir: out, quiet: true });
    assert.equal(r.steps, 1);
    assert.equal(r.totalSteps, 7);
    assert.ok(r.stoppedByBudget);
    assert.equal(r.stoppedEarly, false);
    assert.ok(r.trainSeconds > 0 && r.trainSeconds === r.history[0].seconds);
    assert.equal(r.modelDir, join(out, 'model'));
    assert.ok(existsSync(join(out, 'model', 'model.safetensors')));
    assert.deepEqual(r.evals.map((e) => e.step), [1]);
    assert.equal(r.checkpointDir, join(out, 'checkpoints', 'step-00000001'));
    // The learning rate follows the 7-step schedule: the budget cuts the run, it does not compress it.
    const full = await runSft(base, { model: new GptOssModel(cfg, { seed: 1 }), data: docs, outDir: join(dir, 'full'), quiet: true, stopAfterStep: 1 });
    assert.equal(r.history[0].lr, full.history[0].lr);

    const again = await runSft(config, { model: new GptOssModel(cfg, { seed: 1 }), data: docs, outDir: out, quiet: true, resume: true });
    assert.equal(again.resumedFromStep, 1);
    assert.equal(again.history.length, 0);
    assert.ok(again.stoppedByBudget);
    assert.equal(again.trainSeconds, r.trainSeconds);
    // Raising the budget continues the run.
    const more = await runSft({ ...base, maxWallSeconds: 1e6 }, { model: new GptOssModel(cfg, { seed: 1 }), data: docs, outDir: out, quiet: true, resume: true });
    assert.equal(more.steps, 7);
    assert.equal(more.stoppedByBudget, false);
    const rows = readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { type: string; step: number });
    assert.deepEqual(rows.filter((m) => m.type === 'train').map((m) => m.step), [1, 2, 3, 4, 5, 6, 7]);
    model.dispose();
  });
});

test('corrupt or mismatched checkpoints: clear error on resume, nothing overwritten', async () => {
  await withTempDir(async (dir) => {
    const out = join(dir, 'run');
    const model = new GptOssModel(cfg, { seed: 1 });
    await runSft(base, { model, data: docs, outDir: out, quiet: true, stopAfterStep: 3 });
    const ckpt = join(out, 'checkpoints', 'step-00000003');
    const before = snapshot(out);
    const resume = (config: SftConfigInput, data = docs) => runSft(config, { model: new GptOssModel(cfg, { seed: 1 }), data, outDir: out, quiet: true, resume: true });

    await assert.rejects(runSft(base, { model, data: docs, outDir: out, quiet: true }), /already holds checkpoints.*pass resume/);
    await assert.rejects(resume({ ...base, lr: 1e-3 }), /config differs in lr \(0\.005 → 0\.001\)/);
    await assert.rejects(resume({ ...base, contextLossWeight: 0.5 }), /config differs in contextLossWeight \(0 → 0\.5\)/);
    await assert.rejects(resume(base, docs.slice(1)), /training data differ/);
    assert.deepEqual(snapshot(out), before);

    const optPath = join(ckpt, 'optimizer.safetensors');
    const optBytes = readFileSync(optPath);
    truncateSync(optPath, 100);
    await assert.rejects(resume(base), /cannot resume from checkpoint .*step-00000003: the optimizer state is unreadable.*Nothing was changed/s);
    writeFileSync(optPath, optBytes);

    const statePath = join(ckpt, 'trainer.json');
    const state = readFileSync(statePath);
    rmSync(statePath);
    await assert.rejects(resume(base), /trainer\.json is missing or unreadable .*partial checkpoint/s);
    writeFileSync(statePath, '{"format": "longrun-sft-checkpoint", "version": 1, "step": -2}');
    await assert.rejects(resume(base), /trainer\.json is not a valid SFT trainer state/);
    writeFileSync(statePath, state);

    const weights = join(ckpt, 'model.safetensors');
    const wBytes = readFileSync(weights);
    truncateSync(weights, wBytes.length - 8);
    await assert.rejects(resume(base), /the model weights are unreadable/);
    writeFileSync(weights, wBytes);
    assert.deepEqual(snapshot(out), before, 'failed resumes changed nothing');

    const other = new GptOssModel(tinyConfig(tokenizer.vocabSize + 1), { seed: 1 });
    await assert.rejects(runSft(base, { model: other, data: docs, outDir: out, quiet: true, resume: true }), /model config differs/);
    other.dispose();

    // Restored intact, it resumes.
    const ok = await resume(base);
    assert.equal(ok.resumedFromStep, 3);
    assert.equal(ok.steps, 7);
    model.dispose();
  });
});

test('contextLossWeight: the logged loss stays the assistant NLL, the other targets are logged and trained on', async () => {
  await withTempDir(async (dir) => {
    const run = async (contextLossWeight: number) => {
      const model = new GptOssModel(cfg, { seed: 4 });
      const r = await runSft({ ...base, steps: 2, contextLossWeight }, { model, data: docs, outDir: join(dir, String(contextLossWeight)), quiet: true });
      const w = model.param('model.embed_tokens.weight').toArray();
      model.dispose();
      return { first: r.history[0], second: r.history[1], w };
    };
    const plain = await run(0), mixed = await run(0.5);
    // Step 1 starts from the same weights: the same assistant NLL and token count whatever the context weight.
    assert.ok(Math.abs(plain.first.loss - mixed.first.loss) < 1e-6, `${plain.first.loss} vs ${mixed.first.loss}`);
    assert.equal(plain.first.lossTokens, mixed.first.lossTokens);
    assert.equal(plain.first.contextLoss, undefined);
    assert.ok(mixed.first.contextLoss! > 0 && Number.isFinite(mixed.first.contextLoss));
    // The gradient differs, so the updated weights and the next step's loss do.
    assert.notDeepEqual(plain.w, mixed.w);
    assert.notEqual(plain.second.loss, mixed.second.loss);
  });
});
