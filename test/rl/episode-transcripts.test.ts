import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import type { ChatMessage } from '../../src/llm/index.ts';
import { parseTrainerConfig } from '../../src/rl/config.ts';
import { transcript } from '../../src/rl/transcript.ts';

const size = (ms: readonly ChatMessage[]) => ms.reduce((a, m) => a + m.content.length + (m.reasoning?.length ?? 0) + (m.toolCalls ? JSON.stringify(m.toolCalls).length : 0), 0);

describe('episode transcripts (trainer.episodeTranscripts)', () => {
  const messages: ChatMessage[] = [
    { role: 'system', content: 'policy '.repeat(100) },
    { role: 'assistant', content: 'Hi! How can I help you today?' },
    { role: 'user', content: 'Cancel order #W1, please.' },
    { role: 'assistant', content: '', reasoning: 'look it up', toolCalls: [{ name: 'get_order_details', arguments: { order_id: '#W1' } }] },
    { role: 'tool', content: 'x'.repeat(500), toolCallId: 'c0' },
    { role: 'assistant', content: 'Done.' },
  ];

  it('leaves the system prompt out (its length given) and keeps a conversation under the bound whole', () => {
    const t = transcript(messages, 10_000);
    assert.deepEqual(t.messages, messages.slice(1));
    assert.equal(t.systemPromptChars, messages[0].content.length);
    assert.equal(t.messagesCut, undefined);
    assert.equal(t.charsCut, undefined);
  });

  it('cuts at maxChars: the head of the message past the bound, later messages dropped, both counted', () => {
    const t = transcript(messages, 200);
    assert.equal(size(t.messages), 200);
    assert.equal(t.messages.length, 4);
    assert.equal(t.messages[3].role, 'tool');
    assert.equal(t.messagesCut, 1);
    assert.equal(t.charsCut, size(messages.slice(1)) - 200);
    assert.equal(t.messages[3].content, 'x'.repeat(75));
    // A tool call that fits is kept whole; the text around it is cut.
    const u = transcript(messages, 120);
    assert.deepEqual(u.messages[2].toolCalls, messages[3].toolCalls);
    assert.equal(size(u.messages), 120);
  });

  it('is on by default: one sample per validation task, one group per training step, 16k characters', () => {
    const c = parseTrainerConfig({ data: { trainBatchSize: 1 }, rollout: { n: 2 }, trainer: { totalSteps: 1 } });
    assert.deepEqual(c.trainer.episodeTranscripts, { trainGroups: 1, valSamples: 1, maxChars: 16_000 });
  });
});
