import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { buildRun, parseRunFile } from '../../src/recipes/train-setup.ts';
import { ScriptedEngine, withoutSessions, type GenerationRequest, type InferenceEngine } from '../../src/rollout/inference.ts';
import type { StepBatchingStats } from '../../src/rollout/step-batching.ts';

const run = (kvCache?: string) => ({
  task: 'toy',
  policy: { type: 'gpt-oss', preset: 'tiny-1m', seed: 3 },
  engine: { type: 'in-process', batching: 'step', maxBatchSize: 4, ...(kvCache === undefined ? {} : { kvCache }) },
  grpo: { data: { trainBatchSize: 1 }, rollout: { n: 2, maxTurns: 2, maxResponseTokens: 16, maxTokensPerTurn: 6 }, trainer: { totalSteps: 1 } },
});

/** Two turns of one session: the second request extends the first's context by its output and a 5-token observation. */
async function twoTurns(engine: InferenceEngine): Promise<number[][]> {
  const first: GenerationRequest = { tokens: [1, 2, 3, 4, 5, 6, 7, 8], maxNewTokens: 4, temperature: 1, stop: [], seed: 11, session: 'a' };
  const [r1] = await engine.generate([first]);
  const [r2] = await engine.generate([{ ...first, tokens: [...first.tokens, ...r1!.tokens, 9, 10, 11, 12, 13], seed: 12 }]);
  return [r1!.tokens, r2!.tokens];
}

describe('engine.kvCache (rollout KV caches kept across turns, or every turn prefilled again)', () => {
  it('withoutSessions sends every request without its session id and keeps everything else', async () => {
    const inner = new ScriptedEngine(() => ({ tokens: [5, 6] }));
    const engine = withoutSessions(inner);
    const [out] = await engine.generate([{ tokens: [1, 2], maxNewTokens: 2, temperature: 0.5, stop: [9], seed: 4, session: 's1' }]);
    assert.deepEqual(out!.tokens, [5, 6]);
    assert.deepEqual(inner.requests, [{ tokens: [1, 2], maxNewTokens: 2, temperature: 0.5, stop: [9], seed: 4 }]);
    assert.equal(engine.inner, inner);
  });

  it("'reprefill' prefills the whole conversation each turn where 'keep' (the default) reuses the cache; the same tokens either way", async () => {
    assert.equal(parseRunFile(run()).run.engine.kvCache, 'keep');
    assert.throws(() => parseRunFile(run('sometimes')), /engine\.kvCache/);

    const kept = await buildRun(parseRunFile(run('keep')).run);
    const keptTokens = await twoTurns(kept.deps.engine);
    const keptStats = (kept.deps.engine as unknown as { stats: StepBatchingStats }).stats;
    await kept.close?.();

    const again = await buildRun(parseRunFile(run('reprefill')).run);
    const wrapped = again.deps.engine as ReturnType<typeof withoutSessions>;
    const againTokens = await twoTurns(wrapped);
    const againStats = (wrapped.inner as unknown as { stats: StepBatchingStats }).stats;
    await again.close?.();

    // Turn 2's context is 8 + 4 + 5 = 17 tokens. Kept, the cache holds the prompt and the sampled tokens the model has
    // read (all but the last, which was sampled and never fed back): 11 reused, and the 6 new ones go through decode
    // steps; only turn 1's prompt is prefilled. Re-prefilled, both turns' whole contexts are.
    assert.equal(keptStats.reusedTokens, 11);
    assert.equal(keptStats.prefilledTokens, 8);
    assert.equal(againStats.reusedTokens, 0);
    assert.equal(againStats.prefilledTokens, 8 + 17);
    assert.deepEqual(againTokens, keptTokens);
  });
});
