/** A damaged GRPO checkpoint folder gives an error that names the file and what is wrong with it. */
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { parseTrainerConfig } from '../../src/rl/config.ts';
import { GrpoTrainer } from '../../src/rl/trainer.ts';
import { createToySetup } from '../../src/recipes/toy/toy-task.ts';

describe('GRPO trainer checkpoints', () => {
  const dir = mkdtempSync(join(tmpdir(), 'longrun-trainer-ckpt-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const trainer = () => {
    const s = createToySetup();
    const config = parseTrainerConfig({ data: { trainBatchSize: 2 }, rollout: { n: 2, maxTurns: 2, maxResponseTokens: 20, concurrency: 2 }, trainer: { totalSteps: 1, seed: 1 } });
    return new GrpoTrainer({ config, policy: s.policy, engine: s.engine, format: s.format, makeEnv: s.makeEnv, trainTasks: s.taskIds, padId: s.padId });
  };

  it('names trainer.json when it is truncated, and explains an empty or garbled latest', async () => {
    const stepDir = await trainer().saveCheckpoint(dir);
    await trainer().loadCheckpoint(dir); // intact: loads
    const file = join(stepDir, 'trainer.json');
    const full = readFileSync(file, 'utf8');
    writeFileSync(file, full.slice(0, Math.floor(full.length / 2)));
    await assert.rejects(trainer().loadCheckpoint(dir), (e: Error) => e.message.startsWith(`cannot read the trainer state ${file} (checkpoint of step 0): `) && /JSON/.test(e.message));
    writeFileSync(file, full);
    for (const bad of ['', '  \n', 'step 3', '-1']) {
      writeFileSync(join(dir, 'latest'), bad);
      await assert.rejects(trainer().loadCheckpoint(dir), (e: Error) => e.message.startsWith(`${join(dir, 'latest')} should hold the step number of the last checkpoint`) && !/ENOENT/.test(e.message), JSON.stringify(bad));
    }
    writeFileSync(join(dir, 'latest'), '7');
    await assert.rejects(trainer().loadCheckpoint(dir), (e: Error) => e.message.includes(join(dir, 'step-00000007', 'trainer.json')));
  });

  it('writes step-NNNNNNNN folders and still loads a step_N folder of the older naming', async () => {
    const legacyRoot = mkdtempSync(join(tmpdir(), 'longrun-trainer-legacy-'));
    try {
      const written = await trainer().saveCheckpoint(legacyRoot);
      assert.equal(written, join(legacyRoot, 'step-00000000'));
      renameSync(written, join(legacyRoot, 'step_0'));
      await trainer().loadCheckpoint(legacyRoot);
    } finally {
      rmSync(legacyRoot, { recursive: true, force: true });
    }
  });
});
