import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { PrepareSchema } from '../../src/rl/prepare.ts';
import { parseRunFile } from '../../src/rl/trainSetup.ts';

describe('presets/*.yaml', () => {
  for (const file of readdirSync('presets').filter((f) => f.endsWith('.yaml'))) {
    it(`${file} is a valid longrun train config whose data, SFT and rollouts agree`, () => {
      const raw = parseYaml(readFileSync(join('presets', file), 'utf8')) as Record<string, unknown>;
      const { run, trainer } = parseRunFile(raw);
      assert.ok(trainer.trainer.totalSteps > 0);
      if (raw.prepare !== undefined) {
        const prep = PrepareSchema.parse(raw.prepare);
        // the data stage writes where the task, tokenizer and SFT sections read
        assert.equal(run.taskOptions.dataDir, join(prep.dir, 'train'));
        assert.equal(run.taskOptions.valDir, join(prep.dir, 'validation'));
        assert.equal(run.policy.tokenizer, join(prep.dir, 'tokenizer.json'));
        assert.equal(run.sft?.data, join(prep.dir, 'expert.jsonl'));
      }
    });
  }
});
