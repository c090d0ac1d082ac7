import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentLoop } from '../../src/rollout/agentLoop.ts';
import { collate } from '../../src/rollout/collate.ts';
import { flattenGroups, sampleGroups } from '../../src/rollout/groups.ts';
import { parseTrainerConfig, type TrainerConfigInput } from '../../src/rl/config.ts';
import { GrpoTrainer, rolloutIsWeights, type Metrics } from '../../src/rl/trainer.ts';
import { createToySetup } from '../../src/rl/toy/toyTask.ts';

/** The policy under test. Swap this for the tiny transformer (policy + engine + format) when it lands. */
function setup() {
  return createToySetup();
}

function trainer(raw: TrainerConfigInput, s = setup(), extra: { log?: (l: string) => void; taskFamily?: (id: string) => string | undefined } = {}) {
  const config = parseTrainerConfig(raw);
  return { s, t: new GrpoTrainer({ config, policy: s.policy, engine: s.engine, format: s.format, makeEnv: s.makeEnv, trainTasks: s.taskIds, padId: s.padId, ...extra }) };
}

const base = (steps: number): TrainerConfigInput => ({
  data: { trainBatchSize: 4 },
  rollout: { n: 8, maxTurns: 3, maxResponseTokens: 40, concurrency: 4 },
  trainer: { totalSteps: steps, seed: 1, testFreq: steps, valN: 16 },
});

describe('toy GRPO run', () => {
  it('raises success from ≤ 0.4 to ≥ 0.8', async () => {
    const { t } = trainer(base(30));
    const { validations, history } = await t.fit();
    const before = validations[0]['val/success'];
    const after = validations.at(-1)!['val/success'];
    assert.ok(before <= 0.4, `initial success ${before}`);
    assert.ok(after >= 0.8, `final success ${after}`);
    assert.equal(history.length, 30);
    assert.ok(validations.at(-1)!['val/pass^4'] <= after);
    // On-policy: the rollout log-probs equal the recomputed old log-probs every step.
    assert.ok(history.every((h) => h['rollout/logprob_max_abs_diff'] < 1e-6));
  });
});

describe('trainer episode records and per-family validation', () => {
  it('writes one episodes.jsonl line per training and validation episode and reports val/family/* rewards', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-episodes-'));
    try {
      const episodesFile = join(dir, 'episodes.jsonl');
      const raw = base(2);
      raw.trainer = { ...raw.trainer, testFreq: 2, valN: 2, episodesFile };
      const { s, t } = trainer(raw, setup(), { taskFamily: (id) => (Number(id.split('-')[1]) % 2 === 0 ? 'even' : 'odd') });
      const { validations } = await t.fit();
      const lines = readFileSync(episodesFile, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      const train = lines.filter((l) => l.kind === 'train'), val = lines.filter((l) => l.kind === 'val');
      assert.equal(train.length, 2 * 4 * 8, '2 steps × 4 tasks × n 8');
      assert.equal(val.length, 2 * s.taskIds.length * 2, 'validation at steps 0 and 2, valN 2');
      assert.deepEqual([...new Set(train.map((l) => l.step))], [1, 2]);
      for (const l of lines) {
        assert.ok(l.promptTokens > 0 && l.responseTokens >= l.modelTokens && l.modelTokens > 0, JSON.stringify(l));
        assert.ok(l.family === 'even' || l.family === 'odd');
      }
      const last = validations.at(-1)!;
      const finalVal = val.filter((l) => l.step === 2);
      for (const f of ['even', 'odd']) {
        const rs = finalVal.filter((l) => l.family === f).map((l) => l.reward);
        assert.ok(Math.abs(last[`val/family/${f}/reward`] - rs.reduce((a, b) => a + b, 0) / rs.length) < 1e-9);
      }
      assert.ok('val/tool_error_rate' in last && 'val/total_length/max' in last);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('policy log-probs', () => {
  it('recomputed log-probs match the rollout log-probs for the same weights', async () => {
    const s = setup();
    const loop = new AgentLoop({ format: s.format, engine: s.engine, sampling: { temperature: 0.7 }, maxTurns: 3, maxResponseTokens: 40 });
    const groups = await sampleGroups({ loop, makeEnv: s.makeEnv, groups: [{ taskId: 'toy-1', uid: 'a' }, { taskId: 'toy-2', uid: 'b' }], n: 4, seed: 5 });
    const { trajectories, uids } = flattenGroups(groups);
    const batch = collate(trajectories, { padId: s.padId, uids, temperature: 0.7 });
    const lp = await s.policy.logprobs(batch, { temperature: 0.7, grad: false, entropy: false });
    const rollout = batch.tensor('rollout_log_probs').data;
    const mask = batch.tensor('response_mask').data;
    let compared = 0;
    for (let k = 0; k < mask.length; k++) {
      if (!mask[k]) continue;
      assert.ok(Math.abs(lp.logprobs[k] - rollout[k]) < 1e-6, `token ${k}: ${lp.logprobs[k]} vs ${rollout[k]}`);
      compared++;
    }
    assert.ok(compared > 10);
    // A different temperature gives different log-probs (the temperature is really applied).
    const hot = await s.policy.logprobs(batch, { temperature: 1, grad: false, entropy: false });
    assert.ok(hot.logprobs.some((v, k) => mask[k] && Math.abs(v - rollout[k]) > 1e-3));
  });

  it('tabular policy backward matches finite differences (log-probs and entropy)', async () => {
    const s = setup();
    const loop = new AgentLoop({ format: s.format, engine: s.engine, sampling: { temperature: 1 }, maxTurns: 3, maxResponseTokens: 40 });
    const groups = await sampleGroups({ loop, makeEnv: s.makeEnv, groups: [{ taskId: 'toy-0', uid: 'a' }], n: 3, seed: 2 });
    const { trajectories, uids } = flattenGroups(groups);
    const batch = collate(trajectories, { padId: s.padId, uids, temperature: 0.8 });
    const n = batch.tensor('response_mask').data.length;
    const wl = Float32Array.from({ length: n }, (_, k) => Math.sin(k + 1));
    const we = Float32Array.from({ length: n }, (_, k) => Math.cos(k + 2) * 0.5);
    const objective = async () => {
      const f = await s.policy.logprobs(batch, { temperature: 0.8, grad: false, entropy: true });
      let v = 0;
      for (let k = 0; k < n; k++) v += wl[k] * f.logprobs[k] + we[k] * f.entropy![k];
      return v;
    };
    await s.policy.logprobs(batch, { temperature: 0.8, grad: true, entropy: true });
    s.policy.zeroGrad();
    await s.policy.backward(wl, we);
    const grads = (s.policy as unknown as { grads: Map<string, Float64Array> }).grads;
    let checked = 0;
    for (const [key, g] of [...grads].slice(0, 4)) {
      const row = s.policy.logitsOf(key);
      for (const j of [0, 7, 12]) {
        const h = 1e-4;
        row[j] += h;
        const up = await objective();
        row[j] -= 2 * h;
        const dn = await objective();
        row[j] += h;
        const fd = (up - dn) / (2 * h);
        assert.ok(Math.abs(fd - g[j]) < 1e-3, `${key}[${j}]: analytic ${g[j]} vs fd ${fd}`);
        checked++;
      }
    }
    assert.ok(checked >= 6);
  });
});

const strip = (m: Metrics) => Object.fromEntries(Object.entries(m).filter(([k]) => !k.startsWith('timing/') && !k.endsWith('_per_s')));

describe('trainer checkpoints, metrics and variants', () => {
  it('resumes exactly: 2 + 2 steps with a checkpoint equal 4 straight steps', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-rl-'));
    try {
      const cfg = (steps: number, ckpt?: string): TrainerConfigInput => ({ ...base(steps), trainer: { totalSteps: steps, seed: 3, saveFreq: 2, checkpointDir: ckpt, metricsFile: ckpt ? join(ckpt, 'metrics.jsonl') : undefined } });
      const straight = trainer(cfg(4));
      await straight.t.fit();
      const first = trainer(cfg(2, dir));
      await first.t.fit();
      assert.equal(readFileSync(join(dir, 'latest'), 'utf8'), '2');
      const resumed = trainer(cfg(4, dir));
      await resumed.t.fit();
      assert.equal(resumed.t.step, 4);
      assert.deepEqual(resumed.t.history.map(strip), straight.t.history.map(strip));
      assert.deepEqual([...resumed.s.policy.table.keys()].sort(), [...straight.s.policy.table.keys()].sort());
      for (const [k, v] of straight.s.policy.table) assert.deepEqual([...resumed.s.policy.table.get(k)!], [...v]);
      const lines = readFileSync(join(dir, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>);
      assert.deepEqual(lines.map((l) => l.step), [1, 2, 3, 4]);
      for (const key of ['reward/mean', 'success/mean', 'response_length/mean', 'turns/mean', 'tool_error_rate', 'actor/entropy', 'actor/pg_clipfrac', 'actor/ppo_kl', 'actor/grad_norm', 'perf/tokens_per_s', 'timing/gen', 'timing/update']) {
        assert.equal(typeof lines[0][key], 'number', key);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('runs every loss/estimator variant with mini/micro-batches, KL loss, entropy bonus, DAPO', async () => {
    const variants: TrainerConfigInput['actor'][] = [
      { policyLoss: 'gspo', clipRatio: 0.1 },
      { ppoMaxTokenLenPerMicro: 200, lossAggMode: 'seq-mean-token-mean' },
      { ppoMiniBatchSize: 2, ppoMicroBatchSize: 4, ppoEpochs: 2, clipRatioHigh: 0.28, useKlLoss: true, klLossType: 'k3+', entropyCoeff: 0.01, lossAggMode: 'seq-mean-token-sum-norm' },
    ];
    for (const actor of variants) {
      const { t } = trainer({ ...base(2), actor, trainer: { totalSteps: 2 } });
      const { history } = await t.fit();
      for (const h of history) for (const [k, v] of Object.entries(h)) assert.ok(Number.isFinite(v), `${k} = ${v}`);
      if (actor?.ppoMaxTokenLenPerMicro) assert.ok(history.every((h) => h['actor/micro_batches'] >= 2), 'the token budget splits the batch');
      if (actor?.ppoMiniBatchSize) {
        assert.equal(history[0]['actor/optimizer_steps'], 4); // 2 epochs × 2 mini-batches
        assert.ok('actor/kl_loss' in history[0] && 'actor/entropy_loss' in history[0]);
        assert.ok(history[1]['actor/ppo_kl'] !== 0 || history[1]['actor/pg_clipfrac'] >= 0);
      }
    }
    const dapo = trainer({
      ...base(2),
      algorithm: { advEstimator: 'rloo', useKlInReward: true, filterGroups: { enable: true, metric: 'success', maxNumGenBatches: 20 }, overlongBuffer: { enable: true, len: 10, penaltyFactor: 0.5 } },
      trainer: { totalSteps: 2 },
    });
    const { history } = await dapo.t.fit();
    for (const h of history) {
      assert.equal(h['adv/zero_groups'], 0, 'dynamic sampling keeps only groups with reward variance');
      assert.ok(h['dapo/gen_rounds'] >= 1);
      assert.ok('critic/kl_in_reward' in h);
    }
  });

  it('rollout correction: truncated IS weights; on-policy bypass + IS reproduces the plain run', async () => {
    // Token: min(exp(old − rollout), 2); sequence: min(exp(Σ (old − rollout)), 2) on the masked tokens.
    const w = rolloutIsWeights([-1, -2, 0, -1, -1, 0], [-1.5, -1, 0, -1.1, -1.2, 0], [1, 1, 0, 1, 1, 0], 2, 3, 'token', 2);
    const close = (a: number, b: number) => assert.ok(Math.abs(a - b) < 1e-6, `${a} vs ${b}`);
    close(w[0], Math.exp(0.5));
    close(w[1], Math.exp(-1));
    assert.equal(w[2], 0);
    const ws = rolloutIsWeights([-1, -2, 0, -1, -1, 0], [-1.5, -1, 0, -3, -3, 0], [1, 1, 0, 1, 1, 0], 2, 3, 'sequence', 2);
    close(ws[0], Math.exp(-0.5));
    close(ws[1], Math.exp(-0.5));
    close(ws[3], 2);
    const plain = trainer({ ...base(3), trainer: { totalSteps: 3, seed: 4 } });
    await plain.t.fit();
    const corrected = trainer({ ...base(3), algorithm: { rolloutCorrection: { rolloutIs: 'token', bypassMode: true } }, trainer: { totalSteps: 3, seed: 4 } });
    await corrected.t.fit();
    for (const [k, v] of plain.s.policy.table) assert.deepEqual([...corrected.s.policy.table.get(k)!], [...v], k);
    assert.ok(!('timing/old_log_prob' in corrected.t.history[0]), 'bypass mode skips the old-log-prob forward');
  });

  it('validates the config with clear errors', () => {
    assert.throws(() => parseTrainerConfig({ data: { trainBatchSize: 0 }, trainer: { totalSteps: 1 } }), /data\.trainBatchSize/);
    assert.throws(() => parseTrainerConfig({ data: { trainBatchSize: 2 }, trainer: { totalSteps: 1 }, actor: { klLossType: 'k9' } }), /actor\.klLossType: must be one of/);
    assert.throws(() => parseTrainerConfig({ data: { trainBatchSize: 2 }, trainer: { totalSteps: 1 }, actor: { ppoMicroBatchSize: 3 } }), /must divide the mini-batch of 2×8 = 16/);
    assert.throws(() => parseTrainerConfig({ data: { trainBatchSize: 2 }, trainer: { totalSteps: 1 }, bogus: 1 }), /invalid trainer config/);
  });
});

describe('toy GRPO with the tiny transformer (SFT warm start → GRPO), opt-in: LONGRUN_SLOW_TESTS=1', { skip: !process.env.LONGRUN_SLOW_TESTS }, () => {
  it('raises validation success from ≤ 0.4 to ≥ 0.7 in 100 steps', async () => {
    const { createToyTransformerSetup } = await import('../../src/rl/toy/toyTransformer.ts');
    const s = await createToyTransformerSetup({ seed: 1, lr: 3e-3 });
    const config = parseTrainerConfig({
      data: { trainBatchSize: 4 },
      rollout: { n: 16, maxTurns: 3, maxResponseTokens: 32, maxTokensPerTurn: 8, concurrency: 32 },
      // KL to the SFT model and DAPO's group filter keep the small model from collapsing onto one answer early.
      actor: { clipRatioHigh: 0.28, useKlLoss: true, klLossCoef: 0.1 },
      algorithm: { filterGroups: { enable: true, maxNumGenBatches: 0 } },
      trainer: { totalSteps: 100, seed: 1, testFreq: 100, valN: 8 },
    });
    const t = new GrpoTrainer({ config, policy: s.policy, engine: s.engine, format: s.format, makeEnv: s.makeEnv, trainTasks: s.taskIds, padId: s.padId });
    const { validations, history } = await t.fit();
    assert.ok(validations[0]['val/success'] <= 0.4, `initial ${validations[0]['val/success']}`);
    assert.ok(validations.at(-1)!['val/success'] >= 0.7, `final ${validations.at(-1)!['val/success']}`);
    assert.ok(history.every((h) => h['rollout/logprob_max_abs_diff'] < 1e-3));
  });
});
