/**
 * Every run file committed anywhere in the repository (`git ls-files '*.yaml' '*.yml'`: presets/ and the run files
 * behind the results under docs/) parses with the parser its kind needs, down to the sections that are parsed only
 * when their stage runs, so a result's recipe cannot rot unnoticed:
 * - a run file (`task:` or `env:`) for `longrun train --config`: the stages (`parseStagesRunFile`, with the GRPO section when
 *   there is one), the SFT stage's settings, and in the retail section (`retail:`) the stream, the data stage and every
 *   curriculum stage's SFT settings;
 * - an SFT settings file (neither `task:` nor `env:`) for `longrun sft --config`: `parseSftConfig`.
 * A file that records a run the code can no longer build says so in its first lines, with the reason:
 * `# longrun: historical — <why>`; it must still be YAML, and is not parsed further.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { DRILL_SFT_DEFAULTS } from '../../src/recipes/retail/copy-drill.ts';
import { PrepareSchema } from '../../src/recipes/retail/prepare.ts';
import { parseRetailStream } from '../../src/recipes/retail/stream.ts';
import { parseStagesRunFile } from '../../src/recipes/train-setup.ts';
import { parseSftConfig } from '../../src/rl/sft.ts';

/** The reason of a `# longrun: historical — <why>` header (in the first five lines), or null. */
function historicalReason(text: string): string | null {
  for (const line of text.split('\n').slice(0, 5)) {
    const m = /^#\s*longrun:\s*historical\b\s*[—:-]?\s*(.*)$/.exec(line);
    if (m) return m[1].trim();
  }
  return null;
}

/** What kind of file `raw` is, after parsing it with that kind's parsers (they throw on a bad field). */
function parseCommitted(raw: unknown): 'grpo run' | 'stage run' | 'sft settings' {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new Error('not a mapping');
  if (!('task' in raw) && !('env' in raw)) {
    parseSftConfig(raw);
    return 'sft settings';
  }
  const { run, trainer } = parseStagesRunFile(raw);
  if (run.sft) parseSftConfig({ ...run.sft.config, padId: 0 });
  const retail = run.retail;
  if (retail?.stream !== undefined) parseRetailStream(retail.stream);
  if (retail?.prepare !== undefined) PrepareSchema.parse(retail.prepare);
  for (const stage of retail?.curriculum?.stages ?? []) parseSftConfig({ ...DRILL_SFT_DEFAULTS, ...retail!.curriculum!.config, steps: stage.steps, padId: 0 });
  if (trainer === null) assert.ok(run.sft || retail?.curriculum || retail?.prepare, 'a run without GRPO has another stage');
  return trainer ? 'grpo run' : 'stage run';
}

const files = execFileSync('git', ['ls-files', '*.yaml', '*.yml'], { encoding: 'utf8' }).split('\n').filter((f) => f !== '');

describe('every committed run file', () => {
  it('finds the presets and the run files under docs/', () => {
    assert.ok(files.some((f) => f.startsWith('presets/')) && files.some((f) => f.startsWith('docs/')), files.join(', '));
  });

  for (const file of files) {
    it(`${file} parses`, () => {
      const text = readFileSync(file, 'utf8');
      const raw: unknown = parseYaml(text);
      const reason = historicalReason(text);
      if (reason !== null) {
        assert.ok(reason.length >= 10, `${file}: a historical run file says why it no longer builds`);
        return;
      }
      parseCommitted(raw);
    });
  }

  it('tells the kinds apart, and a historical header from an ordinary comment', () => {
    assert.equal(parseCommitted({ task: 'toy', policy: { type: 'tabular' }, grpo: { data: { trainBatchSize: 1 }, trainer: { totalSteps: 1 } } }), 'grpo run');
    assert.equal(parseCommitted({ task: 'toy', policy: { type: 'gpt-oss', preset: 'tiny-1m' }, sft: { data: 'x.jsonl', outDir: 'o', config: { steps: 2 } } }), 'stage run');
    assert.equal(parseCommitted({ env: { module: './env.ts' }, policy: { type: 'gpt-oss', preset: 'tiny-1m' }, sft: { data: 'x.jsonl', outDir: 'o', config: { steps: 2 } } }), 'stage run');
    assert.equal(parseCommitted({ steps: 10, lr: 1e-3 }), 'sft settings');
    assert.throws(() => parseCommitted({ task: 'toy', policy: { type: 'gpt-oss', preset: 'tiny-1m' }, sft: { data: 'x.jsonl', outDir: 'o', config: { stepz: 2 } } }), /stepz/);
    assert.throws(() => parseCommitted({ stepz: 10 }), /stepz/);
    assert.equal(historicalReason('# longrun: historical — trained before retail.stream existed\ntask: toy\n'), 'trained before retail.stream existed');
    assert.throws(() => parseCommitted({ task: 'retail-synth', policy: { type: 'gpt-oss', preset: 'tiny-1m' }, sft: { data: 'x.jsonl', outDir: 'o' }, retail: { prepare: { dir: 'd', tasks: { train: 1, validation: 1 }, tokenizer: { vocabSize: 100 } } } }), /vocabSize/);
    assert.throws(() => parseCommitted({ task: 'retail-synth', policy: { type: 'gpt-oss', preset: 'tiny-1m' }, sft: { outDir: 'o', config: { steps: 1 } }, retail: { stream: { seed: 1, tasksPerWorlds: 2 } } }), /tasksPerWorlds/);
    assert.equal(historicalReason('# a run of attempt 4\ntask: toy\n'), null);
  });
});
