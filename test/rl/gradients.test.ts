import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { aggregateLoss, type LossAggMode } from '../../src/rl/aggregate.ts';
import { computePolicyLoss, type PolicyLossMode } from '../../src/rl/policy-loss.ts';
import { klPenalty, type KlPenaltyType } from '../../src/rl/kl.ts';
import { logSumExp, softmaxEntropy, softmaxEntropyGrad } from '../../src/model/layers/entropy.ts';
import { XoshiroRng } from '../../src/gym/rng.ts';

/** Total loss = agg(policy loss) + 0.1·agg(kl); its gradient via the chain rule the trainer uses. */
function total(lp: number[], old: number[], ref: number[], adv: number[], mask: number[], rows: number, cols: number, mode: PolicyLossMode, agg: LossAggMode, kl: KlPenaltyType) {
  const pg = computePolicyLoss(mode, { logprobs: lp, oldLogprobs: old, advantages: adv, responseMask: mask, rows, cols }, { clipRatioLow: 0.2, clipRatioHigh: 0.28 });
  const a = aggregateLoss(pg.losses, mask, rows, cols, agg);
  const k = klPenalty(lp, ref, mask, rows, cols, kl);
  const ka = aggregateLoss(k.values, mask, rows, cols, agg);
  const grad = lp.map((_, i) => a.weights[i] * pg.dLogprob[i] + 0.1 * ka.weights[i] * k.dLogprob[i]);
  return { value: a.value + 0.1 * ka.value, grad };
}

describe('policy-loss gradients vs finite differences', () => {
  const rng = new XoshiroRng(7);
  const rows = 3;
  const cols = 5;
  const n = rows * cols;
  const cases: [PolicyLossMode, LossAggMode, KlPenaltyType][] = [
    ['vanilla', 'token-mean', 'low_var_kl'],
    ['vanilla', 'seq-mean-token-sum', 'kl'],
    ['vanilla', 'seq-mean-token-mean', 'mse'],
    ['vanilla', 'seq-mean-token-sum-norm', 'abs'],
    ['gspo', 'seq-mean-token-mean', 'low_var_kl'],
  ];
  for (const [mode, agg, kl] of cases) {
    it(`${mode} + ${agg} + ${kl}`, () => {
      const old = Array.from({ length: n }, () => -0.5 - 2 * rng.random());
      // Ratios spread across inside and outside the clip range, away from the kinks.
      const lp = old.map((o, i) => o + [-0.6, -0.1, 0.05, 0.15, 0.5][i % 5]);
      const ref = old.map((o) => o + 0.3 * (rng.random() - 0.5));
      const adv = Array.from({ length: n }, (_, i) => (Math.floor(i / cols) % 2 === 0 ? 1.3 : -0.7));
      const mask = Array.from({ length: n }, (_, i) => (i % cols === 4 && i < cols ? 0 : 1));
      const g = total(lp, old, ref, adv, mask, rows, cols, mode, agg, kl).grad;
      const h = 1e-4;
      let nonzero = 0;
      for (let k = 0; k < n; k++) {
        const up = lp.slice();
        up[k] += h;
        const dn = lp.slice();
        dn[k] -= h;
        const fd = (total(up, old, ref, adv, mask, rows, cols, mode, agg, kl).value - total(dn, old, ref, adv, mask, rows, cols, mode, agg, kl).value) / (2 * h);
        assert.ok(Math.abs(fd - g[k]) < 2e-3, `token ${k}: analytic ${g[k]}, finite difference ${fd}`);
        if (Math.abs(g[k]) > 1e-3) nonzero++;
      }
      assert.ok(nonzero > 0, 'some gradient flows');
    });
  }
});

describe('entropy gradient vs finite differences', () => {
  it('∂H/∂z', () => {
    const z = [0.3, -1.2, 2.0, 0.7, -0.1];
    const entropy = (x: number[]) => softmaxEntropy(x, 0, x.length, logSumExp(x));
    const g = new Float64Array(z.length);
    const h0 = softmaxEntropyGrad(z, 0, z.length, logSumExp(z), 1, g);
    assert.ok(Math.abs(h0 - entropy(z)) < 1e-12);
    for (let j = 0; j < z.length; j++) {
      const up = z.slice();
      up[j] += 1e-5;
      const dn = z.slice();
      dn[j] -= 1e-5;
      const fd = (entropy(up) - entropy(dn)) / 2e-5;
      assert.ok(Math.abs(fd - g[j]) < 1e-6, `logit ${j}: ${g[j]} vs ${fd}`);
    }
  });
});
