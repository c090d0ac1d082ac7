/**
 * The retail recipe's own section of a run file (`retail:`, src/recipes/retail/run-section.ts): accepted with the
 * retail tasks only, refusing the knobs' old places with one message naming each move, and giving the stages of the
 * committed presets what the old layout gave them.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { describe, it } from 'node:test';
import { parse as parseYaml } from 'yaml';
import { MOVED_RETAIL_KEYS, movedKeyErrors, retailTaskOptions } from '../../../src/recipes/retail/run-section.ts';
import { parseRunFile, parseStagesRunFile, type RunFile } from '../../../src/recipes/train-setup.ts';

const policy = { type: 'gpt-oss', preset: 'tiny-1m', tokenizer: 't.json' };
const grpo = { data: { trainBatchSize: 1 }, trainer: { totalSteps: 1 } };
const stages = [{ ids: [2, 3], steps: 5 }];

describe('the retail: section of a run file', () => {
  it('goes with task retail-v0, retail-v1 and retail-synth, and its defaults are the old taskOptions defaults', () => {
    for (const task of ['retail-v0', 'retail-v1', 'retail-synth']) {
      const { run } = parseRunFile({ task, policy, grpo, retail: { tasks: { maxTasks: 4 } } });
      assert.deepEqual(run.retail, { tasks: { split: 'base', tools: 'full', maxTasks: 4 } });
      // Without the section, the stages read the same defaults.
      assert.deepEqual(retailTaskOptions(parseRunFile({ task, policy, grpo }).run), { split: 'base', tools: 'full' });
    }
    const { run } = parseStagesRunFile({
      task: 'retail-synth', policy,
      retail: { tasks: { dataDir: 'd/train', valDir: 'd/val', maxSteps: 50, tools: 'compact', trainFamilies: ['cancel'], trainMaxRefusals: 2 }, prepare: { dir: 'd' }, curriculum: { outDir: 'c', stages }, drills: { copy: { documents: 3 }, identity: { documents: 2 }, address: { documents: 1, seed: 4 }, write: { documents: 5 } } },
      sft: { data: 'x.jsonl', outDir: 'o' },
    });
    assert.deepEqual(run.retail?.drills, { copy: { documents: 3, seed: 0, ids: [4, 12], people: 0 }, identity: { documents: 2, seed: 0 }, address: { documents: 1, seed: 4 }, write: { documents: 5, seed: 0 } });
    assert.deepEqual(run.retail?.curriculum, { outDir: 'c', documents: 40000, seed: 1, config: {}, stages });
    assert.deepEqual(run.sft, { data: 'x.jsonl', outDir: 'o', config: {} }, 'the sft section keeps only what any env has');
  });

  it('is refused with an env, a toy task or agent programs', () => {
    const retail = { tasks: { maxTasks: 2 } };
    assert.throws(() => parseRunFile({ env: { id: 'x' }, policy, grpo, retail }), /retail: the retail recipe's section goes with task retail-v0, retail-v1, retail-synth; this is an env: run/);
    assert.throws(() => parseRunFile({ task: 'toy', policy: { type: 'tabular' }, grpo, retail }), /retail: .*this is task toy/);
    const rollout = { command: 'node agent.mjs', tasks: 'tasks.json' };
    assert.throws(() => parseRunFile({ task: 'program', policy, grpo, rollout, retail }), /retail: .*this is task program/);
  });

  it('is strict, at every level', () => {
    const run = (retail: unknown) => () => parseRunFile({ task: 'retail-synth', policy, grpo, sft: { data: 'x.jsonl', outDir: 'o' }, retail });
    assert.throws(run({ task: {} }), /retail: Unrecognized key.*"task"/s);
    assert.throws(run({ tasks: { dataDirr: 'x' } }), /retail\.tasks: Unrecognized key.*dataDirr/s);
    assert.throws(run({ drills: { copyDrill: { documents: 1 } } }), /retail\.drills: Unrecognized key.*copyDrill/s);
    assert.throws(run({ drills: { copy: { documents: 0 } } }), /retail\.drills\.copy\.documents/);
    assert.throws(run({ curriculum: { outDir: 'c', stages: [] } }), /retail\.curriculum\.stages/);
    assert.throws(run({ tasks: { tools: 'tiny' } }), /retail\.tasks\.tools/);
  });

  it('refuses what does not fit the task or the SFT stage, naming the key', () => {
    const base = { policy, grpo };
    assert.throws(() => parseRunFile({ ...base, task: 'retail-v1', retail: { prepare: { dir: 'd' } } }), /retail\.prepare: the data stage makes synthetic task sets \(task retail-synth only\), not retail-v1/);
    assert.throws(() => parseRunFile({ ...base, task: 'retail-v0', retail: { tasks: { trainFamilies: ['cancel'] } } }), /retail\.tasks\.trainFamilies: .*retail-synth only/);
    const synth = { ...base, task: 'retail-synth' };
    assert.throws(() => parseRunFile({ ...synth, retail: { drills: { copy: { documents: 2 } } } }), /retail\.drills: the drills are mixed into the documents of sft\.data; add an sft section with data/);
    assert.throws(() => parseRunFile({ ...synth, sft: { outDir: 'o' }, retail: { stream: { seed: 1 }, drills: { copy: { documents: 2 } } } }), /retail\.drills: .*a stream takes its own/);
    assert.throws(() => parseRunFile({ ...synth, sft: { data: 'x.jsonl', outDir: 'o' }, retail: { stream: { seed: 1 } } }), /retail\.stream: give exactly one of sft\.data .* and retail\.stream/);
    assert.doesNotThrow(() => parseRunFile({ ...synth, sft: { outDir: 'o' }, retail: { stream: { seed: 1 } } }), 'a streamed SFT stage before GRPO');
  });
});

describe('the old places of the retail knobs', () => {
  const old = {
    task: 'retail-synth', policy, grpo,
    taskOptions: { dataDir: 'd/train' }, prepare: { dir: 'd' }, curriculum: { outDir: 'c', stages },
    sft: { data: 'x.jsonl', outDir: 'o', stream: { seed: 1 }, copyDrill: { documents: 1 }, identityDrill: { documents: 1 }, addressDrill: { documents: 1 }, writeDrill: { documents: 1 } },
  };

  it('are refused in one message that says where each key went', () => {
    assert.equal(MOVED_RETAIL_KEYS.length, 8);
    let message = '';
    assert.throws(() => parseRunFile(old), (e: Error) => ((message = e.message), true));
    const lines = message.split('\n');
    assert.match(lines[0], /invalid run config \(the retail recipe's knobs live in its retail: section\)/);
    for (const [from, to] of MOVED_RETAIL_KEYS) assert.ok(lines.includes(`  ${from}: moved to ${to} (see src/recipes/README.md)`), `${from} → ${to} in:\n${message}`);
    assert.equal(lines.length, 1 + MOVED_RETAIL_KEYS.length, message);
    // One key alone is named alone; a run on an env is told where its own task keys are.
    assert.deepEqual(movedKeyErrors({ task: 'retail-v1', sft: { writeDrill: {} } }), ['sft.writeDrill: moved to retail.drills.write (see src/recipes/README.md)']);
    assert.throws(() => parseStagesRunFile({ env: { id: 'x' }, policy, taskOptions: { split: 'a' } }), /taskOptions: moved to retail\.tasks .*\n {2}retail: goes with task retail-v0, retail-v1, retail-synth only; env: takes split, valSplit and maxTasks itself/);
    assert.deepEqual(movedKeyErrors({ task: 'retail-synth', retail: { tasks: {}, prepare: {} }, sft: { data: 'x' } }), [], 'the new layout has none');
  });

  it('moved without a change of meaning: the presets give their stages what they gave before the move', () => {
    // What the old layout's parser gave each stage of these committed files at commit 697a673, before the move.
    const before: Record<string, Record<string, unknown>> = {
      'presets/retail-tiny.yaml': {
        taskOptions: { dataDir: 'runs/retail-tiny/data/train', split: 'base', valDir: 'runs/retail-tiny/data/validation', maxSteps: 200, tools: 'compact' },
        prepare: { dir: 'runs/retail-tiny/data', seed: 2026, tasks: { train: 2048, validation: 64, difficulty: 1, policy: 'compact', users: 2000, orders: 4000 }, expert: { trials: 1, seed: 0 }, tokenizer: { vocabSize: 2048, format: 'harmony', digits: 'single' } },
        curriculum: { outDir: 'runs/retail-tiny/curriculum', documents: 40000, seed: 1, config: {}, stages: [{ ids: [2, 3], steps: 150 }, { ids: [2, 3], steps: 250 }, { ids: [3, 6], steps: 50 }, { ids: [4, 12], steps: 60 }] },
        'sft.copyDrill': { documents: 8000, seed: 5, ids: [2, 12], people: 0 },
      },
      'docs/results/retail-grpo/pretrain/v2.yaml': {
        taskOptions: { dataDir: 'runs/retail-pretrain-v2/data/train', split: 'base', valDir: 'runs/retail-pretrain-v2/data/validation', maxSteps: 200, tools: 'compact' },
        prepare: { dir: 'runs/retail-pretrain-v2/data', seed: 2027, tasks: { train: 1024, validation: 128, difficulty: 1, policy: 'compact', users: 500, orders: 1000 }, expert: { trials: 1, seed: 0 }, tokenizer: { vocabSize: 2048, format: 'harmony', digits: 'single-llama', spaces: 'separate' } },
        curriculum: { outDir: 'runs/retail-pretrain-v2/curriculum', documents: 40000, seed: 1, config: {}, stages: [{ ids: [2, 3], steps: 150 }, { ids: [2, 3], steps: 250 }, { ids: [3, 6], steps: 50 }, { ids: [4, 12], steps: 60 }] },
        'sft.stream': { seed: 11, tasksPerWorld: 8, world: { users: 500, orders: 1000 }, difficulty: 1, policy: 'compact', copyDrill: { share: 0.1, ids: [2, 12], people: 0.3 }, identityDrill: { share: 0.2 }, writeDrill: { share: 0.1 } },
      },
      'docs/results/retail-tiny/attempt6/sft-address-drill.yaml': {
        taskOptions: { dataDir: 'runs/dig/data/train', split: 'base', valDir: 'runs/dig/data/validation', maxSteps: 200, tools: 'compact', trainFamilies: ['cancel', 'modify_items', 'modify_address', 'modify_payment', 'modify_user_address', 'return', 'exchange', 'info', 'multi'] },
        'sft.copyDrill': { documents: 8000, seed: 8, ids: [2, 12], people: 0.5 },
        'sft.identityDrill': { documents: 8000, seed: 11 },
        'sft.addressDrill': { documents: 3000, seed: 3 },
      },
    };
    const now = (run: RunFile): Record<string, unknown> => {
      const r = run.retail!;
      const d = r.drills ?? {};
      const all: Record<string, unknown> = {
        taskOptions: r.tasks, prepare: r.prepare, curriculum: r.curriculum, 'sft.stream': r.stream,
        'sft.copyDrill': d.copy, 'sft.identityDrill': d.identity, 'sft.addressDrill': d.address, 'sft.writeDrill': d.write,
      };
      return Object.fromEntries(Object.entries(all).filter(([, v]) => v !== undefined));
    };
    for (const [file, want] of Object.entries(before)) {
      const { run } = parseStagesRunFile(parseYaml(readFileSync(file, 'utf8')));
      assert.deepEqual(now(run), want, file);
    }
  });
});
