/**
 * `longrun eval --config RUN --checkpoint DIR` takes the folders a run leaves, not only the model folder in them: a
 * GRPO checkpoint step folder (its policy/model), a GRPO checkpoint folder or its `latest` file (the newest step), an
 * SFT checkpoint folder (the model files beside the optimizer state) and an SFT stage's output folder. A folder that
 * is none of these is an error listing what was looked for.
 */
import assert from 'node:assert/strict';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { evalConfigCommand, type EvalCommandOptions } from '../../src/cli/eval.ts';
import { resolveModelFolder } from '../../src/cli/checkpoint-arg.ts';
import { BpeTokenizer } from '../../src/llm/bpe.ts';
import { saveModel } from '../../src/model/checkpoint/model-io.ts';
import { presetConfig } from '../../src/model/config.ts';
import { GptOssModel } from '../../src/model/model.ts';

describe('eval --checkpoint: model folders inside GRPO and SFT checkpoints', () => {
  let dir: string;
  let model: string;
  let runFile: string;
  const grpo = () => join(dir, 'grpo');
  const step10 = () => join(dir, 'grpo', 'step-00000010');
  const sftStep = () => join(dir, 'sft', 'checkpoints', 'step-00000050');
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'longrun-eval-checkpoint-'));
    const bpe = BpeTokenizer.train('You operate a counter that starts at 0. Use the tools to change and read it. Bring the counter to 4 with add, then tell me its value. add read n integer'.repeat(4), { vocabSize: 400 });
    bpe.save(join(dir, 'tokenizer.json'));
    const m = new GptOssModel(presetConfig('tiny-1m', { vocab_size: bpe.vocabSize, max_position_embeddings: 2048 }), { seed: 3, grads: false });
    model = join(dir, 'model');
    saveModel(model, m);
    m.dispose();
    // The layouts trainer.ts and sft-checkpoint.ts write (their other files do not matter here).
    cpSync(model, join(dir, 'grpo', 'step-00000005', 'policy', 'model'), { recursive: true });
    cpSync(model, join(step10(), 'policy', 'model'), { recursive: true });
    writeFileSync(join(step10(), 'trainer.json'), '{}');
    writeFileSync(join(grpo(), 'latest'), '10');
    cpSync(model, sftStep(), { recursive: true });
    writeFileSync(join(sftStep(), 'trainer.json'), '{}');
    runFile = join(dir, 'run.yaml');
    writeFileSync(runFile, stringify({
      env: { module: 'test/fixtures/envs/counter.ts', split: 'train', valSplit: 'test' },
      policy: { type: 'gpt-oss', checkpoint: model, tokenizer: join(dir, 'tokenizer.json'), format: 'harmony' },
      grpo: { data: { trainBatchSize: 2 }, rollout: { maxTurns: 2, maxResponseTokens: 64, maxTokensPerTurn: 6 }, trainer: { totalSteps: 1, valTemperature: 0 } },
    }));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('finds the model folder of each layout, and lists what it looked for when there is none', () => {
    assert.deepEqual(resolveModelFolder(model), { dir: model });
    assert.equal(resolveModelFolder(step10()).dir, join(step10(), 'policy', 'model'));
    assert.equal(resolveModelFolder(grpo()).dir, join(step10(), 'policy', 'model'), 'the step `latest` names, not the other one');
    assert.equal(resolveModelFolder(join(grpo(), 'latest')).dir, join(step10(), 'policy', 'model'));
    assert.match(resolveModelFolder(grpo()).note!, /a GRPO checkpoint folder \(its latest step\)/);
    assert.deepEqual(resolveModelFolder(sftStep()), { dir: sftStep() }, 'an SFT checkpoint holds config.json and model.safetensors itself');
    assert.equal(resolveModelFolder(join(dir, 'sft')).dir, sftStep(), "an SFT stage's folder: its newest checkpoint");
    const empty = join(dir, 'empty');
    mkdirSync(empty);
    assert.throws(() => resolveModelFolder(empty), (e: Error) => {
      for (const looked of ['config.json', join('policy', 'model'), 'latest', join('checkpoints', 'step-NNNNNNNN')]) assert.ok(e.message.includes(join(empty, looked)), `${looked} in: ${e.message}`);
      return /--checkpoint .*empty: no model found; looked for/.test(e.message);
    });
    assert.throws(() => resolveModelFolder(join(dir, 'nothing')), /--checkpoint .*nothing does not exist/);
    writeFileSync(join(dir, 'grpo', 'latest'), 'x');
    try {
      assert.throws(() => resolveModelFolder(grpo()), /latest should hold the step number of the newest GRPO checkpoint but holds "x"/);
    } finally {
      writeFileSync(join(grpo(), 'latest'), '10');
    }
  });

  it('evaluates a GRPO step folder and an SFT checkpoint folder as the model in them', { timeout: 240_000 }, async () => {
    const opts = (checkpoint: string, out: string): EvalCommandOptions => ({
      config: runFile, checkpoint, out, trials: 1, seed: 1, concurrency: 1, progress: false,
    } as EvalCommandOptions);
    const explicit = (k: keyof EvalCommandOptions) => ['config', 'checkpoint', 'out', 'trials'].includes(k);
    const lines: string[] = [];
    const rows = (out: string) => readFileSync(join(out, 'trajectories.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { taskId: string; reward: number; messages: unknown }).map((r) => [r.taskId, r.reward, r.messages]);
    const ref = join(dir, 'eval-model');
    assert.equal(await evalConfigCommand(opts(model, ref), explicit, (l) => lines.push(l)), 0);
    for (const [checkpoint, name] of [[step10(), 'eval-grpo'], [sftStep(), 'eval-sft']] as const) {
      const out = join(dir, name);
      assert.equal(await evalConfigCommand(opts(checkpoint, out), explicit, (l) => lines.push(l)), 0);
      const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as { checkpoint: string; episodes: number };
      assert.equal(summary.episodes, 2);
      assert.equal(summary.checkpoint, relative(process.cwd(), resolve(checkpoint === step10() ? join(step10(), 'policy', 'model') : checkpoint)));
      // The same weights and seeds: the same episodes as the model folder's.
      assert.deepEqual(rows(out), rows(ref));
    }
    assert.ok(lines.some((l) => l.includes('a GRPO checkpoint step folder, the model in')), lines.join('\n'));
  });
});
