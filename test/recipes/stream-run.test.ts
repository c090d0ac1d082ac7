import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { trainCommand } from '../../src/cli/train.ts';

/** A pretraining-shaped run file (retail.prepare → retail.curriculum → streamed SFT, no GRPO), small enough for CI. */
function runFile(dir: string, out: string, extra: string[] = []): string {
  return [
    'task: retail-synth',
    'retail:',
    '  prepare:',
    `    dir: ${JSON.stringify(join(dir, 'data'))}`,
    '    seed: 4',
    '    tasks: { train: 4, validation: 2, difficulty: 1, policy: compact, users: 30, orders: 60, products: 20 }',
    '    tokenizer: { vocabSize: 1024, format: harmony, digits: single }',
    '  tasks:',
    `    dataDir: ${JSON.stringify(join(dir, 'data', 'train'))}`,
    `    valDir: ${JSON.stringify(join(dir, 'data', 'validation'))}`,
    '    tools: compact',
    '  curriculum:',
    `    outDir: ${JSON.stringify(join(out, 'curriculum'))}`,
    '    documents: 64',
    '    stages: [{ ids: [2, 3], steps: 1 }]',
    '  stream: { seed: 3, tasksPerWorld: 2, world: { users: 30, orders: 60, products: 20 }, copyDrill: { share: 0.1 } }',
    'policy:',
    '  type: gpt-oss',
    '  preset: tiny-1m',
    '  modelConfig: { max_position_embeddings: 4096 }',
    `  tokenizer: ${JSON.stringify(join(dir, 'data', 'tokenizer.json'))}`,
    'sft:',
    `  outDir: ${JSON.stringify(join(out, 'sft'))}`,
    ...extra,
    '  config: { seqLen: 4096, microBatchTokens: 4096, rowsPerStep: 1, steps: 2, lr: 0.002, checkpointEvery: 1, keepCheckpoints: 3, contextLossWeight: 1 }',
  ].join('\n');
}

describe('longrun train with a streamed SFT stage and no GRPO (the pretraining shape)', () => {
  it('prepares, runs the curriculum and the stream, and continues elsewhere from a copied checkpoint (sft.resumeFrom)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-stream-run-'));
    try {
      const a = join(dir, 'run-a.yaml');
      writeFileSync(a, runFile(dir, join(dir, 'a')));
      const lines: string[] = [];
      assert.equal(await trainCommand({ config: a }, (l) => lines.push(l)), 0);
      assert.ok(lines.some((l) => l.startsWith('sft: streaming fresh conversations')));
      assert.ok(lines.some((l) => /^curriculum stage 1\/1/.test(l)));
      assert.match(lines.at(-1)!, /no grpo section/);
      const metricsA = readFileSync(join(dir, 'a', 'sft', 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { type: string; step: number; loss?: number });
      assert.deepEqual(metricsA.filter((m) => m.type === 'train').map((m) => m.step), [1, 2]);

      // A "committed" copy of the step-1 checkpoint with the metrics so far, as a shipped folder would hold them.
      const shipped = join(dir, 'shipped');
      cpSync(join(dir, 'a', 'sft', 'checkpoints', 'step-00000001'), shipped, { recursive: true });
      writeFileSync(join(shipped, 'metrics.jsonl'), readFileSync(join(dir, 'a', 'sft', 'metrics.jsonl'), 'utf8').split('\n').slice(0, 1).join('\n') + '\n');
      const b = join(dir, 'run-b.yaml');
      writeFileSync(b, runFile(dir, join(dir, 'b'), [`  resumeFrom: ${JSON.stringify(shipped)}`]));
      const more: string[] = [];
      assert.equal(await trainCommand({ config: b }, (l) => more.push(l)), 0);
      assert.ok(more.some((l) => l.startsWith('curriculum: skipped')), 'the curriculum is not redone over a checkpoint');
      assert.ok(more.some((l) => l.includes(`continuing from ${shipped}`)));
      const metricsB = readFileSync(join(dir, 'b', 'sft', 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { type: string; step: number; loss?: number });
      const train = (ms: typeof metricsA) => ms.filter((m) => m.type === 'train').map((m) => [m.step, m.loss]);
      assert.deepEqual(train(metricsB), train(metricsA), 'the continued run repeats the uninterrupted one exactly');

      writeFileSync(b, runFile(dir, join(dir, 'c'), [`  resumeFrom: ${JSON.stringify(join(dir, 'data'))}`]));
      await assert.rejects(trainCommand({ config: b }, () => {}), /not an SFT checkpoint/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
