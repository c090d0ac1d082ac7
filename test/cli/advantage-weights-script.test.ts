import { test } from 'node:test';
import assert from 'node:assert/strict';
import { advantageWeights, parseEpisodes } from '../../scripts/advantage-weights.ts';

const ep = (step: number, taskId: string, reward: number, modelTokens: number, family = 'cancel', kind = 'train') => ({ kind, step, taskId, family, reward, modelTokens });

test('advantageWeights: long failures outweigh the successes under token-mean, never under seq-mean', () => {
  // One group: 2 successes of 100 sampled tokens, 6 failures of 300. GRPO: mean 0.25, unbiased std √(0.25·0.75·8/7).
  const group = [...[0, 1].map(() => ep(1, 'a', 1, 100)), ...[0, 1, 2, 3, 4, 5].map(() => ep(1, 'a', 0, 300))];
  const all = advantageWeights(group).get('all')!;
  const sd = Math.sqrt((2 * 0.75 ** 2 + 6 * 0.25 ** 2) / 7);
  const aPos = 0.75 / (sd + 1e-6);
  const aNeg = 0.25 / (sd + 1e-6);
  assert.equal(all.groups, 1);
  assert.deepEqual([all.pos.episodes, all.neg.episodes], [2, 6]);
  assert.ok(Math.abs(all.pos.tokenWeight - 2 * aPos * 100) < 1e-9);
  assert.ok(Math.abs(all.neg.tokenWeight - 6 * aNeg * 300) < 1e-9);
  // −:+ = (6·0.25·300)/(2·0.75·100) = 3 under token-mean; the two sides of a group balance under seq-mean.
  assert.ok(Math.abs(all.neg.tokenWeight / all.pos.tokenWeight - 3) < 1e-9);
  assert.ok(Math.abs(all.neg.seqWeight / all.pos.seqWeight - 1) < 1e-9);
});

test('advantageWeights: all-equal groups are counted as drawn and carry nothing; validation rows are left out; families are kept apart', () => {
  const rows = [
    ep(1, 'a', 1, 50), ep(1, 'a', 1, 50), // all equal
    ep(2, 'a', 1, 10, 'info'), ep(2, 'a', 0, 10, 'info'), // informative, other step
    ep(1, 'b', 1, 10, 'cancel', 'val'), ep(1, 'b', 0, 10, 'cancel', 'val'),
  ];
  const t = advantageWeights(rows);
  assert.equal(t.get('all')!.groups, 1);
  assert.equal(t.get('all')!.drawn, 2);
  assert.equal(t.get('all')!.rewardSum, 1.5); // 1 for the all-equal group, 0.5 for the other
  assert.deepEqual([...t.keys()].sort(), ['all', 'cancel', 'info']);
  assert.deepEqual([t.get('cancel')!.drawn, t.get('cancel')!.groups], [1, 0]);
  assert.deepEqual([t.get('info')!.pos.episodes, t.get('info')!.neg.episodes], [1, 1]);
});

test('parseEpisodes: reads the rows, and stops on a line that is not JSON or a training row without its fields', () => {
  const good = JSON.stringify(ep(1, 'a', 1, 10));
  const rows = parseEpisodes(`${good}\n\n${JSON.stringify({ kind: 'val', step: 0 })}\n`, 'e.jsonl');
  assert.equal(rows.length, 2);
  assert.throws(() => parseEpisodes(`${good}\n{"kind": "train",`, 'e.jsonl'), /e\.jsonl:2: not JSON/);
  assert.throws(() => parseEpisodes(JSON.stringify({ kind: 'train', step: 1, taskId: 'a', reward: 1 }), 'e.jsonl'), /e\.jsonl:1: a training episode needs .*modelTokens/);
  assert.throws(() => parseEpisodes('3', 'e.jsonl'), /e\.jsonl:1: not an episode row/);
});
