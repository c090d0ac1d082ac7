import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { trainCommand } from '../../src/cli/train.ts';
import { parseRunFile } from '../../src/recipes/train-setup.ts';

describe('longrun train --config', () => {
  it('runs the toy task from a YAML file, writes metrics, checkpoints and resumes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-train-'));
    try {
      const yaml = [
        'task: toy',
        'policy: { type: tabular, lr: 0.3 }',
        'grpo:',
        '  data: { trainBatchSize: 4 }',
        '  rollout: { n: 8, maxTurns: 3, maxResponseTokens: 40 }',
        '  trainer:',
        '    totalSteps: 3',
        '    testFreq: 3',
        '    valN: 4',
        '    saveFreq: 3',
        `    checkpointDir: ${JSON.stringify(join(dir, 'ckpt'))}`,
        `    metricsFile: ${JSON.stringify(join(dir, 'metrics.jsonl'))}`,
      ].join('\n');
      const file = join(dir, 'run.yaml');
      writeFileSync(file, yaml);
      const lines: string[] = [];
      assert.equal(await trainCommand({ config: file }, (l) => lines.push(l)), 0);
      assert.ok(existsSync(join(dir, 'ckpt', 'step-00000003', 'trainer.json')));
      assert.ok(existsSync(join(dir, 'ckpt', 'step-00000003', 'policy', 'policy.json')));
      const metrics = readFileSync(join(dir, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { kind: string; step: number });
      assert.deepEqual(metrics.map((m) => `${m.kind}${m.step}`), ['val0', 'train1', 'train2', 'train3', 'val3']);
      assert.match(lines.at(-1)!, /^done: 3 steps/);
      // Per-episode records by default, beside the metrics: conversations for validation sample 0 and each step's first group.
      const episodes = readFileSync(join(dir, 'episodes.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { kind: string; step: number; sample: number; messages?: unknown[] });
      assert.deepEqual([...new Set(episodes.map((e) => `${e.kind}${e.step}`))], ['val0', 'train1', 'train2', 'train3', 'val3']);
      assert.ok(episodes.filter((e) => e.kind === 'val').every((e) => Array.isArray(e.messages) === (e.sample === 0)));
      assert.equal(episodes.filter((e) => e.kind === 'train' && e.messages).length, 3 * 8, 'one group of n 8 per step');
      // Two more steps resume from step 3.
      const more: string[] = [];
      await trainCommand({ config: file, steps: '5' }, (l) => more.push(l));
      assert.ok(more.some((l) => l.includes('resumed from') && l.includes('at step 3')));
      assert.match(more.at(-1)!, /^done: 5 steps/);
      // --max-wall-seconds overrides trainer.maxWallSeconds: a million steps stop once 1 s of steps is spent.
      const budget = join(dir, 'budget.yaml');
      writeFileSync(budget, 'task: toy\npolicy: { type: tabular, lr: 0.3 }\ngrpo: { data: { trainBatchSize: 4 }, rollout: { n: 8, maxTurns: 3, maxResponseTokens: 40 }, trainer: { totalSteps: 1, testFreq: 0 } }');
      const timed: string[] = [];
      assert.equal(await trainCommand({ config: budget, steps: '1000000', maxWallSeconds: '1' }, (l) => timed.push(l)), 0);
      assert.ok(timed.some((l) => /^stopped at step \d+: .* reached trainer\.maxWallSeconds 1$/.test(l)), timed.join('\n'));
      assert.ok(Number(/^done: (\d+) steps/.exec(timed.at(-1)!)?.[1]) < 1000000);
      await assert.rejects(trainCommand({ config: budget, maxWallSeconds: '0' }), /--max-wall-seconds must be a positive integer, got 0/);
      await assert.rejects(trainCommand({ config: join(dir, 'missing.yaml') }), /cannot read config file/);
      writeFileSync(file, 'task: toy\npolicy: { type: tabular }\ngrpo: { data: { trainBatchSize: 1 }, trainer: { totalSteps: 1 }, rollout: { n: 0 } }');
      await assert.rejects(trainCommand({ config: file }), /grpo|rollout\.n/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  it('builds a gpt-oss policy from a preset with the in-process continuous-batching engine', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-train-'));
    try {
      const file = join(dir, 'run.yaml');
      writeFileSync(file, [
        'task: toy',
        'policy: { type: gpt-oss, preset: tiny-1m, lr: 0.001 }',
        'engine: { type: in-process, batching: step, maxBatchSize: 4 }',
        'grpo:',
        '  data: { trainBatchSize: 1 }',
        '  rollout: { n: 2, maxTurns: 2, maxResponseTokens: 16, maxTokensPerTurn: 6 }',
        '  actor: { useKlLoss: true }',
        '  trainer: { totalSteps: 1 }',
      ].join('\n'));
      const lines: string[] = [];
      assert.equal(await trainCommand({ config: file }, (l) => lines.push(l)), 0);
      assert.match(lines.at(-1)!, /^done: 1 steps/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
  it('validates the run file', () => {
    assert.throws(() => parseRunFile({ task: 'chess', policy: { type: 'tabular' }, grpo: {} }), /task/);
    assert.throws(() => parseRunFile({ task: 'toy', policy: { type: 'tabular' } }), /grpo: the GRPO trainer section is required/);
    assert.throws(() => parseRunFile({ task: 'toy', policy: { type: 'tabular' }, engine: { type: 'grpc' }, grpo: {} }), /engine\.type/);
  });
});
