import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { trainCommand } from '../../src/cli/train.ts';
import { presetConfig } from '../../src/model/config.ts';
import { GptOssModel } from '../../src/model/model.ts';
import { parseRunFile } from '../../src/recipes/train-setup.ts';
import { createToySetup } from '../../src/recipes/toy/toy-task.ts';
import { startTrainerServer } from '../../src/serve/trainer-server.ts';

const BASE = 'longrun/toy-tiny-1m';

function runFile(dir: string, backend?: string): string {
  const file = join(dir, 'run.yaml');
  writeFileSync(file, [
    'task: toy',
    'policy: { type: gpt-oss, preset: tiny-1m, lr: 0.01, seed: 0 }',
    'engine: { type: in-process, batching: step, maxBatchSize: 8 }',
    ...(backend ? [`backend: ${backend}`] : []),
    'grpo:',
    '  data: { trainBatchSize: 2 }',
    '  rollout: { n: 4, maxTurns: 2, maxResponseTokens: 12, maxTokensPerTurn: 6 }',
    // The untrained model never solves a toy task; DAPO's overlong penalty gives its samples different rewards.
    '  algorithm: { overlongBuffer: { enable: true, len: 10 } }',
    // Two mini-batches per step: the second is off-policy, so the PPO clip and ratio statistics are exercised.
    '  actor: { ppoMiniBatchSize: 1, clipRatioHigh: 0.28 }',
    '  trainer:',
    '    totalSteps: 2',
    '    seed: 3',
    '    testFreq: 2',
    '    valN: 2',
    '    saveFreq: 1',
    `    checkpointDir: ${JSON.stringify(join(dir, 'ckpt'))}`,
    `    metricsFile: ${JSON.stringify(join(dir, 'metrics.jsonl'))}`,
  ].join('\n'));
  return file;
}

type Row = Record<string, number | string>;
const rows = (dir: string): Row[] => readFileSync(join(dir, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Row);

/** Metrics that measure the machine, not the run, or that only one side can report. */
const MACHINE = /^(timing|perf)\//;
const IN_PROCESS_ONLY = new Set(['actor/entropy']);

function compare(local: Row[], remote: Row[]): string[] {
  assert.deepEqual(remote.map((r) => `${r.kind}${r.step}`), local.map((r) => `${r.kind}${r.step}`));
  const compared: string[] = [];
  local.forEach((l, i) => {
    const r = remote[i];
    for (const [k, v] of Object.entries(l)) {
      if (MACHINE.test(k) || IN_PROCESS_ONLY.has(k) || typeof v !== 'number') continue;
      const w = r[k];
      assert.equal(typeof w, 'number', `${l.kind} step ${l.step}: ${k} is missing through the backend`);
      // Rewards, counts and lengths are equal (the same tokens were sampled); losses and log-prob statistics are
      // float sums over packed sequences of different shapes.
      const tol = k === 'rollout/logprob_max_abs_diff' ? 1e-4 : 1e-4 * Math.max(1, Math.abs(v));
      assert.ok(Math.abs((w as number) - v) <= tol, `${l.kind} step ${l.step}: ${k} ${w} through the backend vs ${v} in process`);
      compared.push(k);
    }
  });
  return compared;
}

describe('longrun train with backend: { type: tinker } through a local longrun serve trainer', () => {
  it('trains the toy task end to end with the same metrics as in process, checkpoints on the server and resumes from them', { timeout: 600_000 }, async () => {
    const root = mkdtempSync(join(tmpdir(), 'longrun-train-tinker-'));
    const vocab = createToySetup().tokenizer.vocabSize;
    // The server's base model is the run's preset model, built the way `longrun train` builds it.
    const srv = await startTrainerServer({ baseModel: BASE, makeBase: () => new GptOssModel(presetConfig('tiny-1m', { vocab_size: vocab }), { seed: 0 }), checkpointDir: join(root, 'server') });
    try {
      const localDir = join(root, 'local');
      const remoteDir = join(root, 'remote');
      const lines: string[] = [];
      mkdirSync(localDir, { recursive: true });
      mkdirSync(remoteDir, { recursive: true });
      assert.equal(await trainCommand({ config: runFile(localDir) }, () => undefined), 0);
      assert.equal(await trainCommand({ config: runFile(remoteDir, `{ type: tinker, baseUrl: ${JSON.stringify(srv.url)}, model: ${BASE} }`) }, (l) => lines.push(l)), 0);
      assert.match(lines[0], /^backend: the policy trains on http:\/\/127\.0\.0\.1:\d+ \(base model longrun\/toy-tiny-1m, every weight\)/);
      const compared = compare(rows(localDir), rows(remoteDir));
      for (const k of ['reward/mean', 'success/mean', 'response_length/mean', 'actor/pg_loss', 'actor/pg_clipfrac', 'actor/ppo_kl', 'actor/grad_norm', 'val/reward_mean']) {
        assert.ok(compared.includes(k), `${k} was compared`);
      }
      const train = rows(localDir).filter((r) => r.kind === 'train');
      assert.ok(train.every((r) => (r['adv/mean_abs'] as number) > 0 && (r['actor/grad_norm'] as number) > 0), 'every step has advantages and a gradient');
      assert.ok(train.some((r) => Math.abs(r['actor/ppo_kl'] as number) > 1e-4), 'the second mini-batch is off-policy');
      // The checkpoint is on the server; the run folder records where.
      const state = JSON.parse(readFileSync(join(remoteDir, 'ckpt', 'step-00000002', 'policy', 'tinker-state.json'), 'utf8')) as { path: string };
      assert.match(state.path, /^tinker:\/\/.+\/weights\/step-00000002-policy$/);
      assert.ok(!existsSync(join(remoteDir, 'ckpt', 'step-00000002', 'policy', 'model')), 'no weights were written locally');
      // One more step each: the remote run resumes from its server-side checkpoint (load_state with the optimizer).
      assert.equal(await trainCommand({ config: runFile(localDir), steps: '3' }, () => undefined), 0);
      const more: string[] = [];
      assert.equal(await trainCommand({ config: runFile(remoteDir, `{ type: tinker, baseUrl: ${JSON.stringify(srv.url)}, model: ${BASE} }`), steps: '3' }, (l) => more.push(l)), 0);
      assert.ok(more.some((l) => /resumed from .* at step 2/.test(l)));
      compare(rows(localDir), rows(remoteDir));
      assert.equal(rows(remoteDir).filter((r) => r.kind === 'train').length, 3);
    } finally {
      await srv.close();
      rmSync(root, { recursive: true, force: true });
    }
  });

  it('validates the backend section', () => {
    const base = { task: 'toy', policy: { type: 'gpt-oss', preset: 'tiny-1m' }, grpo: { data: { trainBatchSize: 1 }, trainer: { totalSteps: 1 } } };
    const backend = { type: 'tinker', baseUrl: 'http://127.0.0.1:8010', model: 'm' };
    assert.doesNotThrow(() => parseRunFile({ ...base, backend: { ...backend, lora: { rank: 8 } } }));
    assert.throws(() => parseRunFile({ ...base, backend: { ...backend, baseUrl: 'nope' } }), /backend\.baseUrl/);
    assert.throws(() => parseRunFile({ ...base, backend: { ...backend, apiKey: 'tml-x' } }), /backend: Unrecognized key.*apiKey/s);
    assert.throws(() => parseRunFile({ ...base, backend: { ...backend, lora: { rank: 0 } } }), /backend\.lora\.rank/);
    assert.throws(() => parseRunFile({ ...base, backend: { type: 'vllm', model: 'm' } }), /backend\.type/);
    assert.throws(() => parseRunFile({ ...base, backend: { ...backend, model: '' } }), /backend\.model/);
    assert.throws(() => parseRunFile({ ...base, policy: { type: 'tabular' }, backend }), /policy\.type: a run on a training backend needs policy\.type gpt-oss/);
    assert.throws(() => parseRunFile({ ...base, backend, grpo: { ...base.grpo, actor: { useKlLoss: true } } }), /grpo\.actor\.useKlLoss/);
    assert.throws(() => parseRunFile({ ...base, backend, grpo: { ...base.grpo, actor: { entropyCoeff: 0.01 } } }), /grpo\.actor\.entropyCoeff/);
    assert.throws(() => parseRunFile({ ...base, backend, grpo: { ...base.grpo, algorithm: { useKlInReward: true } } }), /useKlInReward/);
    assert.throws(() => parseRunFile({ ...base, backend, grpo: { ...base.grpo, rollout: { temperature: 0.7 } } }), /rollout\.temperature/);
    assert.throws(() => parseRunFile({ ...base, backend, engine: { type: 'openai', baseUrl: 'http://x', model: 'm' } }), /engine\.type/);
    assert.throws(() => parseRunFile({ ...base, backend, sft: { data: 'x.jsonl', outDir: 'o' } }), /sft: the SFT stage trains in process/);
  });
});
