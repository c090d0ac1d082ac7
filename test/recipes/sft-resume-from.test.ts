/**
 * `sft.resumeFrom` with a trajectories file (`sft.data`), as with the retail stream: when `sft.outDir` holds no
 * checkpoint yet, the stage continues from the folder: an SFT checkpoint at its step with its optimizer, or a model
 * folder's weights with a fresh optimizer from step 0 (and the log line says which). A tiny model on the counter
 * env's demonstrations (test/fixtures/envs/counter.ts), a few steps.
 */
import assert from 'node:assert/strict';
import { copyFileSync, cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { trainCommand } from '../../src/cli/train.ts';
import { BpeTokenizer } from '../../src/llm/bpe.ts';
import { demonstrationEpisodes, loadEnvModule, unregisterEnv, writeTrajectoriesJsonl } from '../../src/tooluse/api/index.ts';

const MODULE = 'test/fixtures/envs/counter.ts';
type Metric = { type: string; step: number; loss?: number };

describe('sft.resumeFrom with sft.data', () => {
  let dir: string;
  let data: string;
  let tokenizer: string;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'longrun-sft-resume-from-'));
    const def = await loadEnvModule(MODULE);
    data = join(dir, 'demos.jsonl');
    writeTrajectoriesJsonl(data, await demonstrationEpisodes(def, 'train', 2, { seed: 0 }));
    tokenizer = join(dir, 'tokenizer.json');
    BpeTokenizer.train(`${def.spec.instructions} Bring the counter to 3 with add, then tell me its value. The counter is at 3. add read n integer`.repeat(4), { vocabSize: 400 }).save(tokenizer);
  });
  after(() => {
    unregisterEnv('fixture/counter-v0');
    rmSync(dir, { recursive: true, force: true });
  });

  /** Writes a run file of the SFT stage alone into `name`/ and runs it; returns the printed lines and metrics. */
  async function train(name: string, o: { seed?: number; steps: number; resumeFrom?: string; checkpoint?: string }): Promise<{ lines: string[]; metrics: Metric[] }> {
    const out = join(dir, name);
    const file = join(dir, `${name}.yaml`);
    writeFileSync(file, stringify({
      env: { module: MODULE, split: 'train' },
      policy: { type: 'gpt-oss', ...(o.checkpoint ? { checkpoint: o.checkpoint } : { preset: 'tiny-1m', modelConfig: { max_position_embeddings: 1024 } }), tokenizer, seed: o.seed ?? 0 },
      sft: {
        data, outDir: out, ...(o.resumeFrom ? { resumeFrom: o.resumeFrom } : {}),
        config: { seqLen: 512, microBatchTokens: 512, rowsPerStep: 2, steps: o.steps, lr: 0.01, checkpointEvery: 1, keepCheckpoints: 3, seed: 1 },
      },
    }));
    const lines: string[] = [];
    assert.equal(await trainCommand({ config: file }, (l) => lines.push(l)), 0);
    const metrics = readFileSync(join(out, 'metrics.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Metric).filter((m) => m.type === 'train');
    return { lines, metrics };
  }
  const losses = (ms: readonly Metric[]) => ms.map((m) => [m.step, m.loss]);

  it('continues an SFT checkpoint at its step, with its optimizer: the same steps as the run it came from', { timeout: 240_000 }, async () => {
    const a = await train('a', { steps: 2 });
    assert.deepEqual(a.metrics.map((m) => m.step), [1, 2]);
    // A shipped copy of the step-1 checkpoint, with the metrics so far; the run that continues it starts from another
    // seed, so only the checkpoint's weights and optimizer can make its step 2 the same as the first run's.
    const shipped = join(dir, 'shipped');
    cpSync(join(dir, 'a', 'checkpoints', 'step-00000001'), shipped, { recursive: true });
    writeFileSync(join(shipped, 'metrics.jsonl'), readFileSync(join(dir, 'a', 'metrics.jsonl'), 'utf8').split('\n')[0] + '\n');
    const b = await train('b', { seed: 1, steps: 2, resumeFrom: shipped });
    assert.ok(b.lines.some((l) => l === `sft: continuing from ${shipped} (no checkpoint in ${join(dir, 'b')} yet)`), b.lines.join('\n'));
    assert.deepEqual(losses(b.metrics), losses(a.metrics), 'step 1 from the shipped metrics, step 2 trained again the same');
  });

  it('starts from the weights of a model folder with a fresh optimizer at step 0, and says so', { timeout: 240_000 }, async () => {
    const weights = join(dir, 'weights');
    mkdirSync(weights);
    for (const f of ['config.json', 'model.safetensors']) copyFileSync(join(dir, 'a', 'checkpoints', 'step-00000002', f), join(weights, f));
    const c = await train('c', { seed: 1, steps: 1, resumeFrom: weights });
    assert.ok(c.lines.some((l) => l.startsWith(`sft: starting from the weights of ${weights} (sft.resumeFrom holds no trainer.json: a fresh optimizer, from step 0`)), c.lines.join('\n'));
    // The same as a run whose policy starts from that folder.
    const d = await train('d', { steps: 1, checkpoint: weights });
    assert.deepEqual(c.metrics.map((m) => m.step), [1]);
    assert.deepEqual(losses(c.metrics), losses(d.metrics));
    // Once the stage has a checkpoint of its own, a re-run continues that one.
    const again = await train('c', { seed: 1, steps: 1, resumeFrom: weights });
    assert.ok(!again.lines.some((l) => l.includes('starting from the weights')), again.lines.join('\n'));

    const empty = join(dir, 'empty');
    mkdirSync(empty);
    await assert.rejects(train('e', { steps: 1, resumeFrom: empty }), /sft\.resumeFrom .*empty is not an SFT checkpoint \(no trainer\.json\) nor a model folder/);
  });
});
