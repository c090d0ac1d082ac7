import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { binomial, computeMetrics, isSuccess, meanStdErr, passAtK, passHatK } from '../../src/tooluse/metrics.ts';

describe('metrics', () => {
  it('pass^k for n=4, c=3 is 0.75, 0.5, 0.25, 0 (tau2.md §13.1.7)', () => {
    assert.deepEqual([1, 2, 3, 4].map((k) => passHatK(4, 3, k)), [0.75, 0.5, 0.25, 0]);
  });

  it('averages pass^k over tasks and counts success within 1e-6', () => {
    const rewards = { a: [1, 1, 1, 0], b: [1 - 5e-7, 0, 0, 0] };
    const results = Object.entries(rewards).flatMap(([taskId, rs]) => rs.map((reward) => ({ taskId, reward })));
    const m = computeMetrics(results);
    assert.equal(m.numTasks, 2);
    assert.equal(m.numEpisodes, 8);
    assert.deepEqual(m.passHatK, { 1: (0.75 + 0.25) / 2, 2: 0.25, 3: 0.125, 4: 0 });
    assert.equal(m.successRate, 4 / 8);
    assert.ok(Math.abs(m.avgReward - (3 + 1 - 5e-7) / 8) < 1e-12);
    assert.equal(isSuccess(1 + 2e-6), false);
  });

  it('pass@k for n=4, c=1 is 0.25, 0.5, 0.75, 1 and is 0 without a success', () => {
    assert.deepEqual([1, 2, 3, 4].map((k) => passAtK(4, 1, k)), [0.25, 0.5, 0.75, 1]);
    assert.equal(passAtK(5, 0, 5), 0);
    assert.ok(Math.abs(passAtK(5, 2, 2) - (1 - 3 / 10)) < 1e-12);
    assert.throws(() => passAtK(3, 1, 4), /1 <= k <= n/);
  });

  it('averages pass@k over tasks and gives the standard error over per-task means', () => {
    // Task means 0.75, 0.25, 0.5: sample variance ((0.25)² + (0.25)² + 0) / 2 = 0.0625, se = √(0.0625 / 3).
    const rewards = { a: [1, 1, 1, 0], b: [1, 0, 0, 0], c: [1, 0, 1, 0] };
    const m = computeMetrics(Object.entries(rewards).flatMap(([taskId, rs]) => rs.map((reward) => ({ taskId, reward }))));
    assert.equal(m.passAtK[1], m.passHatK[1]);
    assert.ok(Math.abs(m.passAtK[2] - (1 + 0.5 + 5 / 6) / 3) < 1e-12);
    assert.equal(m.passAtK[4], 1);
    assert.ok(Math.abs(m.rewardStdErr - Math.sqrt(0.0625 / 3)) < 1e-12);
    // One trial per 0/1 task: the binomial √(p(1−p)/(N−1)).
    const one = computeMetrics([1, 0, 0, 1, 0, 0, 0, 0].map((reward, i) => ({ taskId: `t${i}`, reward })));
    assert.ok(Math.abs(one.rewardStdErr - Math.sqrt((0.25 * 0.75) / 7)) < 1e-12);
    assert.equal(computeMetrics([{ taskId: 'a', reward: 1 }]).rewardStdErr, 0);
    // The helper on its own: mean 2, sample variance 1, se 1/√3; one value has no spread; no value is an error.
    const h = meanStdErr([1, 2, 3]);
    assert.ok(h.mean === 2 && Math.abs(h.stdErr - 1 / Math.sqrt(3)) < 1e-12);
    assert.deepEqual(meanStdErr([0.4]), { mean: 0.4, stdErr: 0 });
    assert.throws(() => meanStdErr([]), /at least one value/);
  });

  it('limits k to the smallest trial count and rejects bad input', () => {
    const m = computeMetrics([{ taskId: 'a', reward: 1 }, { taskId: 'a', reward: 1 }, { taskId: 'b', reward: 0 }]);
    assert.deepEqual(Object.keys(m.passHatK), ['1']);
    assert.throws(() => computeMetrics([]), /No episodes/);
    assert.throws(() => passHatK(2, 3, 1), /successes/);
    assert.equal(binomial(10, 3), 120);
    assert.equal(binomial(3, 5), 0);
  });
});
