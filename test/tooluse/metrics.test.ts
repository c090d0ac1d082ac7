import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { binomial, computeMetrics, isSuccess, passHatK } from '../../src/tooluse/metrics.ts';

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

  it('limits k to the smallest trial count and rejects bad input', () => {
    const m = computeMetrics([{ taskId: 'a', reward: 1 }, { taskId: 'a', reward: 1 }, { taskId: 'b', reward: 0 }]);
    assert.deepEqual(Object.keys(m.passHatK), ['1']);
    assert.throws(() => computeMetrics([]), /No episodes/);
    assert.throws(() => passHatK(2, 3, 1), /successes/);
    assert.equal(binomial(10, 3), 120);
    assert.equal(binomial(3, 5), 0);
  });
});
