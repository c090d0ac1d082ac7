/** The scripts' run loading (src/recipes/load-run.ts) and the one YAML reader under it (config-file.ts). */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { readConfigFile } from '../../src/recipes/config-file.ts';
import { loadGrpoRun, loadRun } from '../../src/recipes/load-run.ts';

describe('loadRun', () => {
  const dir = mkdtempSync(join(tmpdir(), 'longrun-load-run-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  const write = (name: string, value: unknown) => {
    const f = join(dir, name);
    writeFileSync(f, typeof value === 'string' ? value : stringify(value));
    return f;
  };
  const toy = { task: 'toy', policy: { type: 'tabular' }, grpo: { data: { trainBatchSize: 2 }, trainer: { totalSteps: 3 } } };

  it('reads, edits, parses and builds a run file', async () => {
    const { run, trainer, built } = await loadGrpoRun(write('toy.yaml', toy), { edit: (raw) => ((raw.grpo as { trainer: { totalSteps: number } }).trainer.totalSteps = 7) });
    assert.equal(run.task, 'toy');
    assert.equal(trainer.trainer.totalSteps, 7);
    assert.equal(built.deps.trainTasks.length, 4);
  });

  it('points the policy at a checkpoint and drops the stages before it', async () => {
    let seen: Record<string, unknown> | undefined;
    const retail = { tasks: { dataDir: join(dir, 'tasks') }, prepare: { dir: join(dir, 'data') }, curriculum: { outDir: 'c', stages: [{ ids: [2, 3], steps: 1 }] }, drills: { copy: { documents: 1 } } };
    const file = write('stages.yaml', { ...toy, task: 'retail-synth', policy: { type: 'gpt-oss', preset: 'tiny-1m' }, retail, sft: { data: 'x.jsonl', outDir: 'o' } });
    // The edit sees the file as runFileFromCheckpoint left it; the build then fails on the missing checkpoint.
    await assert.rejects(loadRun(file, { checkpoint: join(dir, 'no-such-model'), edit: (raw) => void (seen = structuredClone(raw)) }));
    assert.deepEqual(seen?.policy, { type: 'gpt-oss', checkpoint: join(dir, 'no-such-model') });
    assert.deepEqual(seen?.retail, { tasks: retail.tasks }, 'the data stage, the curriculum and (with the sft section) the drills are dropped');
    assert.equal(seen?.sft, undefined);
  });

  it('refuses a file without a grpo section where one is needed, before building anything', async () => {
    const file = write('sft-only.yaml', { task: 'toy', policy: { type: 'gpt-oss', preset: 'tiny-1m' }, sft: { data: 'x.jsonl', outDir: 'o' } });
    await assert.rejects(loadGrpoRun(file), /grpo: the GRPO trainer section is required/);
  });

  it('names the file in every error', () => {
    assert.throws(() => readConfigFile(join(dir, 'missing.yaml')), /^Error: cannot read config file .*missing\.yaml: /);
    assert.throws(() => readConfigFile(write('bad.yaml', 'a: [1, 2'), '--config'), /^Error: --config .*bad\.yaml is not valid YAML: /);
    assert.deepEqual(readConfigFile(write('file.json', '{"a": [1, 2.5]}')), { a: [1, 2.5] }, 'JSON reads as YAML');
  });
});
