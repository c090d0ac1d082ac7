/**
 * Agent programs on the real tiny model: the log-probs the gateway recorded are the ones the trainer recomputes for
 * the recorded ids (token-exact rows, also across a split), and `longrun train` runs GRPO steps on program rollouts
 * from a run file's `rollout:` section. The random tiny model writes text (it calls no tools).
 */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { trainCommand } from '../../src/cli/train.ts';
import { BpeTokenizer } from '../../src/llm/bpe.ts';
import { createChatFormat } from '../../src/llm/formats.ts';
import { presetConfig } from '../../src/model/config.ts';
import { GptOssModel } from '../../src/model/model.ts';
import { GptOssPolicy } from '../../src/rl/model-policy.ts';
import { collate } from '../../src/rollout/collate.ts';
import { createModelEngine } from '../../src/rollout/model-engine.ts';
import { ProgramGroupSampler } from '../../src/rollout/program-sampler.ts';
import { startGateway, type GatewayHandle } from '../../src/serve/gateway.ts';

const CHATTY = join('test', 'rollout', 'program-fixtures', 'chatty.mjs');
const bpe = BpeTokenizer.train('please say something short about the weather and the sea, go on\n'.repeat(30), { vocabSize: 320 });
const tasks = [{ id: 'a', prompt: 'say something' }, { id: 'b', prompt: 'about the sea' }];

describe('program rollouts on the real tiny model', () => {
  const format = createChatFormat('harmony', bpe);
  const model = new GptOssModel(presetConfig('tiny-1m', { vocab_size: bpe.vocabSize }), { seed: 3, grads: false });
  let gw: GatewayHandle;
  before(async () => {
    gw = await startGateway({ engine: createModelEngine(model, { maxBatchSize: 8 }), format, contextLength: model.config.max_position_embeddings, maxResponseTokens: 400 });
  });
  after(async () => gw.close());

  it('records log-probs that the trainer\'s recomputation matches within 1e-5, on one row and on split rows', async () => {
    for (const edit of ['0', '1']) {
      const sampler = new ProgramGroupSampler({ gateway: gw, tasks: new Map(tasks.map((t) => [t.id, t])), program: { command: process.execPath, args: [CHATTY], env: { EDIT_SYSTEM: edit }, timeoutMs: 60_000 } });
      const out = await sampler.sample({ groups: tasks.map((t) => ({ taskId: t.id, uid: t.id })), n: 2, seed: 5, temperature: 1, kind: 'train' });
      assert.equal(out.metrics['programs/failed'], 0, JSON.stringify(out.outcomes.map((o) => o.failure)));
      const trajectories = out.groups.flatMap((g) => g.trajectories);
      assert.equal(trajectories.length, edit === '1' ? 8 : 4, edit === '1' ? 'each rollout splits once' : 'one row per rollout');
      if (edit === '1') assert.equal(out.metrics['programs/split/system_changed'], 4);
      for (const t of trajectories) assert.equal(t.responseMask.reduce((a, b) => a + b, 0) > 0, true);
      const batch = collate(trajectories, { padId: 0, uids: out.groups.flatMap((g) => g.trajectories.map(() => g.uid)), temperature: 1 });
      const policy = new GptOssPolicy(model, { optimizer: { lr: 1e-3, weightDecay: 0 }, reference: null });
      const { logprobs } = await policy.logprobs(batch, { temperature: 1, grad: false, entropy: false });
      const rollout = batch.tensor('rollout_log_probs').data;
      const mask = batch.tensor('response_mask').data;
      let worst = 0, n = 0;
      for (let k = 0; k < mask.length; k++) if (mask[k]) {
        worst = Math.max(worst, Math.abs(logprobs[k]! - rollout[k]!));
        n++;
      }
      assert.ok(n > 20, `${n} sampled tokens`);
      assert.ok(worst < 1e-5, `recomputed vs recorded log-probs differ by ${worst}`);
    }
  });
});

describe('longrun train with a rollout section (task: program)', () => {
  let dir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'longrun-program-train-'));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('runs GRPO steps on program rollouts that split, and reports the splits', async () => {
    bpe.save(join(dir, 'tokenizer.json'));
    writeFileSync(join(dir, 'tasks.jsonl'), [...tasks, { id: 'c', prompt: 'x', crash: true }].map((t) => JSON.stringify(t)).join('\n'));
    const metricsFile = join(dir, 'metrics.jsonl');
    writeFileSync(join(dir, 'run.yaml'), [
      'task: program',
      `policy: { type: gpt-oss, preset: tiny-1m, tokenizer: ${JSON.stringify(join(dir, 'tokenizer.json'))}, format: harmony, lr: 0.001 }`,
      'engine: { type: in-process, batching: step, maxBatchSize: 8 }',
      'rollout:',
      `  command: ${JSON.stringify(process.execPath)}`,
      `  args: [${JSON.stringify(CHATTY)}]`,
      '  env: { EDIT_SYSTEM: "1" }',
      `  tasks: ${JSON.stringify(join(dir, 'tasks.jsonl'))}`,
      `  failuresFile: ${JSON.stringify(join(dir, 'failures.jsonl'))}`,
      '  timeoutMs: 60000',
      'grpo:',
      '  data: { trainBatchSize: 3 }',
      '  rollout: { n: 2, maxResponseTokens: 400, concurrency: 4 }',
      `  trainer: { totalSteps: 2, testFreq: 2, valN: 1, metricsFile: ${JSON.stringify(metricsFile)} }`,
    ].join('\n'));
    const lines: string[] = [];
    assert.equal(await trainCommand({ config: join(dir, 'run.yaml') }, (l) => lines.push(l)), 0);
    const metrics = readFileSync(metricsFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    const train = metrics.filter((m) => m.kind === 'train');
    assert.equal(train.length, 2);
    for (const m of train) {
      // Task c's program crashes: its two rollouts are env errors the trainer leaves out; the others train.
      assert.equal(m['programs/rollouts'], 6);
      assert.equal(m['programs/failed/crashed'], 2);
      assert.equal(m['rollout/env_errors'], 2);
      assert.equal(m['programs/split/system_changed'], 4);
      assert.equal(m['programs/rows'], 8);
      assert.ok(m['rollout/logprob_max_abs_diff'] < 1e-4, `on-policy: ${m['rollout/logprob_max_abs_diff']}`);
      assert.ok(Number.isFinite(m['actor/pg_loss']));
    }
    assert.ok(metrics.some((m) => m.kind === 'val' && m.step === 2 && m['val/programs/rollouts'] === 3 && m['val/env_errors'] === 1));
    const failures = readFileSync(join(dir, 'failures.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l));
    assert.equal(failures.length, 6, 'two per training step, one per validation (steps 0 and 2)');
    assert.ok(failures.every((f) => f.taskId === 'c' && f.failure === 'crashed' && /crashed on purpose/.test(f.stderrTail)));
  });

  it('longrun train runs GRPO on the two example programs (the openai SDK and the AI SDK) through the gateway', { timeout: 600_000 }, async () => {
    // The examples as shipped, on the committed retail model (examples/openai-agent/train.yaml): one step each, two
    // tasks × two programs. The model has never seen these tasks, so the reward is rarely 1: the run shows that the
    // real packages' requests go through the gateway, are recorded and train, not a skill.
    for (const example of ['openai-agent', 'ai-sdk-agent']) {
      const dir = mkdtempSync(join(tmpdir(), `longrun-${example}-`));
      try {
        const config = join(dir, 'train.yaml');
        writeFileSync(config, [
          'task: program',
          'policy: { type: gpt-oss, checkpoint: models/retail-base, tokenizer: models/retail-base/tokenizer.json, format: harmony, lr: 1.0e-5 }',
          'engine: { type: in-process, batching: step, maxBatchSize: 8 }',
          `rollout: { command: node examples/${example}/agent.mjs, tasks: examples/${example}/tasks.json, timeoutMs: 300000, reward: program, concurrency: 4, failuresFile: ${join(dir, 'failures.jsonl')} }`,
          'grpo:',
          '  data: { trainBatchSize: 2 }',
          '  rollout: { n: 2, maxResponseTokens: 1024, maxTokensPerTurn: 96, concurrency: 4 }',
          `  trainer: { totalSteps: 1, testFreq: 0, metricsFile: ${join(dir, 'metrics.jsonl')}, checkpointDir: ${join(dir, 'ckpt')} }`,
        ].join('\n'));
        assert.equal(await trainCommand({ config }, () => undefined), 0, example);
        const metrics = readFileSync(join(dir, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, number | string>);
        const train = metrics.filter((m) => m.kind === 'train');
        assert.equal(train.length, 1, example);
        assert.equal(train[0]!['programs/rollouts'], 4, example);
        assert.equal(train[0]!['programs/failed'] ?? 0, 0, `${example}: no program failed`);
        assert.ok((train[0]!['programs/rows'] as number) >= 4, `${example}: every rollout recorded`);
        assert.ok(Number.isFinite(train[0]!['reward/mean'] as number), example);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    }
  });

  it('refuses a rollout section without task program, and the reverse', async () => {
    const { parseRunFile } = await import('../../src/recipes/train-setup.ts');
    assert.throws(() => parseRunFile({ task: 'program', policy: { type: 'gpt-oss' }, grpo: {} }), /rollout: a rollout section/);
    assert.throws(() => parseRunFile({ task: 'toy', policy: { type: 'tabular' }, rollout: { command: 'x', tasks: 't.json' }, grpo: {} }), /rollout: a rollout section/);
    const G = { data: { trainBatchSize: 1 }, trainer: { totalSteps: 1 } };
    // With an env: section the env's tasks (and optionally its reward) go to the programs.
    assert.equal(parseRunFile({ env: { module: 'my-env.ts' }, policy: { type: 'gpt-oss' }, rollout: { command: 'x', reward: 'env' }, grpo: G }).run.rollout?.reward, 'env');
    const { startProgramRollouts } = await import('../../src/rollout/program-sampler.ts');
    const o = { engine: { generate: async () => [] }, format: createChatFormat('harmony', bpe), contextLength: 100 };
    await assert.rejects(startProgramRollouts({ ...parseRunFile({ task: 'program', policy: { type: 'gpt-oss' }, rollout: { command: 'x' }, grpo: G }).run.rollout! }, o), /rollout\.tasks: give a tasks file/);
    await assert.rejects(startProgramRollouts({ ...parseRunFile({ task: 'program', policy: { type: 'gpt-oss' }, rollout: { command: 'x', tasks: 't.json', reward: 'env' }, grpo: G }).run.rollout! }, o), /reward: env needs an env: section/);
  });
});
