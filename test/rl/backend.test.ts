import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Batch } from '../../src/rollout/batch.ts';
import { LOSS_AGG_MODES } from '../../src/rl/aggregate.ts';
import { updateActor } from '../../src/rl/actor-update.ts';
import { GptOssBackend, LOSS_FNS, tinkerLoss, type Datum, type LossFn } from '../../src/rl/backend.ts';
import { updateActorViaBackend } from '../../src/rl/backend-update.ts';
import { parseTrainerConfig, type TrainerConfigInput } from '../../src/rl/config.ts';
import { GptOssPolicy } from '../../src/rl/model-policy.ts';
import { tinyTransformer, trainingBatch as seededBatch } from './policy-fixtures.ts';

const SEED = 11;


const ADAM = { learningRate: 1e-3, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0 };

/** Today's update and the seam's on fresh copies of the same model; returns both weight sets and metrics. */
function options(batch: Batch, actor: NonNullable<TrainerConfigInput['actor']>, miniBatchRows = batch.size) {
  const algorithm = actor.policyLoss === 'sft' ? { advEstimator: 'rft' as const } : {};
  const config = parseTrainerConfig({ data: { trainBatchSize: 3 }, rollout: { n: 3 }, algorithm, actor: { gradClip: 0, ...actor }, trainer: { totalSteps: 1 } });
  return { actor: config.actor, miniBatchRows, temperature: 1, lossScaleFactor: 40 };
}

async function bothUpdates(batch: Batch, vocab: number, actor: NonNullable<TrainerConfigInput['actor']>, miniBatchRows = batch.size) {
  const o = options(batch, actor, miniBatchRows);
  const direct = new GptOssPolicy(tinyTransformer(vocab, SEED), { optimizer: { lr: ADAM.learningRate, weightDecay: 0 }, reference: null });
  const m1 = await updateActor(direct, batch, o);
  const viaPolicy = new GptOssPolicy(tinyTransformer(vocab, SEED), { optimizer: { lr: 0.5, weightDecay: 0.3 }, reference: null });
  const m2 = await updateActorViaBackend(new GptOssBackend(viaPolicy), batch, { ...o, adam: ADAM });
  const weights = (p: GptOssPolicy) => new Map([...p.model.parameters()].map(([n, t]) => [n, Float32Array.from(t.data())]));
  return { direct: { metrics: m1, weights: weights(direct) }, seam: { metrics: m2, weights: weights(viaPolicy) }, start: weights(new GptOssPolicy(tinyTransformer(vocab, SEED), { optimizer: { lr: 1 }, reference: null })) };
}

function maxDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let k = 0; k < a.length; k++) m = Math.max(m, Math.abs(a[k] - b[k]));
  return m;
}

describe('training backend: Tinker loss definitions (per token, summed)', () => {
  const lp = [-0.5, -1.2, -2.0, -0.1, -3.0];
  const inputs = { target_tokens: [0, 0, 0, 0, 0], logprobs: [-0.7, -1.0, -2.6, -0.1, -2.0], advantages: [1.5, -0.8, 2.0, 0, -1.1], weights: [1, 0.5, 0, 2, 1] };
  const r = lp.map((x, i) => Math.exp(x - inputs.logprobs[i]));
  const clip = (x: number) => Math.min(Math.max(x, 0.8), 1.2);
  const expected: Record<LossFn, number> = {
    cross_entropy: -lp.reduce((s, x, i) => s + inputs.weights[i] * x, 0),
    importance_sampling: -r.reduce((s, x, i) => s + x * inputs.advantages[i], 0),
    ppo: -r.reduce((s, x, i) => s + Math.min(x * inputs.advantages[i], clip(x) * inputs.advantages[i]), 0),
    cispo: -r.reduce((s, x, i) => s + clip(x) * lp[i] * inputs.advantages[i], 0),
    dro: -lp.reduce((s, x, i) => s + x * inputs.advantages[i] - 0.5 * 0.3 * (x - inputs.logprobs[i]) ** 2, 0),
  };
  for (const fn of LOSS_FNS) {
    it(`${fn}: value as written in the Tinker docs, gradient = finite differences (cispo: clipped ratio held constant)`, () => {
      const config = fn === 'dro' ? { beta: 0.3 } : {};
      const out = tinkerLoss(fn, lp, inputs, config);
      assert.ok(Math.abs(out.loss - expected[fn]) < 1e-9, `${fn}: ${out.loss} vs ${expected[fn]}`);
      for (let i = 0; i < lp.length; i++) {
        const h = 1e-6;
        const up = [...lp], dn = [...lp];
        up[i] += h;
        dn[i] -= h;
        // cispo: sg(clip(r)) means the ratio stays at its value at lp.
        const f = (x: number[]) => (fn === 'cispo' ? -x.reduce((s, v, j) => s + clip(r[j]) * v * inputs.advantages[j], 0) : tinkerLoss(fn, x, inputs, config).loss);
        const fd = (f(up) - f(dn)) / (2 * h);
        assert.ok(Math.abs(out.dLogprob[i] - fd) < 1e-5, `${fn} token ${i}: ${out.dLogprob[i]} vs finite difference ${fd}`);
      }
    });
  }
  it('ppo clips at the configured ratio bounds, also per token from loss inputs', () => {
    const one = { target_tokens: [0], logprobs: [0], advantages: [1] };
    assert.equal(tinkerLoss('ppo', [Math.log(1.5)], one, { clip_high_threshold: 1.3 }).loss, -1.3);
    assert.equal(tinkerLoss('ppo', [Math.log(1.5)], { ...one, clip_high_threshold: [1.1] }).dLogprob[0], 0);
  });
});

describe('training backend: the GRPO actor update through the seam equals today\'s update', () => {
  for (const mode of LOSS_AGG_MODES) {
    it(`vanilla PPO clip + ${mode}, 2 mini-batches × 3 micro-batches: same pg_loss and weights after the steps`, async () => {
      const { batch, vocab } = await seededBatch(SEED);
      const { direct, seam, start } = await bothUpdates(batch, vocab, { lossAggMode: mode, ppoMicroBatchSize: 3, clipRatioHigh: 0.28 }, 6);
      assert.equal(seam.metrics['actor/optimizer_steps'], direct.metrics['actor/optimizer_steps']);
      assert.equal(seam.metrics['actor/optimizer_steps'], 2);
      assert.ok(direct.metrics['actor/pg_clipfrac'] > 0, 'some tokens are clipped');
      assert.ok(Math.abs(seam.metrics['actor/pg_loss'] - direct.metrics['actor/pg_loss']) <= 1e-5 * Math.max(1, Math.abs(direct.metrics['actor/pg_loss'])), `pg_loss ${seam.metrics['actor/pg_loss']} vs ${direct.metrics['actor/pg_loss']}`);
      let moved = 0;
      for (const [name, w] of direct.weights) {
        moved = Math.max(moved, maxDiff(w, start.get(name)!));
        assert.ok(maxDiff(seam.weights.get(name)!, w) <= 2e-5, `weights of ${name}: max diff ${maxDiff(seam.weights.get(name)!, w)}`);
      }
      assert.ok(moved > 1e-4, `the update moved the weights (${moved})`);
    });
  }
  it('an SFT loss (rft) through cross_entropy weights equals today\'s update', async () => {
    const { batch, vocab } = await seededBatch(SEED);
    const { direct, seam } = await bothUpdates(batch, vocab, { policyLoss: 'sft', lossAggMode: 'token-mean' });
    assert.ok(Math.abs(seam.metrics['actor/pg_loss'] - direct.metrics['actor/pg_loss']) <= 1e-5 * Math.abs(direct.metrics['actor/pg_loss']));
    for (const [name, w] of direct.weights) assert.ok(maxDiff(seam.weights.get(name)!, w) <= 2e-5, `weights of ${name}`);
  });
  it('refuses what the seam cannot carry, with a message', async () => {
    const { batch, vocab } = await seededBatch(SEED);
    const backend = new GptOssBackend(new GptOssPolicy(tinyTransformer(vocab, SEED), { optimizer: { lr: 1e-3 }, reference: null }));
    await assert.rejects(updateActorViaBackend(backend, batch, { ...options(batch, { useKlLoss: true }), adam: ADAM }), /KL loss/);
    await assert.rejects(updateActorViaBackend(backend, batch, { ...options(batch, { entropyCoeff: 0.01 }), adam: ADAM }), /entropy bonus/);
    await assert.rejects(updateActorViaBackend(backend, batch, { ...options(batch, { policyLoss: 'gspo', lossAggMode: 'seq-mean-token-mean' }), adam: ADAM }), /'gspo' has no Tinker counterpart/);
    await assert.rejects(updateActorViaBackend(backend, batch, { ...options(batch, {}), temperature: 0.7, adam: ADAM }), /temperature 1/);
  });
});

describe('training backend: GptOssBackend', () => {
  const vocab = 12;
  const datum = (n: number): Datum => ({ tokens: Array.from({ length: n }, (_, i) => (i * 5) % vocab), lossInputs: { target_tokens: Array.from({ length: n }, (_, i) => ((i + 1) * 5) % vocab), weights: Array.from({ length: n }, (_, i) => (i % 2 ? 1 : 0.5)) } });
  it('forward reports loss:sum = −Σ w·lp of the logprobs it returns; forwardBackward + optimStep lowers it; bad datums are refused', async () => {
    const backend = new GptOssBackend(new GptOssPolicy(tinyTransformer(vocab, 2), { optimizer: { lr: 1e-3 }, reference: null }));
    const data = [datum(7), datum(4)];
    const before = await backend.forward(data, 'cross_entropy');
    const sum = -data.reduce((s, d, k) => s + before.logprobs[k].reduce((a, x, i) => a + x * d.lossInputs.weights![i], 0), 0);
    assert.ok(Math.abs(before.metrics['loss:sum'] - sum) < 1e-4);
    for (let step = 0; step < 3; step++) {
      await backend.forwardBackward(data, 'cross_entropy');
      await backend.optimStep({ learningRate: 1e-2, beta1: 0.9, beta2: 0.95, eps: 1e-12, weightDecay: 0, gradClipNorm: 1 });
    }
    const after = await backend.forward(data, 'cross_entropy');
    assert.ok(after.metrics['loss:sum'] < before.metrics['loss:sum'] - 0.1, `${after.metrics['loss:sum']} < ${before.metrics['loss:sum']}`);
    await assert.rejects(backend.forward([{ tokens: [1, 2], lossInputs: { target_tokens: [1] } }], 'cross_entropy'), /target_tokens' has 1 values/);
    await assert.rejects(backend.forward([{ tokens: [1, 99], lossInputs: { target_tokens: [1, 2] } }], 'cross_entropy'), /input token 1 \(99\)/);
    await assert.rejects(backend.forward([datum(3)], 'ppo'), /'logprobs' is required/);
    await assert.rejects(backend.forward([datum(3)], 'nope' as LossFn), /unknown loss function/);
    const s = await backend.sample([1, 2, 3], 2, { maxTokens: 4, seed: 1 });
    assert.equal(s.length, 2);
    for (const q of s) assert.ok(q.tokens.length === q.logprobs.length && q.tokens.length >= 1 && q.logprobs.every((x) => x <= 0));
  });
});
