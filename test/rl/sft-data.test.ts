import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createChatFormat, type ChatFormat, type ChatMessage } from '../../src/llm/index.ts';
import { buildSftDocuments, parseTrajectoriesJsonl, renderTrajectory, toChatConversation, tokenizerCorpus, trainSftTokenizer } from '../../src/rl/sft-data.ts';
import { SYSTEM, TOOLS, trajectories, trajectory } from './sft-fixtures.ts';

const records = trajectories(6);
const tokenizer = trainSftTokenizer(records, { vocabSize: 600, systemPrompt: SYSTEM, tools: TOOLS });

/** Maximal runs of mask = 1 as [start, end). */
function maskRuns(mask: readonly number[]): [number, number][] {
  const runs: [number, number][] = [];
  for (let i = 0; i < mask.length; i++) {
    if (mask[i] === 1 && (i === 0 || mask[i - 1] === 0)) runs.push([i, i]);
    if (mask[i] === 1) runs[runs.length - 1][1] = i + 1;
  }
  return runs;
}

/** The completions the model produces for the conversation's assistant turns after the first user message. */
function expectedTurns(format: ChatFormat, messages: readonly ChatMessage[]): ChatMessage[] {
  const firstUser = messages.findIndex((m) => m.role === 'user');
  const out: ChatMessage[] = [];
  for (const m of messages.slice(firstUser + 1)) {
    if (m.role !== 'assistant') continue;
    const calls = m.toolCalls ?? [];
    if (format.name === 'harmony' && calls.length > 1) calls.forEach((c) => out.push({ role: 'assistant', content: '', toolCalls: [c] }));
    else out.push(m);
  }
  return out;
}

for (const name of ['harmony', 'hermes'] as const) {
  test(`${name}: the loss mask marks exactly the assistant completions`, () => {
    const format = createChatFormat(name, tokenizer);
    const conversation = toChatConversation(records[1], { systemPrompt: SYSTEM, tools: TOOLS });
    const r = renderTrajectory(format, conversation);
    assert.equal(r.tokens.length, r.lossMask.length);
    const turns = expectedTurns(format, conversation.messages);
    assert.equal(turns.length, name === 'harmony' ? 5 : 4);
    const runs = maskRuns(r.lossMask);
    assert.equal(runs.length, turns.length, 'one masked run per completion');
    runs.forEach(([a, b], k) => {
      assert.deepEqual(r.tokens.slice(a, b), format.renderCompletion(turns[k]), `run ${k}`);
      assert.ok(format.stopTokenIds.includes(r.tokens[b - 1]), `run ${k} ends with a stop token`);
    });
    // The masked text holds what the assistant wrote and nothing the user, the tools or the system wrote.
    const masked = tokenizer.decode(r.tokens.filter((_, i) => r.lossMask[i] === 1));
    const unmasked = tokenizer.decode(r.tokens.filter((_, i) => r.lossMask[i] === 0));
    for (const text of ['Order #W1001 is pending. Shall I cancel it?', 'Done: #W1001 is cancelled', 'cancel_pending_order', '"ordered by mistake"', '#W2007']) {
      assert.ok(masked.includes(text), `masked text lacks ${text}`);
    }
    for (const text of ['Please cancel order', 'Also check the other one', '"status": "pending"', '"status": "delivered"', SYSTEM, 'Hi! How can I help you today?']) {
      assert.ok(!masked.includes(text), `masked text contains ${text}`);
      assert.ok(unmasked.includes(text), `prompt text lacks ${text}`);
    }
    assert.ok(!unmasked.includes('user-side tool output') && !masked.includes('user-side tool output'), 'user tool results are not in the agent view');
    // The incremental rendering is the format's whole-conversation rendering (harmony: a sampled final keeps <|return|>).
    const whole = format.render(conversation);
    const fixed = name === 'harmony' ? r.tokens.map((t) => (t === tokenizer.specialId('<|return|>') ? tokenizer.specialId('<|end|>') : t)) : r.tokens;
    assert.deepEqual(fixed, whole);
  });
}

test('the greeting is prompt by default and trained on with trainOnGreeting', () => {
  const format = createChatFormat('harmony', tokenizer);
  const conversation = toChatConversation(records[0], { systemPrompt: SYSTEM, tools: TOOLS });
  const off = renderTrajectory(format, conversation);
  const on = renderTrajectory(format, conversation, { trainOnGreeting: true });
  // Same conversation; only the greeting's terminator differs (<|return|> as sampled vs <|end|> as history).
  assert.equal(on.tokens.length, off.tokens.length);
  const diffs = on.tokens.flatMap((t, i) => (t !== off.tokens[i] ? [i] : []));
  assert.equal(diffs.length, 1);
  assert.equal(on.tokens[diffs[0]], tokenizer.specialId('<|return|>'));
  assert.equal(off.tokens[diffs[0]], tokenizer.specialId('<|end|>'));
  const greeting = format.renderCompletion({ role: 'assistant', content: 'Hi! How can I help you today?' });
  assert.equal(maskRuns(on.lossMask).length, maskRuns(off.lossMask).length + 1);
  const [a, b] = maskRuns(on.lossMask)[0];
  assert.deepEqual(on.tokens.slice(a, b), greeting);
});

test('buildSftDocuments: truncation keeps the head, drop counts, reward filter, deterministic', () => {
  const format = createChatFormat('hermes', tokenizer);
  const full = buildSftDocuments(records, format, { maxSeqLen: 10_000, systemPrompt: SYSTEM, tools: TOOLS });
  assert.equal(full.stats.documents, 6);
  assert.equal(full.stats.truncated, 0);
  const max = full.stats.maxLength;
  const cut = Math.floor(max * 0.6);
  const truncated = buildSftDocuments(records, format, { maxSeqLen: cut, systemPrompt: SYSTEM, tools: TOOLS });
  const longer = full.docs.filter((d) => d.tokens.length > cut).length;
  assert.ok(longer > 0);
  assert.equal(truncated.stats.truncated, longer);
  truncated.docs.forEach((d, i) => {
    assert.ok(d.tokens.length <= cut);
    assert.deepEqual([...d.tokens], [...full.docs[i].tokens.slice(0, d.tokens.length)], 'the head is kept');
    assert.deepEqual([...d.lossMask], [...full.docs[i].lossMask.slice(0, d.tokens.length)]);
  });
  const dropped = buildSftDocuments(records, format, { maxSeqLen: cut, overflow: 'drop', systemPrompt: SYSTEM, tools: TOOLS });
  assert.equal(dropped.stats.droppedTooLong, longer);
  assert.equal(dropped.stats.documents, 6 - longer);
  const good = buildSftDocuments(records, format, { maxSeqLen: 10_000, minReward: 1, systemPrompt: SYSTEM });
  assert.equal(good.stats.droppedLowReward, 1, 'trajectory 4 has reward 0');
  assert.deepEqual(good.meta.map((m) => m.record), [0, 1, 2, 3, 5]);
  const again = buildSftDocuments(records, format, { maxSeqLen: 10_000, systemPrompt: SYSTEM, tools: TOOLS });
  assert.deepEqual(again.docs, full.docs);
  assert.equal(full.stats.lossTokens, full.docs.reduce((s, d) => s + d.lossMask.slice(1).reduce((a, b) => a + b, 0), 0));
});

test('a prompt that fills the whole length leaves no loss tokens and is dropped (counted)', () => {
  const format = createChatFormat('harmony', tokenizer);
  const r = buildSftDocuments([trajectory(0)], format, { maxSeqLen: 20, systemPrompt: SYSTEM, tools: TOOLS });
  assert.equal(r.stats.documents, 0);
  assert.equal(r.stats.droppedNoLossTokens, 1);
});

test('bad trajectories get clear errors naming the line or record', () => {
  assert.throws(() => parseTrajectoriesJsonl('{"messages": []}\n', 'x.jsonl'), /x\.jsonl:1: not a trajectory record/);
  assert.throws(() => parseTrajectoriesJsonl(`${JSON.stringify(trajectory(0))}\n{oops\n`, 'x.jsonl'), /x\.jsonl:2: not valid JSON/);
  assert.throws(() => parseTrajectoriesJsonl('\n\n', 'x.jsonl'), /no trajectories/);
  assert.equal(parseTrajectoriesJsonl(`${JSON.stringify(trajectory(0))}\n`).length, 1);
  // A tool result whose call cannot be found cannot be rendered by harmony.
  const orphan = { messages: [{ role: 'user' as const, content: 'hi' }, { role: 'tool' as const, content: 'x', id: 'nope' }, { role: 'assistant' as const, content: 'ok' }], taskId: 'bad' };
  const format = createChatFormat('harmony', tokenizer);
  assert.throws(() => buildSftDocuments([trajectory(0), orphan], format, { maxSeqLen: 4096 }), /cannot render record 1 \(task bad\)/);
  const skipped = buildSftDocuments([trajectory(0), orphan], format, { maxSeqLen: 4096, onInvalid: 'skip' });
  assert.equal(skipped.stats.invalid, 1);
  assert.equal(skipped.stats.documents, 1);
  assert.match(skipped.stats.invalidReasons[0], /record 1/);
});

test('tokenizer training is deterministic and covers the rendered text', () => {
  const again = trainSftTokenizer(records, { vocabSize: 600, systemPrompt: SYSTEM, tools: TOOLS });
  assert.deepEqual(again.model, tokenizer.model);
  assert.ok(tokenizer.vocabSize <= 600 && tokenizer.vocabSize > 400, `vocab ${tokenizer.vocabSize}`);
  const corpus = tokenizerCorpus(records, 'harmony', { systemPrompt: SYSTEM, tools: TOOLS });
  assert.ok(corpus.some((s) => s.includes(SYSTEM)));
  assert.ok(corpus.some((s) => s.includes('get_order_details')));
  assert.ok(!corpus.some((s) => s.includes('<|start|>')), 'special tokens are not merge material');
  // Frequent strings become few tokens.
  assert.ok(tokenizer.encode(' cancelled').length <= 2);
});
