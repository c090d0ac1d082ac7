import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { parseStagesRunFile, policySource } from '../../src/recipes/train-setup.ts';

const runWith = (checkpoint: string, outDir: string, resumeFrom?: string) => parseStagesRunFile({
  task: 'toy', policy: { type: 'gpt-oss', checkpoint },
  sft: { data: 'x.jsonl', outDir, ...(resumeFrom === undefined ? {} : { resumeFrom }) },
}).run;

test('policy source: policy.checkpoint, or the checkpoint the SFT stage resumes from when that folder is gone', () => {
  const root = mkdtempSync(join(tmpdir(), 'policy-source-'));
  const start = join(root, 'start'), out = join(root, 'out'), committed = join(root, 'committed');
  // The start exists: it is used, whatever the stage resumes from.
  mkdirSync(start);
  assert.equal(policySource(runWith(start, out)), start);
  // The start is gone and nothing resumes: the missing path stays, so loading it fails with its own error.
  const gone = join(root, 'gone');
  assert.equal(policySource(runWith(gone, out)), gone);
  // A committed SFT checkpoint (`sft.resumeFrom` with trainer.json) stands in for it; a folder without one does not.
  mkdirSync(committed);
  assert.equal(policySource(runWith(gone, out, committed)), gone);
  writeFileSync(join(committed, 'trainer.json'), '{}');
  assert.equal(policySource(runWith(gone, out, committed)), committed);
  // The stage's own newest checkpoint comes first.
  mkdirSync(join(out, 'checkpoints', 'step-00000025'), { recursive: true });
  mkdirSync(join(out, 'checkpoints', 'step-00000050'), { recursive: true });
  assert.equal(policySource(runWith(gone, out, committed)), join(out, 'checkpoints', 'step-00000050'));
});
