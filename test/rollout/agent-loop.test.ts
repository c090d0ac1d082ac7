import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BpeTokenizer } from '../../src/llm/bpe.ts';
import { createChatFormat, type ChatFormat, type ChatMessage } from '../../src/llm/index.ts';
import { AgentLoop, type AgentLoopOptions } from '../../src/rollout/agent-loop.ts';
import { collate } from '../../src/rollout/collate.ts';
import { sampleGroups } from '../../src/rollout/groups.ts';
import { ScriptedEngine } from '../../src/rollout/inference.ts';
import { ToyToolEnv, solution } from '../../src/domains/toy/toy-env.ts';
import { createToySetup } from '../../src/recipes/toy/toy-task.ts';

const corpus = 'please cue_0 cue_1 cue_2 tool_a tool_b tool_c ok wrong done solve the order {"name": "x", "arguments": {"x": 1}}\n'.repeat(20);
const bpe = BpeTokenizer.train(corpus, { vocabSize: 320 });

function loopWith(format: ChatFormat, completions: (ChatMessage | number[])[], extra: Partial<AgentLoopOptions> = {}) {
  const sampled: number[][] = [];
  const engine = new ScriptedEngine((_r, i) => {
    const c = completions[Math.min(i, completions.length - 1)];
    const tokens = Array.isArray(c) ? c : format.renderCompletion(c);
    sampled.push(tokens);
    return { tokens, logprobs: tokens.map((_, j) => -0.1 * (j + 1)) };
  });
  const loop = new AgentLoop({ format, engine, sampling: { temperature: 1 }, maxTurns: 5, maxResponseTokens: 400, ...extra });
  return { loop, engine, sampled };
}

const call = (task: number): ChatMessage => ({ role: 'assistant', content: '', toolCalls: [{ name: solution(task).tool, arguments: { x: solution(task).x } }] });
const say = (text: string): ChatMessage => ({ role: 'assistant', content: text });

for (const name of ['hermes', 'harmony'] as const) {
  describe(`AgentLoop token-in/token-out (${name})`, () => {
    const format = createChatFormat(name, bpe);
    it('the token sequence equals the whole conversation rendered in one go; the mask marks exactly the sampled tokens', async () => {
      const { loop, engine, sampled } = loopWith(format, [call(2), say('done')]);
      const env = new ToyToolEnv();
      const t = await loop.run(env, { seed: 3, taskId: 'toy-2' });
      assert.equal(t.terminationReason, 'env_terminated');
      assert.equal(t.reward, 1);
      assert.equal(t.success, true);
      assert.equal(t.numTurns, 2);
      assert.equal(t.toolCalls, 1);
      assert.equal(t.userTurns, 1);
      assert.equal(t.parseErrors, 0);
      assert.equal(t.truncated, false);
      const full = format.render({ messages: t.messages, tools: env.tools });
      const seq = [...t.promptIds, ...t.responseIds];
      if (name === 'harmony') {
        // Harmony's final message is sampled ending in <|return|> and rendered in history ending in <|end|>;
        // the loop keeps the sampled token verbatim, so only that last token differs.
        assert.equal(seq.at(-1), bpe.specialId('<|return|>'));
        assert.equal(full.at(-1), bpe.specialId('<|end|>'));
        assert.deepEqual(seq.slice(0, -1), full.slice(0, -1));
      } else assert.deepEqual(seq, full);
      // Every request sent the whole context so far.
      assert.deepEqual(engine.requests[0].tokens, t.promptIds);
      assert.deepEqual(engine.requests[1].tokens, [...t.promptIds, ...t.responseIds.slice(0, engine.requests[1].tokens.length - t.promptIds.length)]);
      // The masked tokens are the two completions, in order, and nothing else.
      const masked = t.responseIds.filter((_, i) => t.responseMask[i] === 1);
      assert.deepEqual(masked, [...sampled[0], ...sampled[1]]);
      assert.deepEqual(t.responseIds.slice(0, sampled[0].length), sampled[0]);
      assert.deepEqual(t.responseIds.slice(-sampled[1].length), sampled[1]);
      assert.ok(t.responseMask.includes(0), 'the observation is in the response with mask 0');
      // Rollout log-probs on sampled tokens, 0 on observation tokens.
      const lps = t.rolloutLogprobs.filter((_, i) => t.responseMask[i] === 1);
      assert.deepEqual(lps, [...sampled[0].map((_, j) => -0.1 * (j + 1)), ...sampled[1].map((_, j) => -0.1 * (j + 1))]);
      assert.ok(t.rolloutLogprobs.every((lp, i) => t.responseMask[i] === 1 || lp === 0));
    });
  });
}

describe('AgentLoop: an empty turn', () => {
  const format = createChatFormat('harmony', bpe);
  class RecordingEnv extends ToyToolEnv {
    actions: unknown[] = [];
    override async step(action: Parameters<ToyToolEnv['step']>[0]) {
      this.actions.push(action);
      return super.step(action);
    }
  }
  it('a well-formed turn with neither text nor a tool call is a parse error, sent as the placeholder text', async () => {
    const { loop } = loopWith(format, [say('')]);
    const env = new RecordingEnv();
    const t = await loop.run(env, { seed: 1, taskId: 'toy-0' });
    assert.equal(t.parseErrors, 1);
    assert.deepEqual(env.actions, [{ content: '...', toolCalls: null }]);
  });
  it('with terminate, an empty turn ends the episode without stepping the env', async () => {
    const { loop } = loopWith(format, [say('')], { onParseError: 'terminate' });
    const env = new RecordingEnv();
    const t = await loop.run(env, { seed: 1, taskId: 'toy-0' });
    assert.equal(t.terminationReason, 'parse_error');
    assert.equal(t.reward, 0);
    assert.deepEqual(env.actions, []);
  });
});

describe('AgentLoop limits and errors', () => {
  const { format, tokenizer } = createToySetup();
  const garbage = [tokenizer.idOf('call'), tokenizer.idOf('ok')];
  it('a parse error is sent to the env as text and counted (send-text)', async () => {
    const { loop } = loopWith(format, [[...garbage, tokenizer.specialId('<end>')]]);
    const t = await loop.run(new ToyToolEnv(), { seed: 1, taskId: 'toy-0' });
    assert.equal(t.parseErrors, 1);
    assert.equal(t.terminationReason, 'env_terminated'); // the toy env ends on a text reply
    assert.equal(t.reward, 0);
  });
  it('a parse error ends the episode with terminate', async () => {
    const { loop } = loopWith(format, [[...garbage, tokenizer.specialId('<end>')]], { onParseError: 'terminate' });
    const t = await loop.run(new ToyToolEnv(), { seed: 1, taskId: 'toy-0' });
    assert.equal(t.terminationReason, 'parse_error');
    assert.equal(t.truncated, true);
  });
  it('a turn cut by the response budget ends the episode without stepping the env', async () => {
    const long = Array.from({ length: 50 }, () => tokenizer.idOf('hello'));
    const { loop } = loopWith(format, [long], { maxResponseTokens: 10 });
    const t = await loop.run(new ToyToolEnv(), { seed: 1, taskId: 'toy-0' });
    assert.equal(t.terminationReason, 'max_response_tokens');
    assert.equal(t.responseIds.length, 10);
    assert.equal(t.reward, 0);
    assert.equal(t.numTurns, 1);
  });
  it('an observation that would overflow the budget is dropped', async () => {
    const first = format.renderCompletion(call(0));
    const { loop } = loopWith(format, [call(0), say('done')], { maxResponseTokens: first.length + 3 });
    const t = await loop.run(new ToyToolEnv(), { seed: 1, taskId: 'toy-0' });
    assert.equal(t.terminationReason, 'max_response_tokens');
    assert.deepEqual(t.responseIds, first);
    assert.ok(t.responseMask.every((m) => m === 1));
  });
  it('max turns', async () => {
    const { loop } = loopWith(format, [call(1)], { maxTurns: 2 });
    const t = await loop.run(new ToyToolEnv({ maxSteps: 10 }), { seed: 1, taskId: 'toy-0' });
    assert.equal(t.terminationReason, 'max_turns');
    assert.equal(t.numTurns, 2);
    assert.equal(t.toolCalls, 2);
  });
  it('per-turn token cap: a truncated completion is a parse error, not the end', async () => {
    const long = Array.from({ length: 50 }, () => tokenizer.idOf('hello'));
    const { loop } = loopWith(format, [long], { maxTokensPerTurn: 4, maxTurns: 3 });
    const t = await loop.run(new ToyToolEnv(), { seed: 1, taskId: 'toy-0' });
    assert.equal(t.parseErrors, 1);
    assert.equal(t.terminationReason, 'env_terminated');
    assert.equal(t.responseIds.length, 4);
  });
  it('rejects bad limits', () => {
    assert.throws(() => loopWith(format, [], { maxTurns: 0 }), /maxTurns must be a positive integer/);
  });
});

describe('collate (verl padding layout)', () => {
  it('left-pads prompts, right-pads responses, places the reward at the last response token', async () => {
    const { format, padId } = createToySetup();
    const { loop } = loopWith(format, [call(0), say('done')]);
    const a = await loop.run(new ToyToolEnv(), { seed: 1, taskId: 'toy-0' });
    const { loop: loop2 } = loopWith(format, [say('done')]);
    const b = await loop2.run(new ToyToolEnv(), { seed: 2, taskId: 'toy-1' });
    const batch = collate([a, b], { padId, uids: ['u0', 'u1'], temperature: 1 });
    const P = batch.tensor('prompts').shape[1];
    const R = batch.tensor('responses').shape[1];
    assert.equal(P, Math.max(a.promptIds.length, b.promptIds.length));
    assert.equal(R, a.responseIds.length);
    const ids = batch.tensor('input_ids').data;
    const att = batch.tensor('attention_mask').data;
    const pos = batch.tensor('position_ids').data;
    const W = P + R;
    // Row 1: prompt left-padded, response right-padded.
    const bPad = P - b.promptIds.length;
    assert.deepEqual([...ids.subarray(W + bPad, W + P)], b.promptIds);
    assert.deepEqual([...att.subarray(W, W + W)], [...Array(bPad).fill(0), ...Array(b.promptIds.length + b.responseIds.length).fill(1), ...Array(R - b.responseIds.length).fill(0)]);
    assert.equal(pos[W + bPad], 0);
    assert.equal(pos[W + P], b.promptIds.length);
    assert.deepEqual([...batch.tensor('response_mask').data.subarray(0, R)], a.responseMask);
    const scores = batch.tensor('token_level_scores').data;
    assert.equal(scores[a.responseIds.length - 1], a.reward);
    assert.equal([...scores].reduce((x, y) => x + y, 0), a.reward + b.reward);
    assert.deepEqual(batch.object('uid'), ['u0', 'u1']);
    assert.throws(() => collate([a], { padId, uids: [], temperature: 1 }), /1 trajectories but 0 uids/);
    assert.throws(() => collate([a], { padId, uids: ['x'], temperature: 1, responseLength: 2 }), /more than the width 2/);
  });
});

describe('group sampling', () => {
  it('n samples per task, bounded concurrency, grouped by uid in a deterministic order', async () => {
    const s = createToySetup();
    let inFlight = 0;
    let maxInFlight = 0;
    const engine = {
      generate: async (reqs: Parameters<typeof s.engine.generate>[0]) => {
        inFlight++;
        maxInFlight = Math.max(maxInFlight, inFlight);
        await new Promise((r) => setTimeout(r, 1));
        inFlight--;
        return s.engine.generate(reqs);
      },
    };
    const loop = new AgentLoop({ format: s.format, engine, sampling: { temperature: 1 }, maxTurns: 3, maxResponseTokens: 40 });
    const groups = [{ taskId: 'toy-0', uid: 'a' }, { taskId: 'toy-3', uid: 'b' }, { taskId: 'toy-0', uid: 'c' }];
    const run = () => sampleGroups({ loop, makeEnv: () => new ToyToolEnv(), groups, n: 4, concurrency: 3, seed: 10 });
    const out = await run();
    assert.deepEqual(out.map((g) => [g.uid, g.taskId, g.trajectories.length]), [['a', 'toy-0', 4], ['b', 'toy-3', 4], ['c', 'toy-0', 4]]);
    assert.ok(out.every((g) => g.trajectories.every((t) => t.taskId === g.taskId)));
    assert.deepEqual(out.flatMap((g) => g.trajectories.map((t) => t.seed)), Array.from({ length: 12 }, (_, i) => 10 + i));
    assert.ok(maxInFlight <= 3 && maxInFlight >= 2, `max in flight ${maxInFlight}`);
    const again = await run();
    assert.deepEqual(again.map((g) => g.trajectories.map((t) => t.responseIds)), out.map((g) => g.trajectories.map((t) => t.responseIds)));
    await assert.rejects(sampleGroups({ loop, makeEnv: () => new ToyToolEnv(), groups: [groups[0], groups[0]], n: 1, seed: 0 }), /own uid/);
  });
});

describe('AgentLoop over the τ² retail ToolUseEnv', () => {
  it('renders tools + policy once, appends user replies and tool results as observations, ends on done', async () => {
    const { makeRetailEnv } = await import('../../src/domains/retail/register.ts');
    const { TAU2_RETAIL_DIR } = await import('../helpers/paths.ts');
    const { GREETING } = await import('../../src/tooluse/orchestrator.ts');
    const format = createChatFormat('hermes', bpe);
    const env = makeRetailEnv('v0', { dataDir: TAU2_RETAIL_DIR });
    const { loop, sampled } = loopWith(format, [
      say('Could you tell me your name and zip code?'),
      { role: 'assistant', content: '', toolCalls: [{ name: 'find_user_id_by_name_zip', arguments: { first_name: 'Nobody', last_name: 'Here', zip: '00000' } }] },
      { role: 'assistant', content: '', toolCalls: [{ name: 'done', arguments: {} }] },
    ], { greeting: GREETING });
    const t = await loop.run(env, { seed: 4 });
    assert.equal(t.terminationReason, 'env_terminated');
    assert.equal(t.numTurns, 3);
    assert.equal(t.userTurns, 2);
    assert.equal(t.toolCalls, 2);
    assert.equal(t.toolErrors, 1, 'the unknown user is a tool error');
    assert.equal(typeof (t.rewardInfo as { reward: number }).reward, 'number');
    assert.deepEqual(t.messages.map((m) => m.role), ['system', 'assistant', 'user', 'assistant', 'user', 'assistant', 'tool', 'assistant']);
    assert.deepEqual([...t.promptIds, ...t.responseIds], format.render({ messages: t.messages, tools: env.tools }));
    assert.deepEqual(t.responseIds.filter((_, i) => t.responseMask[i] === 1), sampled.flat());
    assert.match(format.tokenizer.decode(t.promptIds), /find_user_id_by_name_zip/);
  });
});
