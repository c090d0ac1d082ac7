import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BatchingEngine } from '../../src/rollout/batching.ts';
import type { GenerationRequest, GenerationResult } from '../../src/rollout/inference.ts';
import { AgentLoop } from '../../src/rollout/agent-loop.ts';
import { sampleGroups } from '../../src/rollout/groups.ts';
import { createToySetup } from '../../src/recipes/toy/toy-task.ts';

const req = (tokens: number[], maxNewTokens = 3): GenerationRequest => ({ tokens, maxNewTokens, temperature: 1, stop: [], seed: 0 });

/** A fake model: each request's answer depends only on its own prompt. */
function fakeModel(gate?: () => Promise<void>) {
  const batches: number[][] = [];
  const generateBatch = async (rs: GenerationRequest[]): Promise<GenerationResult[]> => {
    batches.push(rs.map((r) => r.tokens[0]));
    if (gate) await gate();
    return rs.map((r) => ({ tokens: Array.from({ length: r.maxNewTokens }, (_, i) => r.tokens[0] * 10 + i), logprobs: Array(r.maxNewTokens).fill(-0.5), finishReason: 'length' as const }));
  };
  return { batches, generateBatch };
}

describe('BatchingEngine', () => {
  it('gathers concurrent requests into batches of at most maxBatchSize and returns each its own result', async () => {
    const m = fakeModel();
    const engine = new BatchingEngine({ generateBatch: m.generateBatch, maxBatchSize: 4 });
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => engine.submit(req([i + 1]))));
    results.forEach((r, i) => assert.deepEqual(r.tokens, [(i + 1) * 10, (i + 1) * 10 + 1, (i + 1) * 10 + 2]));
    assert.deepEqual(engine.stats.batchSizes, [4, 4, 2]);
    assert.deepEqual(m.batches, [[1, 2, 3, 4], [5, 6, 7, 8], [9, 10]]);
  });
  it('respects the token budget (a single oversized request runs alone)', async () => {
    const m = fakeModel();
    const engine = new BatchingEngine({ generateBatch: m.generateBatch, maxBatchSize: 8, maxBatchTokens: 25 });
    await Promise.all([req([1, 1, 1, 1, 1, 1, 1], 3), req([2, 2, 2, 2, 2, 2, 2], 3), req([3, 3, 3, 3, 3, 3, 3], 3), req(Array(40).fill(4), 3)].map((r) => engine.submit(r)));
    assert.deepEqual(engine.stats.batchSizes, [2, 1, 1]);
    assert.deepEqual(engine.stats.batchTokens, [20, 10, 43]);
  });
  it('requests that arrive while a batch runs form the next batch', async () => {
    let open!: () => void;
    let gateCalls = 0;
    const m = fakeModel(() => (gateCalls++ === 0 ? new Promise<void>((r) => (open = r)) : Promise.resolve()));
    const engine = new BatchingEngine({ generateBatch: m.generateBatch, maxBatchSize: 8 });
    const first = engine.submit(req([1]));
    await new Promise((r) => setTimeout(r, 5));
    const later = [engine.submit(req([2])), engine.submit(req([3])), engine.submit(req([4]))];
    await new Promise((r) => setTimeout(r, 5));
    assert.deepEqual(m.batches, [[1]]);
    open();
    await Promise.all([first, ...later]);
    assert.deepEqual(m.batches, [[1], [2, 3, 4]]);
  });
  it('a failing batch rejects only its own requests', async () => {
    let calls = 0;
    const engine = new BatchingEngine({
      maxBatchSize: 2,
      generateBatch: async (rs) => {
        if (calls++ === 0) throw new Error('model exploded');
        return rs.map(() => ({ tokens: [1], logprobs: [0], finishReason: 'stop' as const }));
      },
    });
    const outcomes = await Promise.allSettled([1, 2, 3].map((i) => engine.submit(req([i]))));
    assert.deepEqual(outcomes.map((o) => o.status), ['rejected', 'rejected', 'fulfilled']);
    assert.match(String((outcomes[0] as PromiseRejectedResult).reason), /model exploded/);
    const bad = new BatchingEngine({ maxBatchSize: 2, generateBatch: async () => [] });
    await assert.rejects(bad.submit(req([1])), /generateBatch returned 0 results for 1 requests/);
    await assert.rejects(bad.submit(req([])), /the prompt has no tokens/);
    assert.throws(() => new BatchingEngine({ maxBatchSize: 0, generateBatch: async () => [] }), /maxBatchSize must be a positive integer/);
  });
  it('batches the turns of concurrent agent loops without changing their results', async () => {
    const s = createToySetup();
    const batched = new BatchingEngine({ generateBatch: (rs) => s.engine.generate(rs), maxBatchSize: 6 });
    const groups = [{ taskId: 'toy-0', uid: 'a' }, { taskId: 'toy-1', uid: 'b' }, { taskId: 'toy-2', uid: 'c' }];
    const run = (engine: typeof s.engine | BatchingEngine) => sampleGroups({
      loop: new AgentLoop({ format: s.format, engine, sampling: { temperature: 1 }, maxTurns: 3, maxResponseTokens: 40 }),
      makeEnv: s.makeEnv, groups, n: 4, concurrency: 12, seed: 3,
    });
    const direct = await run(s.engine);
    const viaBatches = await run(batched);
    assert.deepEqual(viaBatches.map((g) => g.trajectories.map((t) => t.responseIds)), direct.map((g) => g.trajectories.map((t) => t.responseIds)));
    assert.ok(Math.max(...batched.stats.batchSizes) > 1, `batch sizes ${batched.stats.batchSizes.join(',')}`);
    assert.ok(batched.stats.batchSizes.every((n) => n <= 6));
  });
});
