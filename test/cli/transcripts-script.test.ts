import { test } from 'node:test';
import assert from 'node:assert/strict';
import { episodeMarkdown, selectEpisodes, type EpisodeRow } from '../../scripts/transcripts.ts';

const row = (step: number, sample: number, reward: number, withMessages = true): EpisodeRow => ({
  kind: 'val', step, taskId: 't1', sample, family: 'cancel', reward, termination: 'user_stop',
  messages: withMessages
    ? [
      { role: 'assistant', content: 'Hi! How can I help you today?' },
      { role: 'user', content: 'Cancel #W1, please.' },
      { role: 'assistant', content: '', toolCalls: [{ name: 'cancel_pending_order', arguments: { order_id: '#W1', reason: 'no longer needed' } }] },
      { role: 'tool', name: 'cancel_pending_order', content: 'x'.repeat(50) },
    ]
    : undefined,
});

test('episodeMarkdown keeps calls whole and cuts tool results', () => {
  const md = episodeMarkdown(row(4, 0, 1), 10);
  assert.match(md, /^#### t1 \(cancel\), val, step 4, sample 0: reward 1, ended by user_stop/);
  assert.ok(md.includes('- **agent** calls `cancel_pending_order({"order_id":"#W1","reason":"no longer needed"})`'));
  assert.ok(md.includes('- **user**: Cancel #W1, please.'));
  assert.ok(md.includes(`\`${'x'.repeat(10)}…\``));
  assert.ok(!md.includes('x'.repeat(11)));
});

test('selectEpisodes keeps rows with messages of the asked tasks and steps, in task, step, sample order', () => {
  const rows: EpisodeRow[] = [row(4, 0, 1), row(0, 1, 0, false), row(0, 0, 0), { ...row(0, 0, 1), taskId: 'other' }, { ...row(2, 0, 1), kind: 'train' }];
  const picked = selectEpisodes(rows, { tasks: ['t1'], steps: [0, 4] });
  assert.deepEqual(picked.map((r) => [r.step, r.sample]), [[0, 0], [4, 0]]);
  assert.deepEqual(selectEpisodes(rows, { tasks: ['t1'], steps: [], kind: 'train' }).map((r) => r.step), [2]);
});
