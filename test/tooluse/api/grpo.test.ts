import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { BpeTokenizer } from '../../../src/llm/bpe.ts';
import type { GptOssModel } from '../../../src/model/model.ts';
import { buildRun, parseRunFile } from '../../../src/recipes/train-setup.ts';
import { GrpoTrainer } from '../../../src/rl/trainer.ts';
import { unregisterEnv } from '../../../src/tooluse/api/index.ts';

const API = pathToFileURL(resolve('src/index.ts')).href;

/**
 * A user's env module: one tool; the reward alternates 0, 1, 0, … over the scored episodes (so every group of two
 * is informative whatever the untrained model says); the reward of task \`bad\` throws.
 */
const MODULE = `
import { defineEnv } from ${JSON.stringify(API)};
let scored = 0;
export function alternatingEnv(options: { id: string; train: string[] }) {
  return defineEnv({
    id: options.id,
    instructions: 'Answer briefly.',
    tools: [{ name: 'echo', description: 'Echoes.', parameters: { type: 'object', properties: { t: { type: 'string' } } }, run: async (a: { t?: string }) => a.t ?? '' }],
    tasks: { train: options.train.map((id) => ({ id, prompt: 'Say hi.' })), val: [{ id: 'val-1', prompt: 'Say hi.' }] },
    family: (t) => (t.id === 'bad' ? 'broken' : 'fine'),
    maxTurns: 2,
    reward: (ep) => {
      if (ep.task.id === 'bad') throw new Error('grader crashed');
      return scored++ % 2;
    },
  });
}
`;

function runFile(dir: string, name: string, train: string[], steps: number): Record<string, unknown> {
  return {
    env: { module: join(dir, 'env.ts'), export: 'alternatingEnv', options: { id: `test/${name}-v0`, train }, valSplit: 'val' },
    policy: { type: 'gpt-oss', preset: 'tiny-1m', tokenizer: join(dir, 'tokenizer.json'), lr: 0.002, modelConfig: { max_position_embeddings: 1024 } },
    engine: { type: 'in-process', batching: 'step', maxBatchSize: 4 },
    grpo: {
      data: { trainBatchSize: train.length },
      rollout: { n: 2, maxTurns: 2, maxResponseTokens: 24, maxTokensPerTurn: 10, concurrency: 2 },
      trainer: { totalSteps: steps, testFreq: steps, valN: 2, metricsFile: join(dir, `${name}.metrics.jsonl`), episodesFile: join(dir, `${name}.episodes.jsonl`) },
    },
  };
}

/** Every weight of the model, in one array. */
const weightsOf = (model: GptOssModel) => Float32Array.from([...model.parameters().values()].flatMap((t) => [...t.data()]));

const rows = (path: string) => readFileSync(path, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);

describe('GRPO on a defined env through a run file (env: { module })', () => {
  it('trains end to end; episodes whose reward throws are recorded as env errors, counted and left out of the update', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-env-grpo-'));
    try {
      writeFileSync(join(dir, 'env.ts'), MODULE);
      BpeTokenizer.train('Answer briefly. Say hi. echo Echoes. hi hello\n'.repeat(30), { vocabSize: 300 }).save(join(dir, 'tokenizer.json'));

      const { run, trainer } = parseRunFile(runFile(dir, 'mixed', ['good', 'bad'], 2));
      const built = await buildRun(run);
      assert.deepEqual(built.deps.trainTasks, ['good', 'bad']);
      assert.deepEqual(built.deps.valTasks, ['val-1']);
      assert.equal(built.deps.taskFamily?.('bad'), 'broken');
      assert.equal(built.conversation?.systemPrompt, 'Answer briefly.');
      assert.deepEqual(built.conversation?.tools.map((t) => t.function.name), ['echo']);
      const t = new GrpoTrainer({ ...built.deps, config: trainer });
      const before = weightsOf(built.model!);
      const { history, validations } = await t.fit();
      assert.equal(history.length, 2);
      for (const m of history) {
        assert.equal(m['rollout/env_errors'], 2, 'both episodes of task bad, every step');
        assert.ok(m['reward/mean']! >= 0 && m['reward/mean']! <= 1);
        assert.ok(Number.isFinite(m['actor/pg_loss']), 'the good group was trained on');
      }
      assert.notDeepEqual(weightsOf(built.model!), before, 'the weights moved');
      assert.equal(validations.at(-1)!['val/env_errors'], 0);
      const episodes = rows(join(dir, 'mixed.episodes.jsonl'));
      const train = episodes.filter((e) => e.kind === 'train');
      assert.deepEqual(train.map((e) => e.taskId), ['good', 'good', 'good', 'good'], 'only the good task is in the training rows');
      assert.ok(train.every((e) => e.reward === 0 || e.reward === 1));
      const errors = episodes.filter((e) => e.kind === 'env_error');
      assert.equal(errors.length, 4);
      assert.ok(errors.every((e) => e.taskId === 'bad' && e.phase === 'train' && e.family === 'broken' && /env test\/mixed-v0: the reward function threw on task bad: grader crashed/.test(String(e.envError))));
      assert.deepEqual(rows(join(dir, 'mixed.metrics.jsonl')).map((m) => `${m.kind}${m.step}`), ['val0', 'train1', 'train2', 'val2']);
      await built.close?.();

      // A step whose episodes all fail updates nothing and training goes on to the end.
      const all = parseRunFile(runFile(dir, 'broken', ['bad'], 2));
      const b = await buildRun(all.run);
      const weights = weightsOf(b.model!);
      const h = (await new GrpoTrainer({ ...b.deps, config: { ...all.trainer, trainer: { ...all.trainer.trainer, testFreq: 0 } } }).fit()).history;
      assert.deepEqual(h.map((m) => [m.step, m['rollout/env_errors'], 'reward/mean' in m]), [[1, 2, false], [2, 2, false]]);
      assert.deepEqual(weightsOf(b.model!), weights, 'no update');
    } finally {
      unregisterEnv('test/mixed-v0');
      unregisterEnv('test/broken-v0');
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('a run file takes exactly one of task and env, and env\'s own keys', () => {
    const base = { policy: { type: 'gpt-oss', preset: 'tiny-1m', tokenizer: 't.json' }, grpo: { data: { trainBatchSize: 1 }, trainer: { totalSteps: 1 } } };
    assert.throws(() => parseRunFile({ ...base, task: 'toy', env: { id: 'x' } }), /give exactly one of task .* and env/);
    assert.throws(() => parseRunFile(base), /give exactly one of task .* and env/);
    assert.throws(() => parseRunFile({ ...base, env: {} }), /env: give env.module .* or env.id/);
    assert.throws(() => parseRunFile({ ...base, env: { id: 'x', export: 'y' } }), /env.export applies to env.module/);
    assert.throws(() => parseRunFile({ ...base, env: { id: 'x' }, taskOptions: { split: 'a' } }), /taskOptions: moved to retail\.tasks.*\n.*env: takes split, valSplit and maxTasks itself/);
    assert.throws(() => parseRunFile({ ...base, env: { id: 'x' }, retail: { tasks: { split: 'a' } } }), /retail: the retail recipe's section goes with task retail-v0, retail-v1, retail-synth; this is an env: run/);
    assert.throws(() => parseRunFile({ ...base, env: { id: 'x', tasks: 3 } }), /env: Unrecognized key/);
    const { run } = parseRunFile({ ...base, env: { module: './m.ts' } });
    assert.deepEqual(run.env, { module: './m.ts', split: 'train' });
  });
});
