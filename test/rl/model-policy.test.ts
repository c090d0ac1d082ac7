import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { AgentLoop, type AgentEnv } from '../../src/rollout/agent-loop.ts';
import { collate } from '../../src/rollout/collate.ts';
import { flattenGroups, sampleGroups } from '../../src/rollout/groups.ts';
import { createModelEngine, createStepModelEngine } from '../../src/rollout/model-engine.ts';
import { parseTrainerConfig } from '../../src/rl/config.ts';
import { GptOssPolicy, packForScoring } from '../../src/rl/model-policy.ts';
import { GrpoTrainer } from '../../src/rl/trainer.ts';
import { buildRun, parseRunFile } from '../../src/recipes/train-setup.ts';
import { createToySetup } from '../../src/recipes/toy/toy-task.ts';
import { directionalCheck } from '../model/helpers.ts';
import { tinyTransformer } from './policy-fixtures.ts';

/** An env that never ends by itself: every turn gets a user reply, so episodes run to maxTurns (multi-turn sessions). */
const chattyEnv = (): AgentEnv => ({
  reset: async () => [{ messages: [{ role: 'user', content: 'please cue_1', toolCalls: null }] }, { systemPrompt: 'solve', tools: [] }],
  step: async () => [{ messages: [{ role: 'user', content: 'ok hello', toolCalls: null }] }, 0, false, false, {}],
});

async function rollouts(temperature: number, batching: 'request' | 'step' = 'request') {
  const s = createToySetup();
  const model = tinyTransformer(s.tokenizer.vocabSize);
  const reference = tinyTransformer(s.tokenizer.vocabSize);
  const policy = new GptOssPolicy(model, { optimizer: { lr: 1e-2, weightDecay: 0 }, reference });
  const engine = batching === 'step' ? createStepModelEngine(model, { maxBatchSize: 8, sessionCapacity: 128 }) : createModelEngine(model, { maxBatchSize: 8 });
  const loop = new AgentLoop({ format: s.format, engine, sampling: { temperature }, maxTurns: 3, maxResponseTokens: 40, maxTokensPerTurn: 8 });
  const groups = await sampleGroups({ loop, makeEnv: batching === 'step' ? chattyEnv : s.makeEnv, groups: [{ taskId: 'toy-0', uid: 'a' }, { taskId: 'toy-3', uid: 'b' }], n: 3, seed: 9, concurrency: 6 });
  const { trajectories, uids } = flattenGroups(groups);
  const batch = collate(trajectories, { padId: s.padId, uids, temperature });
  return { s, model, policy, engine, batch, trajectories };
}

function maxMaskedDiff(a: ArrayLike<number>, b: ArrayLike<number>, mask: ArrayLike<number>): number {
  let d = 0;
  for (let k = 0; k < mask.length; k++) if (mask[k]) d = Math.max(d, Math.abs(a[k] - b[k]));
  return d;
}

describe('GptOssPolicy (tiny transformer)', () => {
  for (const [temperature, batching] of [[1, 'request'], [0.7, 'request'], [1, 'step']] as const) {
    it(`recomputed log-probs match the rollout log-probs of the KV-cached engine (T=${temperature}, ${batching}-level batching)`, async () => {
      const { policy, engine, batch } = await rollouts(temperature, batching);
      const mask = batch.tensor('response_mask').data;
      assert.ok([...mask].filter((m) => m).length > 10);
      const lp = await policy.logprobs(batch, { temperature, grad: false, entropy: true });
      const diff = maxMaskedDiff(lp.logprobs, batch.tensor('rollout_log_probs').data, mask);
      assert.ok(diff < 1e-3, `max |recomputed − rollout| = ${diff}`);
      assert.ok(lp.entropy!.every((h, k) => !mask[k] || (h > 0 && h <= Math.log(policy.model.config.vocab_size) + 1e-4)));
      const widths = 'batchSizes' in engine.stats ? engine.stats.batchSizes : engine.stats.activePerIteration;
      if ('reusedTokens' in engine.stats) assert.ok(engine.stats.reusedTokens > 0, 'later turns reused the session KV cache');
      assert.ok(Math.max(...widths) > 1, 'concurrent turns were batched');
    });
  }

  it('the entropy-bonus gradient (dEntropy through the head) matches finite differences of Σ c·H', async () => {
    const { policy, model, batch } = await rollouts(1);
    const B = batch.size, R = batch.tensor('responses').shape[1];
    const mask = batch.tensor('response_mask').data;
    const c = new Float32Array(B * R);
    for (let k = 0; k < c.length; k++) if (mask[k]) c[k] = Math.sin(1 + k * 0.37);
    policy.zeroGrad();
    await policy.logprobs(batch, { temperature: 1, grad: true, entropy: true });
    await policy.backward(new Float32Array(B * R), c);
    // J = Σ_slots c · H, evaluated synchronously on the same packing the policy uses.
    const p = packForScoring(batch);
    const V = model.config.vocab_size;
    const objective = () => {
      const r = model.forward({ tokens: p.tokens, docIds: p.docIds, targets: p.targets }, { grad: false, fullLogprobs: true });
      const full = r.fullLogprobs!.toArray();
      r.fullLogprobs!.dispose();
      let j = 0;
      for (let n = 0; n < p.slotOf.length; n++) {
        if (p.slotOf[n] < 0) continue;
        let h = 0;
        for (let v = 0; v < V; v++) { const l = full[n * V + v]; h -= Math.exp(l) * l; }
        j += c[p.slotOf[n]] * h;
      }
      return j;
    };
    for (const name of ['lm_head.weight', 'model.layers.0.self_attn.q_proj.weight', 'model.norm.weight']) {
      const g = Float32Array.from(model.gradients().get(name)!.toArray());
      assert.ok(g.some((x) => x !== 0), `${name} got an entropy gradient`);
      directionalCheck(name, objective, model.parameters().get(name)!, g, { eps: 1e-2, tol: 2e-2 });
    }
  });

  it('a policy-gradient step raises the log-prob of a positive-advantage response; checkpoints round-trip', async () => {
    const { policy, batch } = await rollouts(1);
    const B = batch.size;
    const R = batch.tensor('responses').shape[1];
    const mask = batch.tensor('response_mask').data;
    const before = await policy.logprobs(batch, { temperature: 1, grad: false, entropy: false });
    const dir = mkdtempSync(join(tmpdir(), 'longrun-policy-'));
    try {
      await policy.saveCheckpoint(dir);
      // Maximise row 0's log-likelihood: d(−Σ logp)/d logp = −1 on its masked tokens.
      policy.zeroGrad();
      await policy.logprobs(batch, { temperature: 1, grad: true, entropy: false });
      const d = new Float32Array(B * R);
      for (let t = 0; t < R; t++) d[t] = mask[t] ? -1 : 0;
      await policy.backward(d);
      const step = await policy.optimizerStep({ gradClip: 1 });
      assert.ok(step.gradNorm > 0 && !step.skipped);
      const after = await policy.logprobs(batch, { temperature: 1, grad: false, entropy: false });
      let gain = 0;
      for (let t = 0; t < R; t++) if (mask[t]) gain += after.logprobs[t] - before.logprobs[t];
      assert.ok(gain > 0, `row 0 log-likelihood changed by ${gain}`);
      // The reference is a separate frozen model until reset to the current weights.
      const refBefore = await policy.referenceLogprobs(batch, { temperature: 1 });
      assert.ok(maxMaskedDiff(refBefore, after.logprobs, mask) > 1e-4);
      policy.resetReferenceToCurrent();
      assert.ok(maxMaskedDiff(await policy.referenceLogprobs(batch, { temperature: 1 }), after.logprobs, mask) < 1e-6);
      policy.learningRate = 0.5;
      assert.equal(policy.optimizer.lr, 0.5, 'learningRate is the optimizer\'s');
      await policy.loadCheckpoint(dir);
      assert.equal(policy.learningRate, 1e-2, 'the checkpoint restores its lr (the trainer then applies the configured one)');
      const restored = await policy.logprobs(batch, { temperature: 1, grad: false, entropy: false });
      assert.ok(maxMaskedDiff(restored.logprobs, before.logprobs, mask) < 1e-6);
      assert.equal(policy.optimizer.step, 0);
      await assert.rejects(policy.logprobs(batch, { temperature: 0.5, grad: true, entropy: false }), /training forwards need temperature 1/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the trainer resumes exactly with the transformer: 2 + 1 steps through a checkpoint equal 3 straight steps', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-tfm-resume-'));
    try {
      const run = async (steps: number, ckpt?: string) => {
        const s = createToySetup();
        const model = tinyTransformer(s.tokenizer.vocabSize, 8);
        const policy = new GptOssPolicy(model, { optimizer: { lr: 3e-3, weightDecay: 0.01 }, reference: tinyTransformer(s.tokenizer.vocabSize, 8) });
        const config = parseTrainerConfig({
          data: { trainBatchSize: 2 },
          rollout: { n: 3, maxTurns: 2, maxResponseTokens: 20, maxTokensPerTurn: 6 },
          trainer: { totalSteps: steps, seed: 6, saveFreq: ckpt ? 1 : 0, checkpointDir: ckpt },
        });
        const t = new GrpoTrainer({ config, policy, engine: createStepModelEngine(model, { maxBatchSize: 6 }), format: s.format, makeEnv: s.makeEnv, trainTasks: s.taskIds, padId: s.padId });
        await t.fit();
        return { t, model };
      };
      const straight = await run(3);
      await run(2, dir);
      const resumed = await run(3, dir);
      const keep = (m: Record<string, number>) => Object.fromEntries(Object.entries(m).filter(([k]) => !k.startsWith('timing/') && !k.endsWith('_per_s') && !k.startsWith('perf/peak')));
      assert.deepEqual(resumed.t.history.map(keep), straight.t.history.map(keep));
      for (const [name, p] of straight.model.parameters()) assert.deepEqual(resumed.model.parameters().get(name)!.data(), p.data(), name);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('longrun train builds the frozen reference copy only when the GRPO section has a KL term', async () => {
    const build = async (grpo: Record<string, unknown>) => {
      const { run } = parseRunFile({ task: 'toy', policy: { type: 'gpt-oss', preset: 'tiny-1m' }, grpo: { data: { trainBatchSize: 1 }, trainer: { totalSteps: 1 }, ...grpo } });
      return (await buildRun(run)).deps.policy as GptOssPolicy;
    };
    const plain = await build({});
    assert.equal(plain.hasReferenceModel, false);
    const { batch } = await rollouts(1);
    await assert.rejects(plain.referenceLogprobs(batch, { temperature: 1 }), /no reference model .*useKlLoss and algorithm\.useKlInReward are off/);
    plain.resetReferenceToCurrent(); // nothing to reset
    assert.equal((await build({ actor: { useKlLoss: true } })).hasReferenceModel, true);
    assert.equal((await build({ algorithm: { useKlInReward: true } })).hasReferenceModel, true);
  });

  it('runs GRPO trainer steps end to end with the transformer policy and KV-cached engine', async () => {
    const s = createToySetup();
    const model = tinyTransformer(s.tokenizer.vocabSize, 5);
    const policy = new GptOssPolicy(model, { optimizer: { lr: 3e-3, weightDecay: 0 }, reference: tinyTransformer(s.tokenizer.vocabSize, 5) });
    const engine = createModelEngine(model, { maxBatchSize: 8 });
    const config = parseTrainerConfig({
      data: { trainBatchSize: 2 },
      rollout: { n: 4, maxTurns: 2, maxResponseTokens: 24, maxTokensPerTurn: 8 },
      actor: { useKlLoss: true, ppoMicroBatchSize: 4 },
      trainer: { totalSteps: 2, seed: 2 },
    });
    const t = new GrpoTrainer({ config, policy, engine, format: s.format, makeEnv: s.makeEnv, trainTasks: s.taskIds, padId: s.padId });
    const { history } = await t.fit();
    assert.equal(history.length, 2);
    for (const h of history) {
      assert.ok(h['rollout/logprob_max_abs_diff'] < 1e-3, `mismatch ${h['rollout/logprob_max_abs_diff']}`);
      assert.ok(Number.isFinite(h['actor/grad_norm']) && Number.isFinite(h['actor/kl_loss']));
      assert.ok(h['perf/peak_memory_bytes'] > 0);
    }
  });
});

describe('GptOssPolicy checkpoints with LoRA adapters', () => {
  it('saves and restores the adapters with the weights and optimizer state; a checkpoint without them is refused', async () => {
    const { applyLora } = await import('../../src/model/lora.ts');
    const dir = mkdtempSync(join(tmpdir(), 'longrun-lora-ckpt-'));
    try {
      const lora = (seed: number) => {
        const m = tinyTransformer(12, 5);
        applyLora(m, { rank: 2, alpha: 4, seed });
        return new GptOssPolicy(m, { optimizer: { lr: 1e-3 }, reference: 'adapters-off' });
      };
      const a = lora(1);
      // Non-zero adapters (B starts at zero): fill them with a pattern.
      for (const [, t] of a.model.extraParameters()) t.data().forEach((_, i, arr) => (arr[i] = Math.sin(i + t.size)));
      await a.saveCheckpoint(join(dir, 'a'));
      const b = lora(2);
      await b.loadCheckpoint(join(dir, 'a'));
      for (const [name, t] of a.model.extraParameters()) assert.deepEqual(Array.from(b.model.extraParameters().get(name)!.data()), Array.from(t.data()), name);
      const plain = new GptOssPolicy(tinyTransformer(12, 5), { optimizer: { lr: 1e-3 }, reference: null });
      await plain.saveCheckpoint(join(dir, 'plain'));
      const c = lora(3);
      await assert.rejects(c.loadCheckpoint(join(dir, 'plain')), /optimizer\.json does not match|adapters/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
