/**
 * `longrun demo` (`npm start`): the whole pipeline, small, seeded and self-contained, through `longrun train`'s code
 * path (`trainCommand` on a run file written to OUT/run.yaml):
 *   synthetic retail task sets (train / validation over different world seeds) → expert trajectories with the
 *   scripted user → a tiny BPE tokenizer → SFT of a tiny gpt-oss model → a few GRPO steps with the scripted user →
 *   held-out validation (mean@1 reward, success) after SFT (before GRPO) and after GRPO, printed as a table.
 * It prints what happened; nothing here expects the reward to rise in a few minutes.
 *
 * Defaults (the embedded run file below): the easiest slice of the task distribution — difficulty 1, small worlds —
 * the compact policy text and compact tool schemas (src/recipes/retail/prepare.ts; a ~0.9k-token prompt), tiny-1m with 8192
 * positions. A from-scratch model does not learn to copy ids from its context in minutes (docs/results/retail-tiny/),
 * so the held-out reward stays at the floor of tasks that need no write; the demo shows the pipeline and its numbers. `--quick` shrinks every stage for a CI smoke test (< 60 s).
 */
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Command } from 'commander';
import { stringify as toYaml } from 'yaml';
import { readJsonl } from '../rl/report.ts';
import { trainCommand } from './train.ts';

export interface DemoOptions {
  out: string;
  seed: number;
  quick: boolean;
}

/** The run file of the demo (relative paths under `out`). */
export function demoRunFile(o: DemoOptions): Record<string, unknown> {
  const q = o.quick;
  const d = (p: string) => join(o.out, p);
  return {
    task: 'retail-synth',
    prepare: {
      dir: d('data'),
      seed: o.seed,
      tasks: { train: q ? 8 : 32, validation: q ? 4 : 16, difficulty: 1, policy: 'compact', users: q ? 20 : 30, orders: q ? 40 : 60 },
      expert: { trials: 1, seed: o.seed },
      tokenizer: { vocabSize: q ? 1024 : 2048, format: 'harmony' },
    },
    taskOptions: { dataDir: d('data/train'), valDir: d('data/validation'), maxSteps: 200, tools: 'compact' },
    policy: {
      type: 'gpt-oss', preset: 'tiny-1m', modelConfig: { max_position_embeddings: 8192 }, tokenizer: d('data/tokenizer.json'), format: 'harmony',
      lr: 1e-4, seed: o.seed,
    },
    engine: { type: 'in-process', batching: 'step', maxBatchSize: 16 },
    sft: {
      data: d('data/expert.jsonl'),
      outDir: d('sft'),
      config: { seed: o.seed, seqLen: 7168, microBatchTokens: 7168, rowsPerStep: 2, steps: q ? 3 : 80, lr: 3e-3, warmupSteps: q ? 0 : 5, checkpointEvery: 0 },
    },
    grpo: {
      data: { trainBatchSize: 2 },
      rollout: { n: q ? 2 : 4, temperature: 1, maxTurns: q ? 3 : 8, maxResponseTokens: q ? 512 : 2048, maxTokensPerTurn: q ? 32 : 96, concurrency: 16 },
      actor: { ppoMaxTokenLenPerMicro: 16384, clipRatioLow: 0.2, clipRatioHigh: 0.28, useKlLoss: true, klLossCoef: 0.001, klLossType: 'low_var_kl' },
      algorithm: { advEstimator: 'grpo', rolloutCorrection: { bypassMode: true } },
      trainer: {
        totalSteps: q ? 1 : 4, seed: o.seed, testFreq: q ? 1 : 4, valN: 1, valTemperature: 1, saveFreq: q ? 1 : 4,
        checkpointDir: d('grpo'), metricsFile: d('grpo/metrics.jsonl'), episodesFile: d('grpo/episodes.jsonl'), resume: false,
      },
    },
  };
}

export interface DemoValidation {
  step: number;
  reward: number;
  /** Standard error of `reward` over the validation tasks (metrics `val/reward_se`). */
  rewardSe: number;
  success: number;
  episodes: number;
}

export interface DemoSummary {
  seed: number;
  quick: boolean;
  wallSeconds: number;
  sft: { steps: number; firstLoss: number | null; finalLoss: number | null };
  /** Per GRPO step: train reward and success, and the share of groups whose rewards were all equal (zero advantage, no gradient). */
  grpo: { step: number; reward: number; success: number; zeroAdvGroups: number }[];
  /** Validation after SFT, before the first GRPO step. */
  before: DemoValidation;
  /** Validation after the last GRPO step. */
  after: DemoValidation;
}

type Json = Record<string, unknown>;

const f3 = (x: number) => x.toFixed(3);

/** The result table, from the summary (which is read back from the metrics files). */
export function formatDemoTable(s: DemoSummary): string[] {
  const rows = [
    ['', 'GRPO step', 'val episodes', 'val mean@1 reward', 'std. error', 'val success'],
    ['after SFT (before GRPO)', String(s.before.step), String(s.before.episodes), f3(s.before.reward), f3(s.before.rewardSe), f3(s.before.success)],
    ['after GRPO', String(s.after.step), String(s.after.episodes), f3(s.after.reward), f3(s.after.rewardSe), f3(s.after.success)],
  ];
  const widths = rows[0].map((_, c) => Math.max(...rows.map((r) => r[c].length)));
  const line = (r: string[]) => r.map((cell, c) => (c === 0 ? cell.padEnd(widths[c]) : cell.padStart(widths[c]))).join('  ');
  return [line(rows[0]), widths.map((w) => '-'.repeat(w)).join('  '), line(rows[1]), line(rows[2])];
}

export async function runDemo(o: DemoOptions, print: (line: string) => void = console.log): Promise<DemoSummary> {
  const t0 = performance.now();
  const stamp = () => `[${((performance.now() - t0) / 1000).toFixed(1).padStart(6)}s]`;
  const say = (l: string) => print(`${stamp()} ${l}`);
  // A fresh run every time: the demo owns these paths under OUT.
  for (const p of ['data', 'sft', 'grpo', 'run.yaml', 'summary.json']) rmSync(join(o.out, p), { recursive: true, force: true });
  mkdirSync(o.out, { recursive: true });
  const runFile = join(o.out, 'run.yaml');
  writeFileSync(runFile, `# written by \`longrun demo${o.quick ? ' --quick' : ''} --seed ${o.seed}\`; run it again with \`longrun train --config ${runFile}\`\n${toYaml(demoRunFile(o))}`);
  say(`demo${o.quick ? ' (quick)' : ''}: seed ${o.seed}, writing to ${o.out}; run file ${runFile}`);
  say('pipeline: tasks → expert trajectories → BPE → SFT → validation → GRPO → validation');
  await trainCommand({ config: runFile }, say);

  const sftLines = readJsonl(join(o.out, 'sft', 'metrics.jsonl')).filter((m) => m.type === 'train');
  const metrics = readJsonl(join(o.out, 'grpo', 'metrics.jsonl'));
  const vals = metrics.filter((m) => m.kind === 'val');
  const train = metrics.filter((m) => m.kind === 'train');
  if (vals.length < 2) throw new Error(`demo: expected validations before and after GRPO in ${join(o.out, 'grpo', 'metrics.jsonl')}, found ${vals.length}`);
  const data = JSON.parse(readFileSync(join(o.out, 'data', 'prepare.json'), 'utf8')) as { tasks: { validation: number } };
  const valOf = (m: Json): DemoValidation => ({ step: m.step as number, reward: m['val/reward_mean'] as number, rewardSe: m['val/reward_se'] as number, success: m['val/success'] as number, episodes: data.tasks.validation });
  const summary: DemoSummary = {
    seed: o.seed,
    quick: o.quick,
    wallSeconds: (performance.now() - t0) / 1000,
    sft: { steps: sftLines.length, firstLoss: (sftLines[0]?.loss as number | undefined) ?? null, finalLoss: (sftLines.at(-1)?.loss as number | undefined) ?? null },
    grpo: train.map((m) => ({ step: m.step as number, reward: m['reward/mean'] as number, success: m['success/mean'] as number, zeroAdvGroups: m['adv/zero_groups'] as number })),
    before: valOf(vals[0]),
    after: valOf(vals.at(-1)!),
  };
  writeFileSync(join(o.out, 'summary.json'), JSON.stringify(summary, null, 2) + '\n');
  print('');
  print(`SFT: ${summary.sft.steps} steps, loss ${summary.sft.firstLoss?.toFixed(3) ?? '-'} → ${summary.sft.finalLoss?.toFixed(3) ?? '-'}`);
  print(`GRPO train reward per step: ${summary.grpo.map((g) => `${g.step}: ${f3(g.reward)}`).join(', ')}`);
  print(`GRPO groups with equal rewards (zero advantage, no policy gradient) per step: ${summary.grpo.map((g) => `${g.step}: ${(100 * g.zeroAdvGroups).toFixed(0)}%`).join(', ')}`);
  for (const l of formatDemoTable(summary)) print(l);
  const delta = summary.after.reward - summary.before.reward;
  print(`change in held-out mean@1 reward over ${summary.after.step - summary.before.step} GRPO steps: ${delta >= 0 ? '+' : ''}${f3(delta)} ` +
    `(${summary.before.episodes} validation episodes each; a few steps of a tiny model — measured, not promised)`);
  print(`files: ${join(o.out, 'grpo', 'metrics.jsonl')} (GRPO metrics), ${join(o.out, 'grpo', 'episodes.jsonl')} (GRPO episodes), ` +
    `${join(o.out, 'sft', 'metrics.jsonl')} (SFT metrics), ${join(o.out, 'grpo')}/step-*/ (checkpoints), ${join(o.out, 'summary.json')}`);
  print(`see them in the browser: longrun dashboard ${o.out}`);
  print(`demo done in ${summary.wallSeconds.toFixed(1)} s`);
  if (!existsSync(join(o.out, 'grpo', 'latest'))) throw new Error('demo: no GRPO checkpoint was written');
  return summary;
}

export function register(program: Command): void {
  program
    .command('demo')
    .description('a few-minute, seeded end-to-end run: synthetic retail tasks → expert → BPE → SFT → GRPO → held-out validation')
    .option('--out <dir>', 'output folder', join('runs', 'demo'))
    .option('--seed <n>', 'seed of every stage', '0')
    .option('--quick', 'a smoke-test sized run (< 60 s)')
    .action(async (opts: { out: string; seed: string; quick?: boolean }) => {
      const seed = Number(opts.seed);
      if (!Number.isSafeInteger(seed) || seed < 0) throw new Error(`--seed must be a non-negative integer, got '${opts.seed}'`);
      await runDemo({ out: opts.out, seed, quick: opts.quick ?? false });
    });
}
