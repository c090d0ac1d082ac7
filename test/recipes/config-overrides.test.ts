import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyOverrides } from '../../src/recipes/config-file.ts';
import { trainCommand } from '../../src/cli/train.ts';

describe('run-file overrides (longrun train --set key.path=value)', () => {
  it('sets nested keys with YAML values, creates missing mappings and leaves the input unchanged', () => {
    const raw = { task: 'toy', policy: { type: 'gpt-oss', checkpoint: 'm' }, grpo: { trainer: { totalSteps: 3 } } };
    const out = applyOverrides(raw, [
      'policy.modelConfig.sliding_window=32', 'policy.sinks=ignore', 'grpo.trainer.totalSteps=7',
      'grpo.actor={ useKlLoss: true, klLossCoef: 0.01 }', 'sft.outDir=runs/a=b',
    ]);
    assert.deepEqual(out, {
      task: 'toy',
      policy: { type: 'gpt-oss', checkpoint: 'm', modelConfig: { sliding_window: 32 }, sinks: 'ignore' },
      grpo: { trainer: { totalSteps: 7 }, actor: { useKlLoss: true, klLossCoef: 0.01 } },
      sft: { outDir: 'runs/a=b' },
    });
    assert.equal(raw.grpo.trainer.totalSteps, 3);
    assert.equal(applyOverrides(raw, []), raw);
  });

  it('names what is wrong', () => {
    const raw = { task: 'toy', policy: { type: 'tabular' } };
    assert.throws(() => applyOverrides(raw, ['policy']), /--set "policy": expected key\.path=value/);
    assert.throws(() => applyOverrides(raw, ['=3']), /expected key\.path=value/);
    assert.throws(() => applyOverrides(raw, ['policy..lr=3']), /empty key in "policy\.\.lr"/);
    assert.throws(() => applyOverrides(raw, ['task.name=x']), /task is "toy", not a mapping/);
    assert.throws(() => applyOverrides(raw, ['policy.lr=[1, 2']), /the value is not valid YAML/);
    assert.throws(() => applyOverrides([1], ['a=1']), /top level is a mapping/);
  });

  it('longrun train applies them before validating the run file', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-set-'));
    try {
      const file = join(dir, 'run.yaml');
      writeFileSync(file, 'task: toy\npolicy: { type: tabular, lr: 0.3 }\ngrpo: { data: { trainBatchSize: 2 }, rollout: { n: 4, maxTurns: 3, maxResponseTokens: 40 }, trainer: { totalSteps: 1, testFreq: 0 } }');
      const metrics = join(dir, 'm.jsonl');
      const lines: string[] = [];
      assert.equal(await trainCommand({ config: file, set: ['grpo.trainer.totalSteps=2', `grpo.trainer.metricsFile=${metrics}`] }, (l) => lines.push(l)), 0);
      assert.match(lines.at(-1)!, /^done: 2 steps/);
      assert.equal(readFileSync(metrics, 'utf8').trim().split('\n').length, 2);
      await assert.rejects(trainCommand({ config: file, set: ['grpo.rollout.n=0'] }), /rollout\.n/);
      await assert.rejects(trainCommand({ config: file, set: ['policy.type=chess'] }), /policy\.type/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
