import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { Batch } from '../../src/rollout/batch.ts';
import { LOSS_AGG_MODES } from '../../src/rl/aggregate.ts';
import { scoreInMicroBatches, updateActor } from '../../src/rl/actor-update.ts';
import { parseTrainerConfig, type TrainerConfigInput } from '../../src/rl/config.ts';
import { GptOssPolicy } from '../../src/rl/model-policy.ts';
import { tinyTransformer, trainingBatch as seededBatch } from './policy-fixtures.ts';

const SEED = 11;


/** One optimizer step on a fresh copy of the same tiny model; returns its gradients (unclipped), weights and metrics. */
async function update(batch: Batch, vocab: number, actor: NonNullable<TrainerConfigInput['actor']>) {
  const model = tinyTransformer(vocab, SEED);
  const policy = new GptOssPolicy(model, { optimizer: { lr: 1e-3, weightDecay: 0 }, reference: null });
  const config = parseTrainerConfig({ data: { trainBatchSize: 3 }, rollout: { n: 3 }, actor: { gradClip: 0, useKlLoss: true, klLossCoef: 0.1, entropyCoeff: 0.01, ...actor }, trainer: { totalSteps: 1 } });
  const metrics = await updateActor(policy, batch, { actor: config.actor, miniBatchRows: batch.size, temperature: 1, lossScaleFactor: 40 });
  const grads = new Map([...model.gradients()].map(([name, g]) => [name, Float32Array.from(g.toArray())]));
  const weights = new Map([...model.parameters()].map(([name, p]) => [name, Float32Array.from(p.data())]));
  return { grads, weights, metrics };
}

function maxAbs(a: Float32Array): number {
  let m = 0;
  for (const x of a) m = Math.max(m, Math.abs(x));
  return m;
}

function maxDiff(a: Float32Array, b: Float32Array): number {
  let m = 0;
  for (let k = 0; k < a.length; k++) m = Math.max(m, Math.abs(a[k] - b[k]));
  return m;
}

describe('actor update: mini-batch denominators (the same update however the mini-batch is split)', () => {
  for (const [policyLoss, mode] of [...LOSS_AGG_MODES.map((m) => ['vanilla', m] as const), ['gspo', 'seq-mean-token-mean'] as const]) {
    it(`${policyLoss} + ${mode}, with KL loss and entropy bonus: 1 micro-batch = 3 fixed-size = token-budget micro-batches`, async () => {
      const { batch, vocab } = await seededBatch(SEED, { reference: true });
      const actor = { policyLoss, lossAggMode: mode };
      const whole = await update(batch, vocab, actor);
      let tokens = 0;
      for (const x of batch.tensor('attention_mask').data) tokens += x;
      const budget = Math.ceil(tokens / 4);
      const splits = {
        fixed: await update(batch, vocab, { ...actor, ppoMicroBatchSize: 3 }),
        tokenBudget: await update(batch, vocab, { ...actor, ppoMaxTokenLenPerMicro: budget }),
      };
      assert.equal(whole.metrics['actor/micro_batches'], 1);
      assert.equal(splits.fixed.metrics['actor/micro_batches'], 3);
      assert.ok(splits.tokenBudget.metrics['actor/micro_batches'] >= 4, `token budget ${budget}: ${splits.tokenBudget.metrics['actor/micro_batches']} micro-batches`);
      for (const [label, split] of Object.entries(splits)) {
        for (const key of ['actor/pg_loss', 'actor/kl_loss', 'actor/entropy_loss', 'actor/pg_clipfrac', 'actor/ppo_kl', 'actor/grad_norm']) {
          assert.ok(Math.abs(split.metrics[key] - whole.metrics[key]) <= 1e-5 * Math.max(1, Math.abs(whole.metrics[key])), `${label} ${key}: ${split.metrics[key]} vs ${whole.metrics[key]}`);
        }
        assert.ok(whole.metrics['actor/pg_clipfrac'] > 0, 'some tokens are clipped');
        for (const [name, g] of whole.grads) {
          const scale = maxAbs(g);
          assert.ok(scale > 0, `${name} has a gradient`);
          assert.ok(maxDiff(split.grads.get(name)!, g) <= 1e-5 * scale, `${label} gradient of ${name}: max diff ${maxDiff(split.grads.get(name)!, g)} at scale ${scale}`);
        }
        // After the AdamW step (lr 1e-3): the same weights, up to float noise (Adam's normalisation amplifies it on tiny gradients).
        for (const [name, w] of whole.weights) assert.ok(maxDiff(split.weights.get(name)!, w) <= 2e-5, `${label} weights of ${name}: max diff ${maxDiff(split.weights.get(name)!, w)}`);
      }
    });
  }
});

describe('actor update: zero-advantage rows (skipZeroAdvantageRows)', () => {
  // Every aggregation mode (the shipped one is seq-mean-token-mean) with both losses: a skipped row must still count in
  // the mini-batch's denominators (tokens for token-mean, sequences for the seq-mean-* modes).
  for (const [policyLoss, lossAggMode] of (['vanilla', 'gspo'] as const).flatMap((l) => LOSS_AGG_MODES.map((m) => [l, m] as const))) {
    it(`${policyLoss} + ${lossAggMode}: rows with advantage 0 are not scored, and the update is the one that scores every row`, async () => {
      const { batch, vocab } = await seededBatch(SEED, { reference: true });
      const B = batch.size, R = batch.tensor('responses').shape[1];
      // GRPO's all-equal groups: rows 3–5 (the second group) get advantage 0 on every token.
      const adv = Float32Array.from(batch.tensor('advantages').data);
      for (let i = 3; i < 6; i++) adv.fill(0, i * R, (i + 1) * R);
      batch.setTensor('advantages', adv, [B, R]);
      const actor = { policyLoss, lossAggMode, useKlLoss: false, entropyCoeff: 0, ppoMicroBatchSize: 1 };
      const all = await update(batch, vocab, { ...actor, skipZeroAdvantageRows: false });
      const skip = await update(batch, vocab, actor);
      assert.equal(all.metrics['actor/micro_batches'], B);
      assert.equal(skip.metrics['actor/micro_batches'], B - 3, 'one micro-batch a scored row');
      assert.equal(skip.metrics['actor/scored_rows_share'], (B - 3) / B);
      assert.equal(all.metrics['actor/scored_rows_share'], 1);
      assert.ok(Math.abs(skip.metrics['actor/pg_loss'] - all.metrics['actor/pg_loss']) <= 1e-6 * Math.max(1, Math.abs(all.metrics['actor/pg_loss'])));
      for (const [name, g] of all.grads) {
        const scale = maxAbs(g);
        assert.ok(scale > 0, `${name} has a gradient`);
        assert.ok(maxDiff(skip.grads.get(name)!, g) <= 1e-5 * scale, `gradient of ${name}: max diff ${maxDiff(skip.grads.get(name)!, g)} at scale ${scale}`);
      }
      // A KL loss gives zero-advantage rows a gradient: every row is scored then.
      const withKl = await update(batch, vocab, { ...actor, useKlLoss: true });
      assert.equal(withKl.metrics['actor/scored_rows_share'], 1);
    });
  }

  it('a mini-batch whose rows all have advantage 0 still takes its optimizer step, without any forward', async () => {
    const { batch, vocab } = await seededBatch(SEED);
    batch.setTensor('advantages', new Float32Array(batch.tensor('advantages').data.length), batch.tensor('advantages').shape);
    const r = await update(batch, vocab, { useKlLoss: false, entropyCoeff: 0 });
    assert.equal(r.metrics['actor/micro_batches'], 0);
    assert.equal(r.metrics['actor/optimizer_steps'], 1);
    assert.equal(r.metrics['actor/grad_norm'], 0);
  });
});

describe('scoring forwards in micro-batches (scoreInMicroBatches)', () => {
  it('π_old log-probs and entropies stitched from micro-batches equal one forward over the batch', async () => {
    const { batch, vocab } = await seededBatch(SEED, { reference: true });
    const B = batch.size, R = batch.tensor('responses').shape[1];
    const model = tinyTransformer(vocab, SEED);
    const policy = new GptOssPolicy(model, { optimizer: { lr: 1e-3, weightDecay: 0 }, reference: null });
    const score = (b: Batch) => policy.logprobs(b, { temperature: 0.7, grad: false, entropy: true });
    const whole = await score(batch);
    let tokens = 0;
    for (const x of batch.tensor('attention_mask').data) tokens += x;
    const base = parseTrainerConfig({ data: { trainBatchSize: 3 }, rollout: { n: 3 }, trainer: { totalSteps: 1 } }).actor;
    const mask = batch.tensor('response_mask').data;
    for (const [label, actor] of [['fixed size 2', { ...base, ppoMicroBatchSize: 2 }], ['token budget', { ...base, ppoMaxTokenLenPerMicro: Math.ceil(tokens / 4) }]] as const) {
      const calls: number[] = [];
      const split = await scoreInMicroBatches(batch, actor, (b) => { calls.push(b.size); return score(b); });
      assert.ok(calls.length >= (label === 'fixed size 2' ? 5 : 4), `${label}: ${calls.join(', ')}`);
      assert.equal(calls.reduce((x, y) => x + y, 0), B);
      assert.equal(split.logprobs.length, B * R);
      let m = 0;
      for (let k = 0; k < B * R; k++) if (mask[k]) m = Math.max(m, Math.abs(split.logprobs[k] - whole.logprobs[k]), Math.abs(split.entropy![k] - whole.entropy![k]));
      assert.ok(m <= 1e-5, `${label}: max |Δ| ${m}`);
    }
    // One budget that holds the batch: a single call on the batch itself.
    const calls: number[] = [];
    await scoreInMicroBatches(batch, { ...base, ppoMaxTokenLenPerMicro: tokens }, (b) => { calls.push(b.size); return score(b); });
    assert.deepEqual(calls, [B]);
    // A scorer that returns the wrong shape is refused.
    await assert.rejects(scoreInMicroBatches(batch, { ...base, ppoMicroBatchSize: 2 }, async () => ({ logprobs: new Float32Array(1) })), /'logprobs' has 1 values for 2 rows/);
  });
});
