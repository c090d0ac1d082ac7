import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { parseTrainerConfig, type TrainerConfigInput } from '../../src/rl/config.ts';
import { isCheckStep, logprobDrift } from '../../src/rl/logprob-check.ts';
import { GrpoTrainer, type Metrics } from '../../src/rl/trainer.ts';
import type { Policy } from '../../src/rl/policy.ts';
import type { InferenceEngine } from '../../src/rollout/inference.ts';
import { createToySetup } from '../../src/recipes/toy/toy-task.ts';
import { createToyTransformerSetup } from '../../src/recipes/toy/toy-transformer.ts';

type Setup = Pick<ReturnType<typeof createToySetup>, 'format' | 'makeEnv' | 'taskIds' | 'padId'> & { policy: Policy; engine: InferenceEngine };

/** The engine with every reported log-prob shifted by `shift` nats (the tokens it samples are the same). */
function skewed(engine: InferenceEngine, shift: number): InferenceEngine {
  return {
    generate: async (requests) => (await engine.generate(requests)).map((r) => ({ ...r, logprobs: r.logprobs.map((x) => x + shift) })),
    endSession: engine.endSession?.bind(engine),
  };
}

const base = (steps: number, algorithm: TrainerConfigInput['algorithm'] = {}): TrainerConfigInput => ({
  data: { trainBatchSize: 4 },
  rollout: { n: 8, maxTurns: 3, maxResponseTokens: 40, concurrency: 4 },
  algorithm,
  trainer: { totalSteps: steps, seed: 2, testFreq: 0, valBeforeTrain: false },
});

async function run(s: Setup, raw: TrainerConfigInput, engine: InferenceEngine = s.engine) {
  const log: string[] = [];
  const t = new GrpoTrainer({ config: parseTrainerConfig(raw), policy: s.policy, engine, format: s.format, makeEnv: s.makeEnv, trainTasks: s.taskIds, padId: s.padId, log: (l) => log.push(l) });
  const { history } = await t.fit();
  return { history, alarms: log.filter((l) => l.includes('LOG-PROB ALARM')) };
}

const CHECK_KEYS = ['rollout/logprob_max_abs_diff', 'rollout/logprob_mean_abs_diff', 'rollout/logprob_alarm'];
/** A step's training numbers: without timings, throughput and the check's own metrics. */
const training = (m: Metrics) => Object.fromEntries(Object.entries(m).filter(([k]) => !k.startsWith('timing/') && !k.startsWith('perf/') && !CHECK_KEYS.includes(k)));

describe('sampler-vs-trainer log-prob check', () => {
  it('logprobDrift: max and mean |Δ| over the masked tokens; the check steps are step 1 and every checkEvery', () => {
    const d = logprobDrift([-1, -2, -3, -4], [-1.5, -2, -9, -3.75], [1, 1, 0, 1]);
    assert.deepEqual(d, { max: 0.5, mean: 0.25, tokens: 3 });
    assert.ok(Number.isNaN(logprobDrift([0, 0], [0, Number.NaN], [1, 1]).max), 'a NaN from the trainer shows');
    assert.throws(() => logprobDrift([0], [0, 0], [1, 1]), /1 engine and 2 trainer log-probs for a mask of 2/);
    assert.deepEqual([1, 2, 9, 10, 11, 20].map((s) => isCheckStep(s, 10)), [true, false, false, true, false, true]);
    assert.deepEqual([1, 2, 3].map((s) => isCheckStep(s, 0)), [false, false, false]);
    const rc = parseTrainerConfig({ data: { trainBatchSize: 1 }, trainer: { totalSteps: 1 } }).algorithm.rolloutCorrection;
    assert.equal(rc.checkEvery, 10);
    assert.equal(rc.alarm, 0.01);
    assert.throws(() => parseTrainerConfig({ data: { trainBatchSize: 1 }, trainer: { totalSteps: 1 }, algorithm: { rolloutCorrection: { checkEvery: -1 } } }), /checkEvery/);
  });

  it('bypass mode: an engine whose log-probs are 0.5 nat off is caught on step 1 and every checkEvery steps, with an alarm', async () => {
    const s = createToySetup();
    const { history, alarms } = await run(s, base(4, { rolloutCorrection: { bypassMode: true, checkEvery: 2 } }), skewed(s.engine, 0.5));
    assert.deepEqual(history.map((h) => 'rollout/logprob_max_abs_diff' in h), [true, true, false, true], 'steps 1, 2 and 4 are checked');
    for (const h of history.filter((x) => 'rollout/logprob_max_abs_diff' in x)) {
      assert.ok(Math.abs(h['rollout/logprob_max_abs_diff'] - 0.5) < 1e-5, `max ${h['rollout/logprob_max_abs_diff']}`);
      assert.ok(Math.abs(h['rollout/logprob_mean_abs_diff'] - 0.5) < 1e-5, `mean ${h['rollout/logprob_mean_abs_diff']}`);
      assert.equal(h['rollout/logprob_alarm'], 1);
    }
    assert.equal(alarms.length, 3);
    assert.match(alarms[0], /^step 1: LOG-PROB ALARM: .* up to 0\.5000 nats \(mean 0\.5000\), above algorithm\.rolloutCorrection\.alarm 0\.01/);
  });

  it('a faithful engine is not flagged: bypass mode, RFT, and the default (π_old recomputed every step)', async () => {
    const variants: TrainerConfigInput['algorithm'][] = [
      { rolloutCorrection: { bypassMode: true, checkEvery: 1 } },
      { advEstimator: 'rft', rolloutCorrection: { checkEvery: 1 } },
      {},
    ];
    for (const algorithm of variants) {
      const { history, alarms } = await run(createToySetup(), base(2, algorithm));
      for (const h of history) {
        assert.ok(h['rollout/logprob_max_abs_diff'] < 1e-6 && h['rollout/logprob_mean_abs_diff'] <= h['rollout/logprob_max_abs_diff'], JSON.stringify(algorithm));
        assert.equal(h['rollout/logprob_alarm'], 0);
      }
      assert.deepEqual(alarms, []);
    }
    // The default mode compares against its own π_old forward every step, checkEvery or not: a skew shows on each.
    const s = createToySetup();
    const skew = await run(s, base(2, { rolloutCorrection: { checkEvery: 0 } }), skewed(s.engine, -0.5));
    assert.ok(skew.history.every((h) => Math.abs(h['rollout/logprob_max_abs_diff'] - 0.5) < 1e-5));
  });

  it('only reads: the same seed gives the same training numbers and weights with the check on every step or off', async () => {
    const on = createToySetup(), off = createToySetup();
    const a = await run(on, base(3, { rolloutCorrection: { bypassMode: true, checkEvery: 1 } }));
    const b = await run(off, base(3, { rolloutCorrection: { bypassMode: true, checkEvery: 0 } }));
    assert.ok(a.history.every((h) => 'timing/logprob_check' in h) && b.history.every((h) => !('timing/logprob_check' in h) && !('rollout/logprob_max_abs_diff' in h)));
    assert.deepEqual(a.history.map(training), b.history.map(training));
    const keys = new Set([...on.policy.table.keys(), ...off.policy.table.keys()]);
    for (const k of keys) assert.deepEqual([...on.policy.logitsOf(k)], [...off.policy.logitsOf(k)], k);
  });

  it('only reads, with the tiny transformer and its batching engine too', async () => {
    const make = () => createToyTransformerSetup({ seed: 3, sftSteps: 5, sftDocuments: 40 });
    const [on, off] = [await make(), await make()];
    const raw = (checkEvery: number) => ({ ...base(2, { rolloutCorrection: { bypassMode: true, checkEvery } }), rollout: { n: 4, maxTurns: 3, maxResponseTokens: 32, maxTokensPerTurn: 8, concurrency: 16 } });
    const a = await run(on, raw(1));
    const b = await run(off, raw(0));
    assert.deepEqual(a.history.map(training), b.history.map(training));
    for (const h of a.history) assert.ok(h['rollout/logprob_max_abs_diff'] < 1e-3, `the engine and the trainer agree: ${h['rollout/logprob_max_abs_diff']}`);
    assert.deepEqual(a.alarms, []);
    const weights = (m: typeof on.model) => [...m.parameters()].map(([name, p]) => [name, Array.from(p.data())]);
    assert.deepEqual(weights(on.model), weights(off.model));
  });
});
