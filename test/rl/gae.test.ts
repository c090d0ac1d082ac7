/**
 * Token-level GAE (src/rl/gae.ts) against a case worked by hand, and the value loss (src/rl/value-loss.ts) with and
 * without clipping.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { computeGaeAdvantageReturn, maskedWhiten, rewardsOnSampledTokens } from '../../src/rl/gae.ts';
import { computeValueLoss, explainedVariance } from '../../src/rl/value-loss.ts';
import { parseTrainerConfig } from '../../src/rl/config.ts';

const close = (a: ArrayLike<number>, b: readonly number[], tol = 1e-5, what = '') => {
  assert.equal(a.length, b.length, what);
  for (let i = 0; i < b.length; i++) assert.ok(Math.abs(a[i] - b[i]) <= tol, `${what}[${i}]: ${a[i]} vs ${b[i]}`);
};

describe('GAE over sampled tokens with an observation gap', () => {
  // Two rows, R = 6, γ = 0.9, λ = 0.8.
  // Row 0: sampled, sampled, observation, observation, sampled, padding; the episode's reward 1 on slot 4.
  //   Observation slots carry values 9 that must not enter the recursion.
  //   t=4: δ = 1 + 0.9·0 − 0.8 = 0.2                  A4 = 0.2
  //   t=1: δ = 0 + 0.9·0.8 − 0.4 = 0.32 (V_next is slot 4's, across the gap)
  //        A1 = 0.32 + 0.9·0.8·0.2 = 0.464
  //   t=0: δ = 0 + 0.9·0.4 − 0.5 = −0.14             A0 = −0.14 + 0.72·0.464 = 0.19408
  //   returns = A + V: 0.69408, 0.864, 1.0
  // Row 1: one sampled token, then an observation that holds the reward 0.5 (as a trajectory that ended on an
  //   observation would): moved onto slot 0, δ = 0.5 − 0.1 = 0.4, A = 0.4, return 0.5.
  // Whitening over the 4 sampled tokens: mean 0.31452, unbiased variance 0.0190905749, so
  //   (A − 0.31452)/√(0.0190905749 + 1e-8) = −0.871688, 1.081866, −0.828842, 0.618664.
  const R = 6;
  const mask = [1, 1, 0, 0, 1, 0, /* row 1 */ 1, 0, 0, 0, 0, 0];
  const values = [0.5, 0.4, 9, 9, 0.8, 9, /* row 1 */ 0.1, 7, 7, 0, 0, 0];
  const rewards = [0, 0, 0, 0, 1, 0, /* row 1 */ 0, 0, 0.5, 0, 0, 0];

  it('matches the hand-worked advantages, returns and whitened advantages', () => {
    const moved = rewardsOnSampledTokens(rewards, mask, 2, R);
    close(moved, [0, 0, 0, 0, 1, 0, 0.5, 0, 0, 0, 0, 0], 0, 'moved rewards');
    const g = computeGaeAdvantageReturn(moved, values, mask, 2, R, 0.9, 0.8);
    close(g.raw, [0.19408, 0.464, 0, 0, 0.2, 0, 0.4, 0, 0, 0, 0, 0], 1e-6, 'raw');
    close(g.returns, [0.69408, 0.864, 0, 0, 1.0, 0, 0.5, 0, 0, 0, 0, 0], 1e-6, 'returns');
    close(g.advantages, [-0.871688, 1.081866, 0, 0, -0.828842, 0, 0.618664, 0, 0, 0, 0, 0], 1e-5, 'whitened');
  });

  it('skips a reward left on an observation slot, as verl does (hence the move)', () => {
    const g = computeGaeAdvantageReturn(rewards, values, mask, 2, R, 0.9, 0.8);
    close([g.raw[6], g.returns[6]], [-0.1, 0], 1e-6, 'row 1 without the move');
  });

  it('with γ = λ = 1 and every slot sampled, A_t = (return) − V_t', () => {
    const g = computeGaeAdvantageReturn([0, 0, 2], [0.5, 1, 1.5], [1, 1, 1], 1, 3, 1, 1);
    close(g.raw, [1.5, 1, 0.5], 1e-6);
    close(g.returns, [2, 2, 2], 1e-6);
  });

  it('with λ = 0 each advantage is its one-step TD error', () => {
    const g = computeGaeAdvantageReturn([0, 0, 1], [0.2, 0.3, 0.6], [1, 1, 1], 1, 3, 0.5, 0);
    // δ2 = 1 − 0.6 = 0.4; δ1 = 0.5·0.6 − 0.3 = 0; δ0 = 0.5·0.3 − 0.2 = −0.05.
    close(g.raw, [-0.05, 0, 0.4], 1e-6);
  });

  it('whitening: mean 0 and unbiased variance 1 over the masked slots, 0 elsewhere', () => {
    const w = maskedWhiten([1, 2, 100, 3], [1, 1, 0, 1]);
    close(w, [-1, 0, 0, 1], 1e-6);
    close(maskedWhiten([5, 1], [1, 0]), [0, 0], 0, 'a single token centres to 0');
  });

  it('refuses γ or λ outside [0, 1] and shape mismatches', () => {
    assert.throws(() => computeGaeAdvantageReturn([0], [0], [1], 1, 1, 1.5, 1), /gamma must be in \[0, 1\]/);
    assert.throws(() => computeGaeAdvantageReturn([0], [0], [1], 1, 1, 1, -0.1), /lambda must be in \[0, 1\]/);
    assert.throws(() => computeGaeAdvantageReturn([0, 0], [0], [1, 1], 1, 2, 1, 1), /values: expected 1×2/);
  });
});

describe('value loss (verl compute_value_loss)', () => {
  const base = { loss: 'mse' as const, huberDelta: 1 };

  it('without a clip: 0.5·(v − R)², gradient v − R, masked slots 0', () => {
    const r = computeValueLoss([0.3, 5], [0, 0], [1, 0], [1, 0], { ...base, valueClip: null });
    close(r.losses, [0.245, 0], 1e-7);
    close(r.dValues, [-0.7, 0], 1e-7);
    assert.equal(r.clipFrac, 0);
    assert.equal(r.tokens, 1);
  });

  it('with a clip: the larger of the clipped and unclipped errors; no gradient where the clipped one wins', () => {
    // c = 0.2 around V_old. Slot 0: v 0.5, V_old 0, R 1 → clipped 0.2: 0.5·0.64 = 0.32 > 0.5·0.25 = 0.125 (clipped wins).
    // Slot 1: v 0.5, V_old 0, R 0 → clipped 0.2: 0.02 < 0.125 (unclipped wins, gradient 0.5).
    // Slot 2: v 0.5, V_old 0.4, R 1 → within range: 0.125 both, gradient −0.5, not counted as clipped.
    // Slot 3: v −1, V_old 0, R −1 → clipped −0.2: 0.5·0.64 = 0.32 > 0 (clipped wins).
    const r = computeValueLoss([0.5, 0.5, 0.5, -1], [0, 0, 0.4, 0], [1, 0, 1, -1], [1, 1, 1, 1], { ...base, valueClip: 0.2 });
    close(r.losses, [0.32, 0.125, 0.125, 0.32], 1e-6);
    close(r.dValues, [0, 0.5, -0.5, 0], 1e-6);
    assert.equal(r.clipFrac, 0.5);
  });

  it('huber: ½e² inside δ, δ(|e| − ½δ) outside; slope clipped to ±δ', () => {
    const r = computeValueLoss([3, 0.5, -2], [0, 0, 0], [0, 0, 0], [1, 1, 1], { loss: 'huber', huberDelta: 1, valueClip: null });
    close(r.losses, [2.5, 0.125, 1.5], 1e-7);
    close(r.dValues, [1, 0.5, -1], 1e-7);
  });

  it('the gradient is the finite difference of the loss', () => {
    const old = [0.1, -0.3, 0.4], ret = [1, -1, 0.2], mask = [1, 1, 1];
    for (const loss of ['mse', 'huber'] as const) {
      const v = [0.25, -0.9, 0.35];
      const o = { loss, huberDelta: 0.5, valueClip: 0.3 };
      const r = computeValueLoss(v, old, ret, mask, o);
      for (let k = 0; k < 3; k++) {
        const h = 1e-4, up = [...v], dn = [...v];
        up[k] += h; dn[k] -= h;
        const fd = (computeValueLoss(up, old, ret, mask, o).losses[k] - computeValueLoss(dn, old, ret, mask, o).losses[k]) / (2 * h);
        assert.ok(Math.abs(fd - r.dValues[k]) < 1e-3, `${loss} slot ${k}: ${fd} vs ${r.dValues[k]}`);
      }
    }
  });

  it('explained variance: 1 for exact values, 0 for the mean, negative for worse', () => {
    assert.ok(Math.abs(explainedVariance([1, 2, 3], [1, 2, 3], [1, 1, 1]) - 1) < 1e-4);
    assert.ok(Math.abs(explainedVariance([2, 2, 2], [1, 2, 3], [1, 1, 1])) < 1e-4);
    assert.ok(explainedVariance([3, 2, 1], [1, 2, 3], [1, 1, 1]) < -1);
  });
});

describe('config', () => {
  const raw = (extra: Record<string, unknown>) => ({ data: { trainBatchSize: 2 }, trainer: { totalSteps: 1 }, ...extra });
  it('gae needs a critic and a critic needs gae; defaults are verl\'s', () => {
    assert.throws(() => parseTrainerConfig(raw({ algorithm: { advEstimator: 'gae' } })), /advEstimator: gae needs a critic section/);
    assert.throws(() => parseTrainerConfig(raw({ critic: { type: 'head' } })), /critic: a critic is trained only with algorithm\.advEstimator: gae/);
    const c = parseTrainerConfig(raw({ algorithm: { advEstimator: 'gae' }, critic: { type: 'separate' } }));
    assert.equal(c.algorithm.gamma, 1);
    assert.equal(c.algorithm.lam, 1);
    assert.deepEqual({ lr: c.critic!.lr, valueClip: c.critic!.valueClip, loss: c.critic!.loss, warmupSteps: c.critic!.warmupSteps, model: c.critic!.model }, { lr: 1e-5, valueClip: 0.5, loss: 'mse', warmupSteps: 0, model: 'tiny-1m' });
    assert.throws(() => parseTrainerConfig(raw({ algorithm: { advEstimator: 'gae', lam: 1.2 }, critic: {} })), /algorithm\.lam/);
    assert.throws(() => parseTrainerConfig(raw({ algorithm: { advEstimator: 'gae' }, critic: { type: 'mlp' } })), /critic\.type/);
  });
});
