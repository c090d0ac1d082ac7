import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { PrepareSchema } from '../../src/recipes/retail/prepare.ts';
import { parseRunFile, parseStagesRunFile, runFileFromCheckpoint } from '../../src/recipes/train-setup.ts';
import { parseRetailStream } from '../../src/recipes/retail/stream.ts';
import { parseSftConfig } from '../../src/rl/sft.ts';

describe('presets/*.yaml', () => {
  for (const file of readdirSync('presets').filter((f) => f.endsWith('.yaml'))) {
    it(`${file} is a valid longrun train config whose data, SFT and rollouts agree`, () => {
      const raw = parseYaml(readFileSync(join('presets', file), 'utf8')) as Record<string, unknown>;
      const { run, trainer } = parseStagesRunFile(raw);
      if (trainer) assert.ok(trainer.trainer.totalSteps > 0);
      else assert.ok(run.sft, 'a run without GRPO has an SFT stage');
      if (run.retail?.stream !== undefined) {
        parseRetailStream(run.retail.stream);
        assert.ok(parseSftConfig(run.sft!.config).steps! > 0);
      }
      if (run.retail?.prepare !== undefined) {
        const prep = PrepareSchema.parse(run.retail.prepare);
        // the data stage writes where the task, tokenizer and SFT sections read
        assert.equal(run.retail.tasks.dataDir, join(prep.dir, 'train'));
        assert.equal(run.retail.tasks.valDir, join(prep.dir, 'validation'));
        // a fresh model reads the data stage's tokenizer; a checkpoint its own
        assert.equal(run.policy.tokenizer, run.policy.checkpoint ? join(run.policy.checkpoint, 'tokenizer.json') : join(prep.dir, 'tokenizer.json'));
        if (run.sft?.data !== undefined) assert.equal(run.sft.data, join(prep.dir, 'expert.jsonl'));
      }
    });
  }
});

describe('docs/results/**/*.yaml (the run files behind recorded results)', () => {
  const files = (readdirSync('docs/results', { recursive: true }) as string[]).filter((f) => f.endsWith('.yaml')).sort();
  it('there are some', () => assert.ok(files.length >= 10, `${files.length} run files`));
  for (const file of files) {
    it(`${file} still parses as a run file (its SFT stream and config too)`, () => {
      const raw = parseYaml(readFileSync(join('docs/results', file), 'utf8')) as Record<string, unknown>;
      const { run, trainer } = parseStagesRunFile(raw);
      assert.ok(trainer || run.sft, 'an SFT or a GRPO stage');
      if (run.retail?.stream !== undefined) {
        parseRetailStream(run.retail.stream);
        assert.ok(parseSftConfig(run.sft!.config).steps! > 0);
      }
    });
  }
});

describe('runFileFromCheckpoint', () => {
  it('points the policy at the checkpoint, drops preset, overrides, data stage, curriculum and (by default) SFT', () => {
    const raw = parseYaml(readFileSync(join('presets', 'retail-tiny.yaml'), 'utf8'));
    const f = runFileFromCheckpoint(raw, 'ckpt/step-1');
    const { run } = parseRunFile(f);
    assert.equal(run.policy.checkpoint, 'ckpt/step-1');
    assert.equal(run.policy.preset, undefined);
    assert.equal(run.policy.modelConfig, undefined);
    assert.equal(run.retail?.prepare, undefined);
    assert.equal(run.sft, undefined);
    assert.equal(run.retail?.drills, undefined, 'the drills go with the SFT stage');
    assert.deepEqual(run.retail?.tasks, parseRunFile(raw).run.retail?.tasks, 'the tasks stay');
    assert.ok(parseRunFile(raw).run.retail?.curriculum, 'the preset has a curriculum');
    assert.equal(run.retail?.curriculum, undefined);
    const kept = parseRunFile(runFileFromCheckpoint(raw, 'c', { keepSft: true })).run;
    assert.ok(kept.sft);
    assert.ok(kept.retail?.drills?.copy, 'the drills stay with the SFT stage');
    assert.equal(kept.retail?.curriculum, undefined);
    assert.ok((raw as { policy: { preset?: string } }).policy.preset, 'the input is not modified');
    assert.throws(() => runFileFromCheckpoint('not a mapping', 'c'), /not a mapping/);
  });
});
