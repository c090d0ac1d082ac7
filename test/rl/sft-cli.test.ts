import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { Command } from 'commander';
import { register } from '../../src/cli/sft.ts';
import { trajectories, withTempDir } from './sft-fixtures.ts';

async function longrun(args: string[]): Promise<string[]> {
  const program = new Command();
  program.exitOverride();
  register(program);
  const lines: string[] = [];
  const log = console.log;
  console.log = (...a: unknown[]) => { lines.push(a.join(' ')); };
  try {
    await program.parseAsync(['node', 'longrun', ...args]);
  } finally {
    console.log = log;
  }
  return lines;
}

test('longrun sft: trains, stops, resumes from --out, and rejects bad flags', async () => {
  await withTempDir(async (dir) => {
    const data = join(dir, 'traj.jsonl');
    writeFileSync(data, trajectories(6).map((t) => JSON.stringify(t)).join('\n') + '\n');
    const out = join(dir, 'out');
    const common = ['sft', '--data', data, '--out', out, '--vocab-size', '400', '--seq-len', '256', '--micro-batch-tokens', '512', '--rows-per-step', '2',
      '--no-progress', '--eval-fraction', '0.2'];
    const first = await longrun([...common, '--steps', '2']);
    assert.match(first[0], /6 trajectories → 6 documents/);
    assert.match(first.join('\n'), /steps 2\/2/);
    assert.ok(existsSync(join(out, 'model', 'model.safetensors')));
    assert.ok(existsSync(join(out, 'tokenizer.json')));
    await assert.rejects(longrun([...common, '--steps', '4']), /already holds checkpoints/);
    const second = await longrun([...common, '--steps', '4', '--resume']);
    assert.match(second.join('\n'), /resumed at step 2; steps 4\/4/);
    assert.deepEqual(readdirSync(join(out, 'checkpoints')), ['step-00000002', 'step-00000004']);
    const steps = readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { type: string; step: number })
      .filter((m) => m.type === 'train').map((m) => m.step);
    assert.deepEqual(steps, [1, 2, 3, 4]);
    await assert.rejects(longrun([...common, '--overflow', 'split']), /--overflow must be truncate or drop/);
    await assert.rejects(longrun([...common, '--lr', 'fast']), /--lr must be a number/);
    await assert.rejects(longrun([...common, '--lr', '-1', '--out', join(dir, 'o2')]), /invalid SFT config[\s\S]*lr/);
    await assert.rejects(longrun([...common, '--seq-len', '16', '--micro-batch-tokens', '16', '--out', join(dir, 'o3')]), /no training documents: the shortest prompt is \d+ tokens/);
  });
});
