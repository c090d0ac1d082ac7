import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { trainCommand } from '../../src/cli/train.ts';
import { presetConfig } from '../../src/model/config.ts';
import { GptOssModel } from '../../src/model/model.ts';
import { parseRunFile, parseStagesRunFile } from '../../src/recipes/train-setup.ts';
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
const IN_PROCESS_ONLY = new Set(['actor/entropy', 'actor/scored_rows_share']);

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
      // The same run over the JSON wire format of SDK ≤ 0.24 (the default above is protobuf) gives the same metrics.
      const jsonDir = join(root, 'remote-json');
      mkdirSync(jsonDir, { recursive: true });
      const jsonLines: string[] = [];
      assert.equal(await trainCommand({ config: runFile(jsonDir, `{ type: tinker, baseUrl: ${JSON.stringify(srv.url)}, model: ${BASE}, wire: json }`) }, (l) => jsonLines.push(l)), 0);
      assert.ok(compare(rows(localDir).filter((r) => (r.step as number) <= 2), rows(jsonDir)).includes('actor/grad_norm'), 'the JSON run was compared');
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

  it('runs an SFT stage and then GRPO through the server with the in-process SFT and GRPO metrics', { timeout: 600_000 }, async () => {
    const root = mkdtempSync(join(tmpdir(), 'longrun-train-tinker-sft-'));
    const vocab = createToySetup().tokenizer.vocabSize;
    const srv = await startTrainerServer({ baseModel: BASE, makeBase: () => new GptOssModel(presetConfig('tiny-1m', { vocab_size: vocab }), { seed: 0 }), checkpointDir: join(root, 'server') });
    try {
      // Toy expert trajectories: a cue, a tool call with an argument, its result, a closing answer.
      const data = join(root, 'toy-sft.jsonl');
      writeFileSync(data, Array.from({ length: 12 }, (_, i) => JSON.stringify({
        taskId: `toy-${i}`,
        messages: [
          { role: 'system', content: 'solve' },
          { role: 'user', content: `please cue_${i % 4}` },
          { role: 'assistant', content: '', toolCalls: [{ id: `c${i}`, name: ['tool_a', 'tool_b', 'tool_c'][i % 3], arguments: { x: i % 3 } }] },
          { role: 'tool', id: `c${i}`, content: i % 2 ? 'ok' : 'wrong' },
          { role: 'assistant', content: 'done' },
        ],
      })).join('\n') + '\n');
      const sftRunFile = (dir: string, backend?: string, grpo = true) => {
        const file = runFile(dir, backend);
        const text = readFileSync(file, 'utf8').replace('  trainer:\n    totalSteps: 2', '  trainer:\n    totalSteps: 1');
        const sft = [
          `sft: { data: ${JSON.stringify(data)}, outDir: ${JSON.stringify(join(dir, 'sft'))},`,
          // Two micro-batches per step, warmup + cosine, weight decay, a clip that engages, context tokens, held-out loss.
          '  config: { seqLen: 48, microBatchTokens: 96, rowsPerStep: 4, steps: 3, lr: 0.01, warmupSteps: 1, gradClip: 0.5, weightDecay: 0.01, contextLossWeight: 0.1, evalFraction: 0.25, seed: 2 } }',
        ];
        writeFileSync(file, (grpo ? text : text.slice(0, text.indexOf('grpo:'))) + '\n' + sft.join('\n') + '\n');
        return file;
      };
      const localDir = join(root, 'local');
      const remoteDir = join(root, 'remote');
      mkdirSync(localDir, { recursive: true });
      mkdirSync(remoteDir, { recursive: true });
      const backend = `{ type: tinker, baseUrl: ${JSON.stringify(srv.url)}, model: ${BASE} }`;
      assert.equal(await trainCommand({ config: sftRunFile(localDir) }, () => undefined), 0);
      const lines: string[] = [];
      assert.equal(await trainCommand({ config: sftRunFile(remoteDir, backend) }, (l) => lines.push(l)), 0);
      assert.match(lines[0], /SFT steps are forward_backward \(cross_entropy\) \+ optim_step there/);
      const sftRows = (dir: string) => readFileSync(join(dir, 'sft', 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Row);
      const local = sftRows(localDir), remote = sftRows(remoteDir);
      assert.deepEqual(remote.map((r) => `${r.type}${r.step}`), local.map((r) => `${r.type}${r.step}`));
      assert.deepEqual(local.map((r) => `${r.type}${r.step}`), ['train1', 'train2', 'train3', 'eval3']);
      local.forEach((l, i) => {
        for (const k of ['loss', 'contextLoss', 'gradNorm', 'lr', 'evalLoss', 'tokens', 'lossTokens', 'microBatches', 'evalTokens']) {
          if (l[k] === undefined) continue;
          const v = l[k] as number, w = remote[i][k] as number;
          assert.ok(Math.abs(w - v) <= 1e-4 * Math.max(1, Math.abs(v)), `sft ${l.type} step ${l.step}: ${k} ${w} through the backend vs ${v} in process`);
        }
      });
      assert.ok(local.some((r) => (r.microBatches as number) > 1) && local.some((r) => (r.gradNorm as number) > 0.5), 'accumulation and the clip are exercised');
      // The SFT checkpoint is on the server; GRPO continues from the SFT weights with a fresh optimizer, as in process.
      const state = JSON.parse(readFileSync(join(remoteDir, 'sft', 'checkpoints', 'step-00000003', 'sft-policy', 'tinker-state.json'), 'utf8')) as { path: string };
      assert.match(state.path, /^tinker:\/\/.+\/weights\/step-00000003-sft-policy$/);
      const compared = compare(rows(localDir), rows(remoteDir));
      for (const k of ['reward/mean', 'actor/pg_loss', 'actor/grad_norm']) assert.ok(compared.includes(k), `${k} was compared`);

      // An SFT-only run file through the backend (no grpo section) is accepted and ends after the stage.
      const only: string[] = [];
      const onlyDir = join(root, 'only');
      mkdirSync(onlyDir, { recursive: true });
      assert.equal(await trainCommand({ config: sftRunFile(onlyDir, backend, false) }, (l) => only.push(l)), 0);
      assert.ok(only.includes('done: no grpo section, the run ends after its SFT stage'));
      const onlyRows = sftRows(onlyDir);
      assert.deepEqual(onlyRows.map((r) => `${r.type}${r.step}`), local.map((r) => `${r.type}${r.step}`));
      onlyRows.forEach((r, i) => {
        const k = r.type === 'eval' ? 'evalLoss' : 'loss';
        assert.ok(Math.abs((r[k] as number) - (local[i][k] as number)) <= 1e-4, `sft-only ${r.type} step ${r.step}: ${k}`);
      });
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
    assert.throws(() => parseRunFile({ ...base, backend, engine: { kvCache: 'reprefill' } }), /engine\.kvCache: with a backend/);
    assert.throws(() => parseRunFile({ ...base, backend, grpo: { ...base.grpo, actor: { useKlLoss: true } } }), /grpo\.actor\.useKlLoss/);
    assert.throws(() => parseRunFile({ ...base, backend, grpo: { ...base.grpo, actor: { entropyCoeff: 0.01 } } }), /grpo\.actor\.entropyCoeff/);
    assert.throws(() => parseRunFile({ ...base, backend, grpo: { ...base.grpo, algorithm: { useKlInReward: true } } }), /useKlInReward/);
    assert.throws(() => parseRunFile({ ...base, backend, grpo: { ...base.grpo, rollout: { temperature: 0.7 } } }), /rollout\.temperature/);
    assert.throws(() => parseRunFile({ ...base, backend, engine: { type: 'openai', baseUrl: 'http://x', model: 'm' } }), /engine\.type/);
    assert.doesNotThrow(() => parseRunFile({ ...base, backend, sft: { data: 'x.jsonl', outDir: 'o' } }));
    assert.doesNotThrow(() => parseStagesRunFile({ task: 'toy', policy: base.policy, backend, sft: { data: 'x.jsonl', outDir: 'o' } }));
    assert.throws(() => parseStagesRunFile({ task: 'toy', policy: base.policy, backend }), /grpo: a run on a training backend needs a grpo or an sft section/);
    assert.throws(() => parseRunFile({ ...base, task: 'retail-synth', backend, retail: { curriculum: { outDir: 'c', stages: [{ ids: [1, 2], steps: 1 }] } } }), /retail\.curriculum: the copy curriculum trains in process/);
  });
});
