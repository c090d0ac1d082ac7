import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { BpeTokenizer } from '../../../src/llm/bpe.ts';
import { createChatFormat, type ChatMessage } from '../../../src/llm/index.ts';
import { AgentLoop } from '../../../src/rollout/agent-loop.ts';
import { sampleGroups } from '../../../src/rollout/groups.ts';
import { ScriptedEngine } from '../../../src/rollout/inference.ts';
import { defineEnv, type ToolSource } from '../../../src/tooluse/api/index.ts';
import { notesSpec } from './notes-env.ts';

const corpus = 'Save the note a = hello. world add_note get_note key text {"key": "a", "text": "hello"} Saved a. You keep notes\n'.repeat(20);
const format = createChatFormat('harmony', BpeTokenizer.train(corpus, { vocabSize: 400 }));

/** An engine that plays the same two turns in every episode: save the note, then say so. */
function engine(): ScriptedEngine {
  const turns: ChatMessage[] = [
    { role: 'assistant', content: '', toolCalls: [{ name: 'add_note', arguments: { key: 'a', text: 'hello' } }] },
    { role: 'assistant', content: 'Saved a.' },
  ];
  return new ScriptedEngine((r, i) => {
    // The turn is the number of tool results rendered so far (harmony: `<|start|>functions.` per result).
    const turn = format.tokenizer.decode(r.tokens).split('to=assistant').length - 1;
    const tokens = format.renderCompletion(turns[Math.min(turn, 1)]!);
    return { tokens, logprobs: tokens.map(() => -0.5 - 0.01 * i) };
  });
}

const loop = (e: ScriptedEngine) => new AgentLoop({ format, engine: e, sampling: { temperature: 1 }, maxTurns: 4, maxResponseTokens: 600 });

describe('a defined env through the agent loop', () => {
  it('plays token-in/token-out with the env\'s system prompt and tools, and records the reward and its info', async () => {
    const e = engine();
    const t = await loop(e).run(defineEnv(notesSpec()).makeEnv(), { seed: 1, taskId: 'a' });
    assert.equal(t.terminationReason, 'env_terminated');
    assert.deepEqual([t.reward, t.success, t.numTurns, t.toolCalls, t.toolErrors], [1, true, 2, 1, 0]);
    assert.equal(t.rewardInfo?.reward, 1);
    assert.equal(t.rewardInfo?.info.match, true);
    assert.equal(t.envError, undefined);
    const prompt = format.tokenizer.decode(t.promptIds);
    assert.ok(prompt.includes('You keep notes. Use the tools'), 'the system prompt is the spec\'s instructions');
    assert.ok(prompt.includes('add_note') && prompt.includes('get_note'), 'the tools are rendered');
    assert.ok(prompt.includes('Save the note a = hello.'), 'the task prompt opens');
    assert.equal(t.messages.find((m) => m.role === 'tool')?.content, '{"ok":true}');
  });

  it('an EpisodeError in step ends the episode as env_error with its message, reward 0', async () => {
    const e = engine();
    const env = defineEnv(notesSpec({ reward: () => { throw new Error('grader offline'); } })).makeEnv();
    const t = await loop(e).run(env, { seed: 2, taskId: 'a' });
    assert.equal(t.terminationReason, 'env_error');
    assert.match(t.envError!, /env test\/notes-v0: the reward function threw on task a: grader offline/);
    assert.deepEqual([t.reward, t.success, t.truncated, t.numTurns], [0, false, true, 2]);
    assert.ok(t.responseIds.length > 0, 'the tokens so far are kept');
  });

  it('an EpisodeError in reset gives an empty env_error trajectory; other episodes go on', async () => {
    let opens = 0;
    const flaky: ToolSource = { name: 'flaky', open: async () => { if (opens++ === 1) throw new Error('server did not start'); return { tools: [], close: async () => {} }; } };
    const e = engine();
    const groups = await sampleGroups({ loop: loop(e), makeEnv: () => defineEnv(notesSpec({ sources: [flaky] })).makeEnv(), groups: [{ taskId: 'a', uid: 'g' }], n: 3, concurrency: 1, seed: 10 });
    const ts = groups[0]!.trajectories;
    assert.deepEqual(ts.map((t) => t.terminationReason), ['env_terminated', 'env_error', 'env_terminated']);
    assert.match(ts[1]!.envError!, /tool source flaky did not open for task a: server did not start/);
    assert.deepEqual([ts[1]!.promptIds.length, ts[1]!.responseIds.length, ts[1]!.taskId, ts[1]!.seed], [0, 0, 'a', 11]);
    assert.deepEqual(ts.map((t) => t.reward), [1, 0, 1]);
  });

  it('an error that is not an EpisodeError still propagates (a bug is not an env error)', async () => {
    const env = defineEnv(notesSpec()).makeEnv();
    await assert.rejects(loop(engine()).run(env, { seed: 3, taskId: 'no-such-task' }), /no task no-such-task in split 'train'/);
  });
});
