import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buildRun, parseRunFile } from '../../src/recipes/train-setup.ts';
import { loadModel, saveModel } from '../../src/model/checkpoint/index.ts';
import { GptOssModel } from '../../src/model/model.ts';
import { presetConfig } from '../../src/model/config.ts';
import { trainCommand } from '../../src/cli/train.ts';
import { createToySetup } from '../../src/recipes/toy/toy-task.ts';

/** A saved tiny-1m checkpoint (window 32 on its sliding layers) for the toy task's words, with sinks that matter. */
function savedStart(dir: string): string {
  const model = new GptOssModel(presetConfig('tiny-1m', { vocab_size: createToySetup().tokenizer.vocabSize }), { seed: 1, grads: false });
  for (let i = 0; i < model.config.num_hidden_layers; i++) model.param(`model.layers.${i}.self_attn.sinks`).data().fill(2);
  const out = join(dir, 'start');
  saveModel(out, model);
  model.dispose();
  return out;
}

/** Each position's log-prob of the next token. */
const logprobs = (model: GptOssModel, tokens: Int32Array): Float32Array =>
  model.logprobs({ tokens, targets: Int32Array.from(tokens, (_, i) => (i + 1 < tokens.length ? tokens[i + 1] : -1)) }).logprobs;

const maxAbsDiff = (a: Float32Array, b: Float32Array) => a.reduce((m, x, i) => Math.max(m, Math.abs(x - b[i])), 0);

describe('policy.modelConfig with a checkpoint, and policy.sinks', () => {
  it('loadModel takes a narrower window (same weights, other logits past the window) and refuses keys that change weights', () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-attn-keys-'));
    try {
      const start = savedStart(dir);
      const tokens = Int32Array.from({ length: 48 }, (_, i) => (i * 7 + 3) % 26);
      const full = loadModel(start);
      const narrow = loadModel(start, { config: { sliding_window: 4 } });
      assert.equal(full.config.sliding_window, 32);
      assert.equal(narrow.config.sliding_window, 4);
      assert.deepEqual(narrow.config.layer_types, full.config.layer_types);
      for (const [name, p] of full.parameters()) assert.deepEqual(narrow.param(name).data(), p.data(), name);
      const a = logprobs(full, tokens);
      const b = logprobs(narrow, tokens);
      // The first 4 positions see the same keys under both windows; later ones do not on the sliding layers.
      assert.ok(maxAbsDiff(a.subarray(0, 3), b.subarray(0, 3)) < 1e-6);
      assert.ok(maxAbsDiff(a, b) > 1e-3);
      full.dispose();
      narrow.dispose();
      assert.throws(() => loadModel(start, { config: { hidden_size: 128 } as never }), /overridden only in sliding_window, layer_types, max_position_embeddings .*not hidden_size/);
      assert.throws(() => loadModel(start, { config: { sliding_window: 0 } }), /invalid gpt-oss config: sliding_window/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a run file trains from a checkpoint at another window and without the sinks; the window is saved with the weights', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-attn-keys-'));
    try {
      const start = savedStart(dir);
      const raw = {
        task: 'toy',
        policy: { type: 'gpt-oss', checkpoint: start, modelConfig: { sliding_window: 8 }, sinks: 'ignore', lr: 0.001 },
        engine: { type: 'in-process', batching: 'step', maxBatchSize: 4 },
        grpo: {
          data: { trainBatchSize: 1 },
          rollout: { n: 2, maxTurns: 2, maxResponseTokens: 16, maxTokensPerTurn: 6 },
          trainer: { totalSteps: 1, saveFreq: 1, checkpointDir: join(dir, 'ckpt') },
        },
      };
      const built = await buildRun(parseRunFile(raw).run);
      assert.equal(built.model!.config.sliding_window, 8);
      assert.equal(built.model!.sinks, 'ignore');
      await built.close?.();
      const exact = await buildRun(parseRunFile({ ...raw, policy: { ...raw.policy, sinks: undefined, modelConfig: undefined } }).run);
      assert.equal(exact.model!.config.sliding_window, 32);
      assert.equal(exact.model!.sinks, 'exact');
      await exact.close?.();

      writeFileSync(join(dir, 'run.json'), JSON.stringify(raw));
      assert.equal(await trainCommand({ config: join(dir, 'run.json') }, () => {}), 0);
      const saved = JSON.parse(readFileSync(join(dir, 'ckpt', 'step-00000001', 'policy', 'model', 'config.json'), 'utf8')) as { sliding_window: number };
      assert.equal(saved.sliding_window, 8);

      assert.throws(() => parseRunFile({ ...raw, policy: { ...raw.policy, sinks: 'drop' } }), /sinks/);
      await assert.rejects(buildRun(parseRunFile({ ...raw, policy: { ...raw.policy, modelConfig: { num_hidden_layers: 3 } } }).run), /not num_hidden_layers/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
