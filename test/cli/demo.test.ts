import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { checkpointDirName } from '../../src/rl/checkpoint-dirs.ts';
import { parseRunFile } from '../../src/recipes/train-setup.ts';
import { DEFAULT_BASE, pairedGain } from '../../src/cli/demo.ts';

const run = promisify(execFile);

type Json = Record<string, unknown>;
const jsonl = (path: string): Json[] => readFileSync(path, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Json);

describe('longrun demo --quick', () => {
  it('runs the pipeline end to end, writes its files, and prints the numbers of its metrics files', { timeout: 180_000 }, async () => {
    const out = mkdtempSync(join(tmpdir(), 'longrun-demo-'));
    try {
      const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'demo', '--quick', '--seed', '3', '--out', out], { maxBuffer: 16 << 20 });
      const lines = stdout.split('\n');

      // The run file is a valid `longrun train` config over the files the data stage wrote.
      const runFile = parseYaml(readFileSync(join(out, 'run.yaml'), 'utf8')) as Json;
      const { run: parsed, trainer } = parseRunFile(runFile);
      assert.equal(parsed.sft, undefined);
      assert.equal(parsed.task, 'retail-synth');
      assert.equal(trainer.trainer.seed, 3);
      for (const f of ['data/prepare.json', 'data/train/tasks.json', 'data/validation/tasks.json', 'grpo/metrics.jsonl', 'grpo/episodes.jsonl', 'grpo/latest', 'summary.json']) {
        assert.ok(existsSync(join(out, f)), `missing ${f}`);
      }
      assert.ok(!existsSync(join(out, 'sft')), 'no SFT stage: GRPO starts from the shipped base');
      const latest = readFileSync(join(out, 'grpo', 'latest'), 'utf8').trim();
      assert.ok(existsSync(join(out, 'grpo', checkpointDirName(Number(latest)), 'policy', 'model')), 'GRPO checkpoint of the last step');
      // The policy is the shipped base, with its own tokenizer.
      const policy = runFile.policy as Json;
      assert.equal(policy.checkpoint, DEFAULT_BASE);
      assert.equal(policy.tokenizer, join(DEFAULT_BASE, 'tokenizer.json'));

      // Train and validation splits live on different worlds, and are cancellation tasks.
      const train = JSON.parse(readFileSync(join(out, 'data/train/synth.json'), 'utf8')) as { worldSeed: number };
      const val = JSON.parse(readFileSync(join(out, 'data/validation/synth.json'), 'utf8')) as { worldSeed: number };
      assert.notEqual(train.worldSeed, val.worldSeed);

      // Metrics: validation before and after GRPO, one train line per step.
      const metrics = jsonl(join(out, 'grpo/metrics.jsonl'));
      const vals = metrics.filter((m) => m.kind === 'val');
      const steps = metrics.filter((m) => m.kind === 'train');
      assert.equal(vals[0].step, 0);
      assert.equal(vals.at(-1)!.step, steps.length);
      assert.ok(steps.length >= 1);
      const episodes = jsonl(join(out, 'grpo/episodes.jsonl'));

      // The summary file and the printed table agree with the metrics files.
      const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8')) as {
        before: { step: number; reward: number; success: number }; after: { step: number; reward: number; success: number };
        grpo: { step: number; reward: number }[]; gain: { mean: number; se: number; tasks: number };
      };
      assert.equal(summary.before.reward, vals[0]['val/reward_mean']);
      assert.equal(summary.after.reward, vals.at(-1)!['val/reward_mean']);
      assert.equal(summary.after.success, vals.at(-1)!['val/success']);
      assert.deepEqual(summary.grpo.map((g) => g.reward), steps.map((m) => m['reward/mean']));
      assert.deepEqual(summary.gain, pairedGain(episodes, 0, steps.length));

      const row = (label: string) => {
        const l = lines.find((x) => x.startsWith(label));
        assert.ok(l, `table row '${label}' printed`);
        return l.slice(label.length).trim().split(/\s+/).map(Number);
      };
      const f3 = (x: unknown) => Number((x as number).toFixed(3));
      const [bStep, bEpisodes, bReward, bSe, bSuccess] = row('base (before GRPO)');
      const [aStep, aEpisodes, aReward, aSe, aSuccess] = row('after GRPO');
      assert.deepEqual([bStep, bReward, bSe, bSuccess], [0, f3(vals[0]['val/reward_mean']), f3(vals[0]['val/reward_se']), f3(vals[0]['val/success'])]);
      assert.deepEqual([aStep, aReward, aSe, aSuccess], [steps.length, f3(vals.at(-1)!['val/reward_mean']), f3(vals.at(-1)!['val/reward_se']), f3(vals.at(-1)!['val/success'])]);
      assert.ok(typeof vals[0]['val/reward_se'] === 'number' && vals[0]['val/reward_se'] >= 0, 'validation writes the standard error of its mean reward');
      const valTasks = JSON.parse(readFileSync(join(out, 'data/validation/tasks.json'), 'utf8')) as unknown[];
      assert.deepEqual([bEpisodes, aEpisodes], [valTasks.length, valTasks.length], 'one validation sample a task in --quick');
      const gainLine = lines.find((l) => l.startsWith('paired gain'));
      assert.ok(gainLine?.includes(`${valTasks.length} tasks`) && gainLine.includes(Math.abs(summary.gain.mean).toFixed(3)), gainLine);
      assert.ok(lines.some((l) => /^demo done in \d+(\.\d)? s$/.test(l)));
    } finally {
      rmSync(out, { recursive: true, force: true });
    }
  });
});

describe('pairedGain', () => {
  const ep = (step: number, taskId: string, reward: number) => ({ kind: 'val', step, taskId, reward });
  it('pairs the per-task means of two validations and gives the standard error of their differences', () => {
    const episodes = [
      ep(0, 'a', 0), ep(0, 'a', 1), ep(0, 'b', 0), ep(0, 'b', 0), ep(0, 'c', 1), ep(0, 'c', 1),
      ep(3, 'a', 1), ep(3, 'a', 1), ep(3, 'b', 1), ep(3, 'b', 0), ep(3, 'c', 1), ep(3, 'c', 1),
      { kind: 'train', step: 3, taskId: 'a', reward: 0 },
    ];
    // Differences: a 0.5, b 0.5, c 0 → mean 1/3, sample sd √(1/12), se √(1/12)/√3 = 1/6.
    const g = pairedGain(episodes, 0, 3);
    assert.equal(g.tasks, 3);
    assert.ok(Math.abs(g.mean - 1 / 3) < 1e-12);
    assert.ok(Math.abs(g.se - 1 / 6) < 1e-12);
  });
  it('refuses validations with no task in common', () => {
    assert.throws(() => pairedGain([ep(0, 'a', 1), ep(2, 'b', 1)], 0, 2), /no validation task has episodes at both step 0 and step 2/);
  });
});
