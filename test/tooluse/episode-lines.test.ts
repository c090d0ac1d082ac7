import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { formatEpisodeLines, parseEpisodeLines } from '../../src/tooluse/episode-lines.ts';

describe('per-episode result lines', () => {
  it('reads task, family and reward, skips transcript lines, and takes older lines without a family', () => {
    const text = [
      '=== validation_0 (cancel) reward 1 trial 0 user_stop',
      'assistant: Hi! How can I help you today?',
      '=== validation_0 (cancel) reward 0.5 trial 1 max_turns',
      '=== validation_1 reward 0 term max_turns turns 16',
      '',
    ].join('\n');
    assert.deepEqual(parseEpisodeLines(text, 'f'), [
      { taskId: 'validation_0', family: 'cancel', reward: 1 },
      { taskId: 'validation_0', family: 'cancel', reward: 0.5 },
      { taskId: 'validation_1', family: 'task', reward: 0 },
    ]);
  });

  it('refuses a reward that is not a number and a file without episodes, naming the file', () => {
    assert.throws(() => parseEpisodeLines('=== t (cancel) reward NaN trial 0\n', 'runs/x.txt'), /runs\/x.txt: bad reward/);
    assert.throws(() => parseEpisodeLines('just a transcript\n', 'runs/y.txt'), /runs\/y.txt: no episode lines/);
  });

  it('writes lines ordered by task number then trial, which read back as written', () => {
    const episodes = [
      { taskId: 'validation_10', family: 'cancel', reward: 1, trial: 0, termination: 'user_stop' },
      { taskId: 'validation_2', family: 'return', reward: 0.5, trial: 1, termination: 'max_turns' },
      { taskId: 'validation_2', family: 'return', reward: 0, trial: 0, termination: 'user_stop' },
    ];
    const text = formatEpisodeLines(episodes);
    assert.equal(text, [
      '=== validation_2 (return) reward 0 trial 0 user_stop',
      '=== validation_2 (return) reward 0.5 trial 1 max_turns',
      '=== validation_10 (cancel) reward 1 trial 0 user_stop',
      '',
    ].join('\n'));
    assert.deepEqual(parseEpisodeLines(text, 'f'), [episodes[2], episodes[1], episodes[0]].map(({ taskId, family, reward }) => ({ taskId, family, reward })));
    assert.throws(() => formatEpisodeLines([{ ...episodes[0]!, family: 'two words' }]), /single words/);
    assert.throws(() => formatEpisodeLines([{ ...episodes[0]!, reward: Number.NaN }]), /no finite reward/);
  });
});
