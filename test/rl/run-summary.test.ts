import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { runSummaryTable, summarizeRun } from '../../src/rl/run-summary.ts';

const row = (o: Record<string, unknown>) => JSON.stringify({ kind: 'train', ...o });

describe('longrun analyze runs (run summaries)', () => {
  it('sums step seconds, averages phases over every step, and takes the spread of the non-zero gradient norms', () => {
    const text = [
      JSON.stringify({ kind: 'val', step: 0, 'reward/mean': 0.9 }),
      row({ step: 1, 'reward/mean': 0, 'actor/grad_norm': 0, 'timing/step': 300, 'timing/gen': 200, 'timing/logprob_check': 100, 'perf/peak_memory_bytes': 2 ** 30 }),
      row({ step: 2, 'reward/mean': 0.5, 'actor/grad_norm': 0.1, 'timing/step': 200, 'timing/gen': 100, 'timing/update': 100, 'perf/peak_memory_bytes': 2 ** 29 }),
      row({ step: 3, 'reward/mean': 0.25, 'actor/grad_norm': 0.3, 'timing/step': 100, 'timing/gen': 60, 'timing/update': 40, 'critic/explained_variance': -0.5 }),
      row({ step: 4, 'reward/mean': 0.75, 'actor/grad_norm': 0.2, 'timing/step': 100, 'timing/gen': 50, 'timing/update': 50, 'critic/explained_variance': 0.25 }),
      '',
    ].join('\n');
    const s = summarizeRun('ppo', text);
    assert.equal(s.steps, 4);
    assert.equal(s.stepSeconds, 700);
    assert.equal(s.secondsPerStep, 175);
    assert.deepEqual(s.phases, { gen: 102.5, logprob_check: 25, update: 47.5 });
    assert.equal(s.peakMemoryBytes, 2 ** 30);
    assert.equal(s.reward, 0.375);
    assert.equal(s.rewardSecondHalf, 0.5);
    assert.equal(s.gradNorm.n, 3);
    assert.ok(Math.abs(s.gradNorm.mean - 0.2) < 1e-12);
    assert.ok(Math.abs(s.gradNorm.sd - 0.1) < 1e-12);
    assert.ok(Math.abs(s.gradNorm.cv - 0.5) < 1e-12);
    assert.equal(s.explainedVariance, 0.25);
    const table = runSummaryTable([s]).split('\n');
    assert.match(table[0], /^\| run \| steps \| step s \(sum\) \| s\/step \| gen s\/step \| logprob_check s\/step \| update s\/step \| peak MiB \|/);
    assert.equal(table[2], '| ppo | 4 | 700 | 175.0 | 102.5 | 25.0 | 47.5 | 1024 | 0.375 | 0.500 | 0.2000 ± 0.1000 (3) | 0.50 | 0.250 |');
  });

  it('names a file that is not a metrics file', () => {
    assert.throws(() => summarizeRun('x', '{"kind":"val"}\n'), /x: no training steps/);
    assert.throws(() => summarizeRun('x', 'row\n'), /x: line 1 is not JSON/);
    assert.throws(() => summarizeRun('x', '3\n'), /x: line 1 is not a JSON object/);
  });
});
