import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { computeAdvantages, grpoSequenceAdvantages, rlooSequenceAdvantages, sequenceScores } from '../../src/rl/advantages.ts';
import { aggregateLoss, aggregationDenominators } from '../../src/rl/aggregate.ts';
import { gspoPolicyLoss, vanillaPolicyLoss } from '../../src/rl/policy-loss.ts';
import { applyKlInReward, klPenalty, klPenaltyScalar } from '../../src/rl/kl.ts';
import { logSumExp, softmaxEntropy } from '../../src/model/layers/entropy.ts';
import { dynamicSampling, keptGroupUids, overlongPenalty } from '../../src/rl/dapo.ts';

const close = (a: number, b: number, tol = 1e-6, what = '') => assert.ok(Math.abs(a - b) <= tol, `${what} expected ${b}, got ${a}`);

describe('advantages (docs/grpo.md, Advantages)', () => {
  // Group g1 = [1, 0, 1, 0] (mean 0.5, unbiased std √(1/3)), g2 = [2] (singleton), g3 = [3, 3] (no variance).
  const scores = [1, 0, 1, 0, 2, 3, 3];
  const uids = ['g1', 'g1', 'g1', 'g1', 'g2', 'g3', 'g3'];
  it('GRPO divides by the unbiased std + ε; singletons use μ=0, σ=1', () => {
    const a = grpoSequenceAdvantages(scores, uids);
    const s = Math.sqrt(1 / 3);
    for (const i of [0, 2]) close(a[i], 0.5 / (s + 1e-6), 1e-9);
    for (const i of [1, 3]) close(a[i], -0.5 / (s + 1e-6), 1e-9);
    close(a[4], 2 / (1 + 1e-6), 1e-9);
    assert.equal(a[5], 0);
    assert.equal(a[6], 0);
  });
  it('stdScores (partial credit): σ from the task rewards; a group whose task rewards are all equal is divided by 1', () => {
    // g1: a real success among credit-shaped failures; g2: failures that differ only by a 0.1 credit.
    const shaped = [1, 0.1, 0, 0, 0.1, 0, 0.1, 0];
    const task = [1, 0, 0, 0, 0, 0, 0, 0];
    const ids = ['g1', 'g1', 'g1', 'g1', 'g2', 'g2', 'g2', 'g2'];
    const a = grpoSequenceAdvantages(shaped, ids, { stdScores: task });
    const sigma = Math.sqrt((0.75 ** 2 + 3 * 0.25 ** 2) / 3); // unbiased std of [1, 0, 0, 0]
    const m1 = 1.1 / 4;
    for (let i = 0; i < 4; i++) close(a[i], (shaped[i] - m1) / (sigma + 1e-6), 1e-9);
    for (let i = 4; i < 8; i++) close(a[i], shaped[i] - 0.05, 1e-12);
    assert.ok(Math.max(...[...a.slice(4)].map(Math.abs)) <= 0.05 + 1e-12, 'credit-only differences keep their size');
    // Plain GRPO would blow g2 up to ±0.87, the size of g1's real success.
    const plain = grpoSequenceAdvantages(shaped, ids);
    assert.ok(Math.abs(plain[4]) > 0.8);
    assert.throws(() => grpoSequenceAdvantages(shaped, ids, { stdScores: task.slice(1) }), /7 stdScores for 8 scores/);
  });
  it('Dr.GRPO subtracts the group mean only', () => {
    const a = grpoSequenceAdvantages(scores, uids, { normAdvByStd: false });
    assert.deepEqual([...a], [0.5, -0.5, 0.5, -0.5, 2, 0, 0]);
  });
  it('RLOO scales by K/(K−1) (= minus the mean of the others); a singleton keeps its score', () => {
    const a = rlooSequenceAdvantages(scores, uids);
    close(a[0], 1 - 1 / 3, 1e-12);
    close(a[1], 0 - 2 / 3, 1e-12);
    assert.equal(a[4], 2);
    assert.equal(a[5], 0);
  });
  it('scores sum every token reward (unmasked) and advantages broadcast through the mask', () => {
    // 2 rows × 3: row 0 reward on a masked-out token still counts.
    const rewards = [0, 0, 1, 0.5, 0, 0];
    const mask = [1, 1, 0, 1, 0, 0];
    assert.deepEqual([...sequenceScores(rewards, 2, 3)], [1, 0.5]);
    const r = computeAdvantages('grpo', rewards, mask, ['u', 'u'], 2, 3, { normAdvByStd: false });
    assert.deepEqual([...r.sequence], [0.25, -0.25]);
    assert.deepEqual([...r.tokens], [0.25, 0.25, 0, -0.25, 0, 0]);
    assert.throws(() => computeAdvantages('grpo', rewards, mask, ['u'], 2, 3), /2 scores but 1 uids/);
    assert.throws(() => computeAdvantages('grpo', rewards.slice(1), mask, ['u', 'u'], 2, 3), /expected 2×3 = 6 values, got 5/);
  });
});

describe('policy losses (docs/grpo.md, Policy losses)', () => {
  const one = (lp: number, a: number, clip = {}) => {
    const r = vanillaPolicyLoss({ logprobs: [lp], oldLogprobs: [0], advantages: [a], responseMask: [1], rows: 1, cols: 1 }, clip);
    return { loss: r.losses[0], grad: r.dLogprob[0], stats: r.stats };
  };
  it('vanilla PPO clip, symmetric ε = 0.2', () => {
    let r = one(Math.log(1.5), 1); // L1 = −1.5, L2 = −1.2 → −1.2, clipped
    close(r.loss, -1.2, 1e-6);
    assert.equal(r.grad, 0);
    assert.equal(r.stats.clipFrac, 1);
    r = one(Math.log(1.1), 1); // inside the trust region
    close(r.loss, -1.1, 1e-6);
    close(r.grad, -1.1, 1e-6);
    assert.equal(r.stats.clipFrac, 0);
    r = one(Math.log(0.5), -1); // L1 = 0.5, L2 = 0.8 → 0.8, clipped
    close(r.loss, 0.8, 1e-6);
    assert.equal(r.grad, 0);
  });
  it('dual clip caps the loss at −A·c for negative advantages', () => {
    let r = one(Math.log(5), -1); // L1 = 5 > L3 = 3 → 3
    close(r.loss, 3, 1e-6);
    assert.equal(r.grad, 0);
    assert.equal(r.stats.clipFracLower, 1);
    r = one(Math.log(2), -1); // L1 = 2 < 3 → unclipped
    close(r.loss, 2, 1e-6);
    close(r.grad, 2, 1e-6);
    r = one(Math.log(5), -1, { clipRatioC: 10 });
    close(r.loss, 5, 1e-5);
    assert.throws(() => one(0, 1, { clipRatioC: 1 }), /clip_ratio_c must be > 1/);
  });
  it('separate clip_ratio_low / clip_ratio_high', () => {
    const clip = { clipRatioLow: 0.1, clipRatioHigh: 0.3 };
    close(one(Math.log(1.25), 1, clip).loss, -1.25, 1e-6); // under 1.3: not clipped
    close(one(Math.log(1.4), 1, clip).loss, -1.3, 1e-6);
    close(one(Math.log(0.85), -1, clip).loss, 0.9, 1e-6); // below 0.9: clipped up to 0.9
    close(one(Math.log(0.95), -1, clip).loss, 0.95, 1e-6);
  });
  it('log-ratio is clamped to ±20 (no gradient through the clamp)', () => {
    const r = one(-50, -1, { clipRatioC: 1e12 });
    close(r.loss, 1 - 0.2, 1e-6); // r = e^−20 ≈ 0 → clipped to 0.8
    assert.equal(r.grad, 0);
    close(r.stats.approxKl, 20, 1e-9);
  });
  it('GSPO uses the sequence ratio exp(mean log-ratio) on every token', () => {
    // Row 0: log-ratios 0.1, 0.3 (mean 0.2 → s = e^0.2 = 1.2214); the padded third token is ignored.
    const x = { logprobs: [-1 + 0.1, -2 + 0.3, 5], oldLogprobs: [-1, -2, 0], advantages: [1, 1, 1], responseMask: [1, 1, 0], rows: 1, cols: 3 };
    const s = Math.exp(0.2);
    const clipped = gspoPolicyLoss(x, { clipRatio: 0.2 });
    close(clipped.losses[0], -1.2, 1e-6);
    close(clipped.losses[1], -1.2, 1e-6);
    assert.equal(clipped.losses[2], 0);
    assert.equal(clipped.dLogprob[0], 0);
    const free = gspoPolicyLoss(x, { clipRatio: 0.3 });
    close(free.losses[0], -s, 1e-6);
    close(free.dLogprob[1], -s, 1e-6);
  });
});

describe('loss aggregation (docs/grpo.md, Aggregation)', () => {
  // L = [[1,2,3],[4,5,6],[7,8,9]], m = [[1,1,0],[1,0,0],[0,0,0]] (third row has no valid token).
  const L = [1, 2, 3, 4, 5, 6, 7, 8, 9];
  const m = [1, 1, 0, 1, 0, 0, 0, 0, 0];
  it('token-mean = Σ L·m / Σ m', () => close(aggregateLoss(L, m, 3, 3, 'token-mean').value, 7 / 3, 1e-9));
  it('seq-mean-token-sum averages sequence sums over sequences with tokens', () => close(aggregateLoss(L, m, 3, 3, 'seq-mean-token-sum').value, (3 + 4) / 2, 1e-9));
  it('seq-mean-token-mean averages per-sequence token means (+1e-8)', () => close(aggregateLoss(L, m, 3, 3, 'seq-mean-token-mean').value, (3 / (2 + 1e-8) + 4 / (1 + 1e-8)) / 2, 1e-9));
  it('seq-mean-token-sum-norm averages sequence sums over sequences with tokens, divided by loss_scale_factor (default R)', () => {
    close(aggregateLoss(L, m, 3, 3, 'seq-mean-token-sum-norm').value, 7 / (2 * 3), 1e-9);
    close(aggregateLoss(L, m, 3, 3, 'seq-mean-token-sum-norm', { lossScaleFactor: 7 }).value, 1 / 2, 1e-9);
  });
  it('with the mini-batch denominators the micro-batch aggregates (values and weights) add up to the mini-batch one', () => {
    assert.deepEqual(aggregationDenominators(m, 3, 3), { tokens: 3, sequences: 2 });
    // Split the rows 1 | 2: every mode's value is the sum of the parts and the weights are the whole batch's.
    for (const mode of ['token-mean', 'seq-mean-token-sum', 'seq-mean-token-mean', 'seq-mean-token-sum-norm'] as const) {
      const whole = aggregateLoss(L, m, 3, 3, mode);
      const denominators = aggregationDenominators(m, 3, 3);
      const head = aggregateLoss(L.slice(0, 3), m.slice(0, 3), 1, 3, mode, { denominators });
      const tail = aggregateLoss(L.slice(3), m.slice(3), 2, 3, mode, { denominators });
      close(head.value + tail.value, whole.value, 1e-9, mode);
      assert.deepEqual([...head.weights, ...tail.weights], [...whole.weights], mode);
      // Without them each part is normalised on its own and the sum differs (the bug this guards against).
      const alone = aggregateLoss(L.slice(0, 3), m.slice(0, 3), 1, 3, mode).value + aggregateLoss(L.slice(3), m.slice(3), 2, 3, mode).value;
      assert.ok(Math.abs(alone - whole.value) > 1e-3, `${mode}: ${alone} vs ${whole.value}`);
    }
  });
  it('weights are the gradient of the aggregate', () => {
    for (const mode of ['token-mean', 'seq-mean-token-sum', 'seq-mean-token-mean', 'seq-mean-token-sum-norm'] as const) {
      const base = aggregateLoss(L, m, 3, 3, mode);
      for (let k = 0; k < L.length; k++) {
        const bumped = L.slice();
        bumped[k] += 1;
        close(aggregateLoss(bumped, m, 3, 3, mode).value - base.value, base.weights[k], 1e-6, `${mode} weight ${k}`);
      }
    }
  });
  it('rejects unknown modes and empty masks give 0', () => {
    assert.throws(() => aggregateLoss(L, m, 3, 3, 'mean' as never), /unknown loss_agg_mode "mean"/);
    assert.equal(aggregateLoss(L, new Array(9).fill(0), 3, 3, 'token-mean').value, 0);
  });
});

describe('KL penalties (docs/grpo.md, KL penalties) and entropy', () => {
  it('k1, abs, k2, k3 values and gradients', () => {
    const lp = -1;
    const ref = -2; // d = 1
    assert.deepEqual(klPenaltyScalar(lp, ref, 'kl'), { value: 1, grad: 1 });
    assert.deepEqual(klPenaltyScalar(ref, lp, 'abs'), { value: 1, grad: -1 });
    assert.deepEqual(klPenaltyScalar(lp, ref, 'mse'), { value: 0.5, grad: 1 });
    const k3 = klPenaltyScalar(lp, ref, 'low_var_kl'); // x = −1
    close(k3.value, Math.exp(-1), 1e-12);
    close(k3.grad, 1 - Math.exp(-1), 1e-12);
    assert.deepEqual(klPenaltyScalar(lp, ref, 'k3'), k3);
  });
  it('k3 clamps: x to ±20, value to [−10, 10], zero gradient where clamped', () => {
    const big = klPenaltyScalar(-30, 0, 'k3'); // x = 30 → 20 → e^20 − 21 → 10
    assert.equal(big.value, 10);
    assert.equal(big.grad, 0);
    const capped = klPenaltyScalar(-3, 0, 'k3'); // x = 3: e^3 − 4 = 16.09 → 10
    assert.equal(capped.value, 10);
    const low = klPenaltyScalar(30, 0, 'k3'); // x = −30 → −20 → e^−20 + 19 → 10
    assert.equal(low.value, 10);
  });
  it('"+" variants keep the value and take the k2 gradient', () => {
    const st = klPenaltyScalar(-1, -2.5, 'k3+');
    close(st.value, klPenaltyScalar(-1, -2.5, 'k3').value, 1e-12);
    close(st.grad, 1.5, 1e-12);
    assert.equal(klPenaltyScalar(-1, -2.5, 'k1+').grad, 1.5);
    assert.throws(() => klPenaltyScalar(0, 0, 'full' as never), /full-vocabulary/);
    assert.throws(() => klPenaltyScalar(0, 0, 'k4' as never), /unknown kl penalty type "k4"/);
  });
  it('masked tensors and KL in reward', () => {
    const r = klPenalty([-1, -1], [-2, -2], [1, 0], 1, 2, 'kl');
    assert.deepEqual([...r.values], [1, 0]);
    const k = applyKlInReward([0, 1], [-1, -1], [-2, -2], [1, 1], 1, 2, 0.1, 'kl');
    close(k.rewards[0], -0.1, 1e-7);
    close(k.rewards[1], 0.9, 1e-7);
    close(k.meanKl, 1, 1e-12);
  });
  it('entropy of a uniform distribution is log V', () => {
    const entropy = (z: number[], scale = 1) => softmaxEntropy(z, 0, z.length, logSumExp(z, 0, z.length, scale), scale);
    close(entropy([0.3, 0.3, 0.3, 0.3]), Math.log(4), 1e-12);
    close(entropy([1000, 0, 0]), 0, 1e-9);
    close(entropy([1, 0, 0], 1e-6), Math.log(3), 1e-5, 'a high temperature flattens the distribution');
  });
});

describe('DAPO (docs/grpo.md, DAPO)', () => {
  it('keeps groups with non-zero population std and singletons', () => {
    const kept = keptGroupUids([1, 1, 0, 0, 0, 1, 5], ['a', 'a', 'b', 'b', 'c', 'c', 'd']);
    assert.deepEqual([...kept].sort(), ['c', 'd']);
  });
  it('dynamic sampling refills up to the target and truncates', async () => {
    const rounds = [[[1, 1], [0, 1]], [[0, 0], [1, 0], [1, 0]]];
    const r = await dynamicSampling({ generate: async (i) => rounds[i], metricOf: (g) => g, targetGroups: 2, maxRounds: 5 });
    assert.deepEqual(r.groups, [[0, 1], [1, 0]]);
    assert.equal(r.rounds, 2);
    assert.equal(r.dropped, 2);
    await assert.rejects(
      dynamicSampling({ generate: async () => [[1, 1]], metricOf: (g) => g, targetGroups: 1, maxRounds: 3 }),
      /only 0\/1 groups with non-zero reward variance after 3 generation batches/,
    );
  });
  it('overlong penalty ramps linearly over the buffer', () => {
    const o = { maxResponseLength: 100, bufferLength: 20, penaltyFactor: 1 };
    assert.equal(overlongPenalty(50, o), 0);
    assert.equal(overlongPenalty(80, o), 0);
    close(overlongPenalty(90, o), -0.5, 1e-12);
    close(overlongPenalty(100, o), -1, 1e-12);
    close(overlongPenalty(95, { ...o, penaltyFactor: 2 }), -1.5, 1e-12);
    assert.throws(() => overlongPenalty(1, { ...o, bufferLength: 200 }), /exceeds the max response length/);
  });
});
