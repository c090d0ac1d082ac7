/**
 * Online rejection-sampling fine-tuning (`algorithm.advEstimator: 'rft'`): sample n episodes per task, keep those
 * with task reward ≥ `rft.minReward`, take an SFT step on the kept ones (RAFT, arXiv 2304.06767; STaR, arXiv
 * 2203.14465), through the GRPO trainer's generation, validation, checkpoints and metrics.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentLoop, type Trajectory } from '../../src/rollout/agent-loop.ts';
import type { Batch } from '../../src/rollout/batch.ts';
import { collate } from '../../src/rollout/collate.ts';
import { flattenGroups, sampleGroups } from '../../src/rollout/groups.ts';
import { createModelEngine } from '../../src/rollout/model-engine.ts';
import { updateActor } from '../../src/rl/actor-update.ts';
import { computeAdvantages, rftSequenceAdvantages } from '../../src/rl/advantages.ts';
import { parseTrainerConfig, type TrainerConfigInput } from '../../src/rl/config.ts';
import { GptOssPolicy } from '../../src/rl/model-policy.ts';
import type { Policy } from '../../src/rl/policy.ts';
import { sftPolicyLoss } from '../../src/rl/policy-loss.ts';
import { GrpoTrainer } from '../../src/rl/trainer.ts';
import { createToySetup } from '../../src/recipes/toy/toy-task.ts';
import { tinyTransformer } from './policy-fixtures.ts';

type ToySetup = ReturnType<typeof createToySetup>;

const rftConfig = (steps: number, extra: Partial<TrainerConfigInput> = {}): TrainerConfigInput => ({
  data: { trainBatchSize: 4 },
  rollout: { n: 8, maxTurns: 3, maxResponseTokens: 40, concurrency: 4 },
  algorithm: { advEstimator: 'rft' },
  trainer: { totalSteps: steps, seed: 1, testFreq: steps, valN: 16 },
  ...extra,
});

function toyTrainer(raw: TrainerConfigInput, s: ToySetup, o: { policy?: Policy; log?: (l: string) => void } = {}) {
  return new GrpoTrainer({ config: parseTrainerConfig(raw), policy: o.policy ?? s.policy, engine: s.engine, format: s.format, makeEnv: s.makeEnv, trainTasks: s.taskIds, valTasks: s.taskIds, padId: s.padId, log: o.log });
}

/** A copy of the tabular policy's logits table. */
const snapshot = (s: ToySetup) => new Map([...s.policy.table].map(([k, v]) => [k, Float64Array.from(v)]));

describe('rft config', () => {
  it("defaults the policy loss to 'sft' and minReward to 1; refuses what is not plain SFT, with the field named", () => {
    const c = parseTrainerConfig({ data: { trainBatchSize: 2 }, algorithm: { advEstimator: 'rft' }, trainer: { totalSteps: 1 } });
    assert.equal(c.actor.policyLoss, 'sft');
    assert.equal(c.algorithm.rft.minReward, 1);
    assert.equal(parseTrainerConfig({ data: { trainBatchSize: 2 }, trainer: { totalSteps: 1 } }).actor.policyLoss, 'vanilla', 'GRPO keeps its default');
    const rft = (extra: Record<string, unknown>) => () => parseTrainerConfig({ data: { trainBatchSize: 2 }, trainer: { totalSteps: 1 }, ...extra, algorithm: { advEstimator: 'rft', ...(extra.algorithm as object) } });
    assert.throws(rft({ actor: { policyLoss: 'vanilla' } }), /actor\.policyLoss: algorithm\.advEstimator rft takes an SFT step .*not vanilla/);
    assert.throws(rft({ actor: { useKlLoss: true } }), /actor\.useKlLoss: rft is plain SFT/);
    assert.throws(rft({ algorithm: { useKlInReward: true } }), /algorithm\.useKlInReward/);
    assert.throws(rft({ actor: { entropyCoeff: 0.01 } }), /actor\.entropyCoeff/);
    assert.throws(rft({ algorithm: { rolloutCorrection: { rolloutIs: 'token' } } }), /rolloutCorrection\.rolloutIs/);
    assert.throws(rft({ algorithm: { filterGroups: { enable: true } } }), /algorithm\.filterGroups/);
    assert.throws(rft({ algorithm: { actionCredit: { enable: true } } }), /algorithm\.actionCredit/);
    assert.throws(rft({ algorithm: { rft: { minReward: 0 } } }), /algorithm\.rft\.minReward/);
    assert.throws(() => parseTrainerConfig({ data: { trainBatchSize: 2 }, trainer: { totalSteps: 1 }, actor: { policyLoss: 'sft' } }), /'sft' is rejection-sampling fine-tuning's loss; use it with algorithm\.advEstimator: rft/);
    // Several epochs are allowed (documented: each is another SFT pass over the kept rows).
    assert.equal(rft({ actor: { ppoEpochs: 2 } })().actor.ppoEpochs, 2);
  });

  it('advantages: 1 on the rows whose score reaches minReward, 0 elsewhere, broadcast over the response mask', () => {
    assert.deepEqual([...rftSequenceAdvantages([0, 0.5, 1, 0.99, 0.49])], [0, 0, 1, 0, 0]);
    assert.deepEqual([...rftSequenceAdvantages([0, 0.5, 1, 0.99, 0.49], 0.5)], [0, 1, 1, 1, 0]);
    // Rows of width 3, the reward on each row's last response token; groups play no part (uids a, a, b).
    const r = computeAdvantages('rft', [0, 0, 1, 0, 0, 0, 0, 0.5, 0], [1, 1, 1, 1, 0, 0, 1, 1, 0], ['a', 'a', 'b'], 3, 3, { minReward: 0.5 });
    assert.deepEqual([...r.sequence], [1, 0, 1]);
    assert.deepEqual([...r.tokens], [1, 1, 1, 0, 0, 0, 1, 1, 0]);
  });

  it('sft policy loss: −log π on the masked tokens, ∂/∂log π = −1, no clipping', () => {
    const r = sftPolicyLoss({ logprobs: [-0.5, -2, -1], oldLogprobs: [-0.5, -1, -1], advantages: [0, 5, 0], responseMask: [1, 1, 0], rows: 1, cols: 3 });
    assert.deepEqual([...r.losses], [0.5, 2, 0]);
    assert.deepEqual([...r.dLogprob], [-1, -1, 0]);
    assert.equal(r.stats.clipFrac, 0);
    assert.ok(Math.abs(r.stats.approxKl - 0.5) < 1e-9, 'ppo_kl = mean(old − cur) = (0 + 1)/2');
  });
});

describe('toy RFT run', () => {
  it('raises validation success from ≤ 0.4 to ≥ 0.8 in 30 steps, training only on the reward-1 episodes', async () => {
    const s = createToySetup();
    const { validations, history } = await toyTrainer(rftConfig(30), s).fit();
    const before = validations[0]['val/success'];
    const after = validations.at(-1)!['val/success'];
    assert.ok(before <= 0.4, `initial success ${before}`);
    assert.ok(after >= 0.8, `final success ${after}`);
    assert.equal(history.length, 30);
    for (const h of history) {
      // Toy rewards are 0 or 1, so the kept share is the success rate.
      assert.equal(h['rft/kept_samples'], Math.round(h['success/mean'] * 32));
      assert.equal(h['rft/kept_share'], h['success/mean']);
      assert.equal(h['rft/skipped_steps'], h['rft/kept_samples'] === 0 ? 1 : 0);
      assert.equal(h['actor/optimizer_steps'], h['rft/kept_samples'] === 0 ? 0 : 1);
      assert.equal(h['actor/pg_clipfrac'], 0);
      assert.ok(!('timing/old_log_prob' in h) && !('timing/ref' in h), 'no old-log-prob or reference forward');
      // Only the sampler-vs-trainer check's scoring forward, on step 1 and every 10 (rolloutCorrection.checkEvery).
      const checked = h.step === 1 || h.step % 10 === 0;
      assert.equal('rollout/logprob_max_abs_diff' in h, checked, `step ${h.step}`);
      assert.equal('timing/logprob_check' in h, checked, `step ${h.step}`);
      if (checked) assert.ok(h['rollout/logprob_max_abs_diff'] < 1e-6 && h['rollout/logprob_alarm'] === 0);
    }
    // The NLL of the kept samples falls as the policy concentrates on the rewarded answers.
    const nll = history.filter((h) => h['rft/kept_samples'] > 0).map((h) => h['actor/pg_loss']);
    const avg = (xs: number[]) => xs.reduce((x, y) => x + y, 0) / xs.length;
    assert.ok(avg(nll.slice(-5)) < avg(nll.slice(0, 5)) / 2, `kept-sample NLL, first 5 steps ${avg(nll.slice(0, 5))} → last 5 ${avg(nll.slice(-5))}`);
  });

  it('the trainer scores only the kept rows and hands the policy −m / (kept tokens) per token', async () => {
    const s = createToySetup();
    const scored: { rewards: number[]; rows: number }[] = [];
    const grads: Float32Array[] = [];
    let masks: ArrayLike<number>[] = [];
    const p = s.policy;
    const policy: Policy = {
      logprobs: async (batch, o) => {
        if (o.grad) {
          const R = batch.tensor('responses').shape[1];
          const scores = batch.tensor('token_level_scores').data;
          const rowSum = (i: number) => {
            let sum = 0;
            for (let t = 0; t < R; t++) sum += scores[i * R + t];
            return sum;
          };
          scored.push({ rows: batch.size, rewards: Array.from({ length: batch.size }, (_, i) => rowSum(i)) });
          masks = [batch.tensor('response_mask').data];
        }
        return p.logprobs(batch, o);
      },
      backward: async (d, e) => {
        grads.push(Float32Array.from(d));
        return p.backward(d, e);
      },
      zeroGrad: () => p.zeroGrad(),
      optimizerStep: (o) => p.optimizerStep(o),
      referenceLogprobs: () => Promise.reject(new Error('rft asks for no reference log-probs')),
      syncToInference: () => p.syncToInference(),
      saveCheckpoint: (dir) => p.saveCheckpoint(dir),
      loadCheckpoint: (dir) => p.loadCheckpoint(dir),
    };
    const [m] = (await toyTrainer(rftConfig(1, { trainer: { totalSteps: 1, seed: 1 } }), s, { policy }).fit()).history;
    assert.ok(m['rft/kept_samples'] > 0 && m['rft/kept_samples'] < 32, `seed 1 keeps some rows: ${m['rft/kept_samples']}`);
    assert.equal(scored.length, 1);
    assert.equal(scored[0].rows, m['rft/kept_samples'], 'the dropped rows are never scored');
    assert.ok(scored[0].rewards.every((r) => r === 1), `kept rewards ${scored[0].rewards}`);
    const N = m['rft/kept_tokens'];
    assert.equal(masks[0].length, grads[0].length);
    let tokens = 0;
    for (let k = 0; k < grads[0].length; k++) {
      assert.ok(Math.abs(grads[0][k] - -masks[0][k] / N) < 1e-7, `slot ${k}: ${grads[0][k]}`);
      tokens += masks[0][k];
    }
    assert.equal(tokens, N);
  });
});

describe('rft mini-batches and epochs', () => {
  it('each mini-batch (one task group here) trains on its own kept rows, an empty one takes no step; 2 epochs = 2 SFT passes', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-rft-mini-'));
    try {
      const episodesFile = join(dir, 'episodes.jsonl');
      const s = createToySetup();
      const raw = rftConfig(1, { actor: { ppoMiniBatchSize: 1, ppoEpochs: 2 }, trainer: { totalSteps: 1, seed: 5, episodesFile } });
      const [m] = (await toyTrainer(raw, s).fit()).history;
      const episodes = readFileSync(episodesFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { taskId: string; reward: number });
      // 4 groups of 8 rows, one task each (one shuffled pass over the 4 tasks).
      assert.equal(new Set(episodes.map((e) => e.taskId)).size, 4);
      const withKept = new Set(episodes.filter((e) => e.reward === 1).map((e) => e.taskId)).size;
      assert.ok(withKept > 0 && withKept < 4, `seed 5: ${withKept} of 4 groups keep a row`);
      assert.equal(m['actor/optimizer_steps'], 2 * withKept);
      assert.equal(m['rft/skipped_steps'], 2 * (4 - withKept));
      assert.equal(m['rft/kept_samples'], episodes.filter((e) => e.reward === 1).length);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('rft step with no kept samples', () => {
  it('trainer: changes no weight of the toy policy and takes no optimizer step', async () => {
    const s = createToySetup();
    // One step with kept samples first, so Adam carries momentum into the empty step.
    const [first] = (await toyTrainer(rftConfig(1, { trainer: { totalSteps: 1, seed: 1 } }), s).fit()).history;
    assert.ok(first['rft/kept_samples'] > 0 && first['actor/optimizer_steps'] === 1);
    const before = snapshot(s);
    // One turn: the first move is a tool call, so no episode reaches its closing message and every reward is 0.
    const empty = toyTrainer(rftConfig(1, { rollout: { n: 8, maxTurns: 1, maxResponseTokens: 40, concurrency: 4 }, trainer: { totalSteps: 1, seed: 2 } }), s);
    const [m] = (await empty.fit()).history;
    assert.equal(m['reward/mean'], 0);
    assert.equal(m['rft/kept_samples'], 0);
    assert.equal(m['rft/kept_share'], 0);
    assert.equal(m['rft/skipped_steps'], 1);
    assert.equal(m['actor/optimizer_steps'], 0);
    const prior = createToySetup().policy;
    for (const [key, row] of s.policy.table) {
      const was = before.get(key) ?? prior.logitsOf(key); // rows first looked up in the empty step start at the prior
      assert.deepEqual([...row], [...was], key);
    }
    // The update itself with the gpt-oss policy, where a zero-gradient AdamW step would move weights: below.
  });
});

/** A seeded batch of 9 episodes (3 tasks × n 3) from the tiny gpt-oss on the toy task, with its trajectories. */
async function tinyBatch(seed: number): Promise<{ batch: Batch; trajectories: Trajectory[]; vocab: number }> {
  const s = createToySetup();
  const model = tinyTransformer(s.tokenizer.vocabSize, seed);
  const loop = new AgentLoop({ format: s.format, engine: createModelEngine(model, { maxBatchSize: 9 }), sampling: { temperature: 1 }, maxTurns: 3, maxResponseTokens: 40, maxTokensPerTurn: 8 });
  const groups = await sampleGroups({ loop, makeEnv: s.makeEnv, groups: [0, 1, 2].map((k) => ({ taskId: `toy-${k}`, uid: `g${k}` })), n: 3, seed, concurrency: 9 });
  const { trajectories, uids } = flattenGroups(groups);
  const batch = collate(trajectories, { padId: s.padId, uids, temperature: 1 });
  return { batch, trajectories, vocab: s.tokenizer.vocabSize };
}

class CountingPolicy extends GptOssPolicy {
  scoredRows = 0;
  override async logprobs(batch: Batch, o: Parameters<GptOssPolicy['logprobs']>[1]) {
    this.scoredRows += batch.size;
    return super.logprobs(batch, o);
  }
}

const maxAbs = (a: Float32Array) => a.reduce((m, x) => Math.max(m, Math.abs(x)), 0);
const maxDiff = (a: Float32Array, b: Float32Array) => a.reduce((m, x, k) => Math.max(m, Math.abs(x - b[k])), 0);

describe('rft update = an SFT step on the kept samples (tiny gpt-oss)', () => {
  const SEED = 11;
  // Made-up episode rewards for the 9 rows; minReward 0.5 keeps rows 0, 2, 3, 6, 7.
  const rewards = [1, 0, 1, 1, 0, 0, 0.5, 1, 0.25];
  const kept = [0, 2, 3, 6, 7];

  async function rftUpdate(actor: NonNullable<TrainerConfigInput['actor']>, rowRewards: readonly number[] = rewards) {
    const { batch, trajectories, vocab } = await tinyBatch(SEED);
    const B = batch.size;
    const R = batch.tensor('responses').shape[1];
    const scores = new Float32Array(B * R);
    trajectories.forEach((t, i) => (scores[i * R + t.responseIds.length - 1] = rowRewards[i]));
    const mask = batch.tensor('response_mask').data;
    const adv = computeAdvantages('rft', scores, mask, batch.object<string>('uid'), B, R, { minReward: 0.5 });
    batch.setTensor('advantages', adv.tokens, [B, R]);
    batch.setTensor('old_log_probs', Float32Array.from(batch.tensor('rollout_log_probs').data), [B, R]);
    const model = tinyTransformer(vocab, SEED);
    const policy = new CountingPolicy(model, { optimizer: { lr: 1e-3, weightDecay: 0.1 }, reference: null });
    const config = parseTrainerConfig({ data: { trainBatchSize: 3 }, rollout: { n: 3 }, algorithm: { advEstimator: 'rft', rft: { minReward: 0.5 } }, actor: { gradClip: 0, ...actor }, trainer: { totalSteps: 1 } });
    const weightsBefore = new Map([...model.parameters()].map(([name, p]) => [name, Float32Array.from(p.data())]));
    const metrics = await updateActor(policy, batch, { actor: config.actor, miniBatchRows: B, temperature: 1, lossScaleFactor: 40, keep: adv.sequence });
    const grads = new Map([...model.gradients()].map(([name, g]) => [name, Float32Array.from(g.toArray())]));
    const weights = new Map([...model.parameters()].map(([name, p]) => [name, Float32Array.from(p.data())]));
    return { grads, weights, weightsBefore, metrics, trajectories, vocab, policy, keep: adv.sequence };
  }

  /** The reference: the model's own SFT loss (mean NLL over the weighted targets) on the kept episodes, packed as documents. */
  function directSft(trajectories: readonly Trajectory[], rows: readonly number[], vocab: number) {
    const tokens: number[] = [], docIds: number[] = [], targets: number[] = [];
    for (const [d, i] of rows.entries()) {
      const t = trajectories[i];
      const ids = [...t.promptIds, ...t.responseIds];
      const P = t.promptIds.length;
      ids.forEach((id, p) => {
        tokens.push(id);
        docIds.push(d);
        // Predict the next token when the model generated it (response mask 1).
        targets.push(p + 1 < ids.length && p + 1 >= P && t.responseMask[p + 1 - P] === 1 ? ids[p + 1] : -1);
      });
    }
    const model = tinyTransformer(vocab, SEED);
    const r = model.forward({ tokens, docIds, targets }, { grad: true });
    model.backward(); // d(mean NLL)/d logπ = −w / Σ w
    return { loss: r.loss, targets: targets.filter((x) => x >= 0).length, grads: new Map([...model.gradients()].map(([name, g]) => [name, Float32Array.from(g.toArray())])) };
  }

  for (const [label, actor] of [['1 micro-batch', {}], ['3 fixed-size micro-batches', { ppoMicroBatchSize: 3 }], ['token-budget micro-batches', { ppoMaxTokenLenPerMicro: 60 }]] as const) {
    it(`${label}: the same loss and gradients, within float tolerance; the dropped rows are never scored`, async () => {
      const u = await rftUpdate(actor);
      assert.deepEqual([...u.keep], [1, 0, 1, 1, 0, 0, 1, 1, 0]);
      const ref = directSft(u.trajectories, kept, u.vocab);
      assert.ok(ref.targets > 20, `${ref.targets} target tokens`);
      assert.equal(u.policy.scoredRows, kept.length);
      assert.equal(u.metrics['actor/optimizer_steps'], 1);
      assert.ok(Math.abs(u.metrics['actor/pg_loss'] - ref.loss) <= 1e-5 * ref.loss, `loss ${u.metrics['actor/pg_loss']} vs SFT ${ref.loss}`);
      for (const [name, g] of ref.grads) {
        const scale = maxAbs(g);
        assert.ok(scale > 0, `${name} has a gradient`);
        assert.ok(maxDiff(u.grads.get(name)!, g) <= 1e-5 * scale, `${name}: max diff ${maxDiff(u.grads.get(name)!, g)} at scale ${scale}`);
      }
    });
  }

  it('no kept row: no forward, no optimizer step, every weight bit-identical (a zero-gradient AdamW step with weight decay 0.1 would move them)', async () => {
    const u = await rftUpdate({}, [0, 0.25, 0, 0.4, 0, 0, 0, 0.1, 0]);
    assert.deepEqual([...u.keep], new Array(9).fill(0));
    assert.equal(u.policy.scoredRows, 0);
    assert.equal(u.metrics['actor/optimizer_steps'], 0);
    assert.equal(u.policy.optimizer.step, 0);
    for (const [name, w] of u.weightsBefore) assert.deepEqual(u.weights.get(name), w, name);
    // The control: a zero-gradient AdamW step does change weights (decoupled weight decay).
    await u.policy.optimizerStep({ gradClip: 0 });
    assert.ok([...u.weightsBefore].some(([name, w]) => maxDiff(Float32Array.from(u.policy.model.param(name).data()), w) > 0));
  });
});

describe('rft resume', () => {
  it('a run killed after step 3 and resumed from its step-2 checkpoint has the rows and weights of an uninterrupted run', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-rft-resume-'));
    try {
      const raw = (out: string): TrainerConfigInput => rftConfig(6, {
        trainer: { totalSteps: 6, seed: 7, testFreq: 2, valN: 2, saveFreq: 2, checkpointDir: join(out, 'ckpt'), metricsFile: join(out, 'metrics.jsonl'), episodesFile: join(out, 'episodes.jsonl') },
      });
      const rows = (out: string, file: string) => readFileSync(join(out, file), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
      const noTiming = (r: Record<string, unknown>) => Object.fromEntries(Object.entries(r).filter(([k]) => !k.startsWith('timing') && !k.startsWith('perf/')));
      for (const run of ['straight', 'killed']) mkdirSync(join(dir, run));
      const straight = createToySetup();
      await toyTrainer(raw(join(dir, 'straight')), straight).fit();
      const killed = toyTrainer(raw(join(dir, 'killed')), createToySetup(), {
        log: (l) => {
          if (l.startsWith('step 3:')) throw new Error('killed');
        },
      });
      await assert.rejects(killed.fit(), /killed/);
      const log: string[] = [];
      const again = createToySetup();
      await toyTrainer(raw(join(dir, 'killed')), again, { log: (l) => log.push(l) }).fit();
      assert.ok(log.some((l) => /resumed from .* at step 2/.test(l)));
      const metrics = rows(join(dir, 'killed'), 'metrics.jsonl');
      assert.deepEqual(metrics.map((r) => `${r.kind}${r.step}`), ['val0', 'train1', 'train2', 'val2', 'train3', 'train4', 'val4', 'train5', 'train6', 'val6']);
      assert.ok(metrics.filter((r) => r.kind === 'train').some((r) => (r['rft/kept_samples'] as number) > 0), 'some steps trained');
      assert.deepEqual(metrics.map(noTiming), rows(join(dir, 'straight'), 'metrics.jsonl').map(noTiming));
      assert.deepEqual(rows(join(dir, 'killed'), 'episodes.jsonl'), rows(join(dir, 'straight'), 'episodes.jsonl'));
      for (const [k, v] of straight.policy.table) assert.deepEqual([...again.policy.table.get(k)!], [...v], k);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
