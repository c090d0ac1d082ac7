import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BpeTokenizer } from '../../src/llm/index.ts';
import { COMPACT_RETAIL_POLICY, prepareRetailData } from '../../src/rl/prepare.ts';

describe('prepare (the data stage of a retail-synth run)', () => {
  it('writes seeded splits, expert trajectories and a tokenizer; reuses them for the same section and refuses a different one', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-prepare-'));
    try {
      const section = { dir, seed: 5, tasks: { train: 3, validation: 2, difficulty: 1, policy: 'compact', users: 10, orders: 20 }, tokenizer: { vocabSize: 300 } };
      const a = await prepareRetailData(section);
      assert.equal(a.reused, false);
      const tasks = JSON.parse(readFileSync(join(a.trainDir, 'tasks.json'), 'utf8')) as { id: string }[];
      assert.equal(tasks.length, 3);
      assert.equal((JSON.parse(readFileSync(join(a.validationDir, 'tasks.json'), 'utf8')) as unknown[]).length, 2);
      assert.equal(readFileSync(join(a.trainDir, 'policy.md'), 'utf8'), COMPACT_RETAIL_POLICY);
      const lines = readFileSync(a.trajectories, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { taskId: string; reward: number });
      assert.deepEqual(lines.map((l) => l.taskId), tasks.map((t) => t.id));
      assert.ok(lines.every((l) => l.reward === 1));
      assert.equal(BpeTokenizer.load(a.tokenizer).vocabSize, 300);
      const trajectories = readFileSync(a.trajectories, 'utf8');

      const b = await prepareRetailData(section);
      assert.equal(b.reused, true);
      assert.equal(readFileSync(b.trajectories, 'utf8'), trajectories);
      await assert.rejects(prepareRetailData({ ...section, seed: 6 }), /different prepare section/);
      await assert.rejects(prepareRetailData({ ...section, tasks: { ...section.tasks, train: 0 } }), /prepare\.tasks\.train/);

      // Same section in another folder: the same files (seeded).
      const other = mkdtempSync(join(tmpdir(), 'longrun-prepare-'));
      try {
        const c = await prepareRetailData({ ...section, dir: other });
        assert.equal(readFileSync(c.trajectories, 'utf8').replaceAll(other, dir), trajectories);
        assert.equal(readFileSync(c.tokenizer, 'utf8'), readFileSync(a.tokenizer, 'utf8'));
        // digits: single gives a tokenizer that reads every digit as its own token.
        const d = await prepareRetailData({ ...section, dir: join(other, 'single'), tokenizer: { vocabSize: 300, digits: 'single' } });
        const single = BpeTokenizer.load(d.tokenizer);
        assert.deepEqual(single.encode('#W4615687').map((id) => single.decode([id])).filter((p) => /\d/.test(p)), [...'4615687']);
        assert.notEqual(readFileSync(d.tokenizer, 'utf8'), readFileSync(a.tokenizer, 'utf8'));
      } finally {
        rmSync(other, { recursive: true, force: true });
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
