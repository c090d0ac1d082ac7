import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { StepBatchingEngine, type SamplerFactory, type StepModel } from '../../src/rollout/step-batching.ts';
import type { GenerationRequest } from '../../src/rollout/inference.ts';

const V = 50;

/** A fake model whose next token is a function of the sequence so far: (Σ tokens + length) mod V. */
function fakeStepModel(failDecodeOnce = false) {
  const released: number[][] = [];
  let live = 0;
  let failed = !failDecodeOnce;
  const logitsFor = (h: number[]) => {
    const row = new Float32Array(V);
    row[(h.reduce((a, b) => a + b, 0) + h.length) % V] = 10;
    return row;
  };
  const model: StepModel<{ h: number[] }> = {
    vocabSize: V,
    prefill(prompts) {
      const states = prompts.map((p) => ({ h: [...p] }));
      live += states.length;
      const logits = new Float32Array(prompts.length * V);
      states.forEach((s, i) => logits.set(logitsFor(s.h), i * V));
      return { states, logits };
    },
    decode(tokens, states) {
      if (!failed) {
        failed = true;
        throw new Error('decode failed');
      }
      const logits = new Float32Array(states.length * V);
      states.forEach((s, i) => {
        s.h.push(tokens[i]);
        logits.set(logitsFor(s.h), i * V);
      });
      return logits;
    },
    release(s) {
      live--;
      released.push(s.h);
    },
  };
  return { model, released, get live() { return live; } };
}

/** Greedy sampler with the log-softmax of the chosen token. */
const greedy: SamplerFactory = () => (row) => {
  let best = 0;
  for (let j = 1; j < row.length; j++) if (row[j] > row[best]) best = j;
  let z = 0;
  for (const x of row) z += Math.exp(x - row[best]);
  return { token: best, logprob: -Math.log(z) };
};

/** What the fake model generates for one request alone. */
function expected(r: GenerationRequest): number[] {
  const h = [...r.tokens];
  const out: number[] = [];
  while (out.length < r.maxNewTokens) {
    const t = (h.reduce((a, b) => a + b, 0) + h.length) % V;
    out.push(t);
    h.push(t);
    if (r.stop.includes(t)) break;
  }
  return out;
}

const req = (tokens: number[], maxNewTokens: number, stop: number[] = [], session?: string): GenerationRequest => ({ tokens, maxNewTokens, temperature: 0, stop, session });

describe('StepBatchingEngine (iteration-level continuous batching)', () => {
  it('each request gets its own tokens, whatever else is decoding; states are released', async () => {
    const f = fakeStepModel();
    const engine = new StepBatchingEngine(f.model, { maxActive: 3, sampler: greedy });
    const reqs = Array.from({ length: 8 }, (_, i) => req([i + 1, 2 * i], 2 + (i % 4), i === 5 ? [expected(req([6, 10], 9))[1]] : []));
    const out = await engine.generate(reqs);
    out.forEach((r, i) => {
      assert.deepEqual(r.tokens, expected(reqs[i]), `request ${i}`);
      assert.equal(r.logprobs.length, r.tokens.length);
      assert.equal(r.finishReason, reqs[i].stop.includes(r.tokens.at(-1)!) ? 'stop' : 'length');
    });
    assert.equal(out[5].finishReason, 'stop');
    assert.ok(Math.max(...engine.stats.activePerIteration) <= 3);
    assert.equal(f.live, 0);
    assert.equal(f.released.length, 8);
  });
  it('a request that arrives mid-flight joins the running loop and can finish first', async () => {
    const f = fakeStepModel();
    const engine = new StepBatchingEngine(f.model, { maxActive: 4, sampler: greedy });
    const order: string[] = [];
    const long = engine.submit(req([1], 40)).then((r) => (order.push('long'), r));
    await new Promise((r) => setTimeout(r, 5));
    const short = engine.submit(req([2], 2)).then((r) => (order.push('short'), r));
    const [l, s] = await Promise.all([long, short]);
    assert.deepEqual(order, ['short', 'long']);
    assert.deepEqual(l.tokens, expected(req([1], 40)));
    assert.deepEqual(s.tokens, expected(req([2], 2)));
    const joinedAt = engine.stats.admittedPerIteration.findIndex((n, i) => i > 0 && n > 0);
    assert.ok(joinedAt > 0, 'admitted after the loop started');
    assert.equal(engine.stats.activePerIteration[joinedAt], 2, 'decoded together with the running sequence');
  });
  it('respects the token reservation budget', async () => {
    const f = fakeStepModel();
    const engine = new StepBatchingEngine(f.model, { maxActive: 8, maxActiveTokens: 12, sampler: greedy });
    await engine.generate([req([1, 1], 4), req([2, 2], 4), req([3, 3], 4)]);
    assert.ok(Math.max(...engine.stats.activePerIteration) <= 2);
  });
  it('a failing model call rejects that iteration\'s sequences; the engine goes on', async () => {
    const f = fakeStepModel(true);
    const engine = new StepBatchingEngine(f.model, { maxActive: 4, sampler: greedy });
    const first = await Promise.allSettled([engine.submit(req([1], 3))]);
    assert.equal(first[0].status, 'rejected');
    assert.match(String((first[0] as PromiseRejectedResult).reason), /decode failed/);
    const [ok] = await engine.generate([req([4], 3)]);
    assert.deepEqual(ok.tokens, expected(req([4], 3)));
    assert.equal(f.live, 0);
    assert.throws(() => new StepBatchingEngine(f.model, { maxActive: 0, sampler: greedy }), /maxActive must be a positive integer/);
  });
  it('reuses a session\'s cache across turns: only the new tokens are fed, results are unchanged', async () => {
    const f = fakeStepModel();
    const engine = new StepBatchingEngine(f.model, { maxActive: 4, sampler: greedy, sessionCapacity: 64 });
    const t1 = req([1, 2], 3, [], 's');
    const [a] = await engine.generate([t1]);
    assert.deepEqual(a.tokens, expected(t1));
    assert.equal(engine.sessionCount, 1);
    const t2 = req([1, 2, ...a.tokens, 7, 8], 4, [], 's');
    const [b] = await engine.generate([t2]);
    assert.deepEqual(b.tokens, expected(t2));
    assert.equal(engine.stats.prefilledTokens, 2, 'the second turn was not prefilled');
    assert.equal(engine.stats.reusedTokens, 4, 'prompt + the first two sampled tokens were cached (the last sampled one is fed next turn)');
    // A context that does not extend the cache falls back to a fresh prefill.
    const t3 = req([9, 9, 9], 2, [], 's');
    const [c] = await engine.generate([t3]);
    assert.deepEqual(c.tokens, expected(t3));
    assert.equal(engine.stats.prefilledTokens, 5);
    engine.endSession('s');
    assert.equal(engine.sessionCount, 0);
    assert.equal(f.live, 0);
  });
  it('evicts idle sessions beyond maxSessions', async () => {
    const f = fakeStepModel();
    const engine = new StepBatchingEngine(f.model, { maxActive: 4, sampler: greedy, maxSessions: 1 });
    await engine.generate([req([1], 2, [], 'a'), req([2], 2, [], 'b')]);
    assert.equal(engine.sessionCount, 1);
    assert.equal(f.live, 1);
  });
});
