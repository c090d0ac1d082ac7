/**
 * Ablation: continue SFT instead of running GRPO, for the same wall-clock time, then validate exactly as the GRPO
 * run does (same held-out tasks, same episode seeds, same sampling).
 *
 *   npm run ablate:continued-sft -- --config runs/retail-tiny.yaml --from runs/retail-tiny/sft/checkpoints/step-00000150 \
 *     --seconds 2400 --as-step 16 --out runs/retail-tiny/ablate-sft
 *
 * --from: the SFT checkpoint GRPO started from (its weights and optimizer state are resumed, so the SFT run simply
 * goes on with the same data order and learning-rate schedule). --seconds: the SFT time budget (GRPO's training
 * time, validations excluded). --as-step: the GRPO step the result is compared with (for the plot).
 * Writes OUT/compare.jsonl ({ step, reward } before and after, for `longrun plot --compare`), OUT/validation.json
 * (every validation metric) and OUT/episodes.jsonl; SFT metrics and checkpoints under OUT as `longrun sft` does.
 */
import { cpSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parseArgs } from 'node:util';
import { GrpoTrainer } from '../src/rl/trainer.ts';
import { loadGrpoRun } from '../src/recipes/load-run.ts';
import { sftDocuments } from '../src/recipes/sft-documents.ts';
import { runSft } from '../src/rl/sft.ts';

const { values: a } = parseArgs({
  options: { config: { type: 'string' }, from: { type: 'string' }, seconds: { type: 'string' }, 'as-step': { type: 'string' }, out: { type: 'string' }, 'skip-baseline': { type: 'boolean' } },
});
if (!a.config || !a.from || !a.seconds || !a.out) throw new Error('usage: --config RUN.yaml --from SFT_CHECKPOINT --seconds N --out DIR [--as-step S] [--skip-baseline]');
const seconds = Number(a.seconds);
if (!(seconds > 0)) throw new Error(`--seconds must be positive, got ${a.seconds}`);
const asStepArg = a['as-step'] !== undefined ? Number(a['as-step']) : undefined;
if (asStepArg !== undefined && !(Number.isInteger(asStepArg) && asStepArg >= 0)) throw new Error(`--as-step must be a non-negative integer, got ${a['as-step']}`);
if (!existsSync(join(a.from, 'trainer.json'))) throw new Error(`${a.from} is not an SFT checkpoint (no trainer.json)`);
const out = a.out;
mkdirSync(out, { recursive: true });

const { run, trainer: config, built } = await loadGrpoRun(a.config, {
  checkpoint: a.from,
  keepSft: true,
  edit: (raw) => {
    const grpo = (raw.grpo ?? {}) as Record<string, Record<string, unknown> | undefined>;
    raw.grpo = { ...grpo, trainer: { ...grpo.trainer, totalSteps: 1, checkpointDir: undefined, metricsFile: undefined, episodesFile: join(out, 'episodes.jsonl') } };
  },
});
if (!run.sft) throw new Error('the config has no sft section');
const validator = new GrpoTrainer({ ...built.deps, config });

const validate = async (label: string) => {
  const t0 = performance.now();
  const m = await validator.validate();
  console.log(`${label}: held-out mean@1 ${m['val/reward_mean'].toFixed(3)} (${((performance.now() - t0) / 1000).toFixed(0)} s)`);
  return m;
};
const before = a['skip-baseline'] ? undefined : await validate('before (the SFT checkpoint)');

// Continue the SFT run from the checkpoint: copy it into OUT/checkpoints and resume there.
const ckptRoot = join(out, 'checkpoints');
mkdirSync(ckptRoot, { recursive: true });
cpSync(a.from, join(ckptRoot, basename(a.from)), { recursive: true });
const { docs } = await sftDocuments(run, built);
const controller = new AbortController();
const timer = setTimeout(() => controller.abort(), seconds * 1000);
const t0 = performance.now();
const result = await runSft({ ...run.sft.config, steps: 1_000_000, padId: built.deps.padId }, {
  model: built.model!, data: docs, outDir: out, resume: true, quiet: true, signal: controller.signal,
  onStep: (m) => { if (m.step % 10 === 0) console.log(`sft step ${m.step}: loss ${m.loss.toFixed(4)}`); },
});
clearTimeout(timer);
const sftSeconds = (performance.now() - t0) / 1000;
console.log(`continued SFT: ${result.history.length} steps (to step ${result.steps}) in ${sftSeconds.toFixed(0)} s, final loss ${result.finalLoss?.toFixed(4)}`);
const after = await validate('after continued SFT');
const asStep = asStepArg ?? result.history.length;
const lines = [...(before ? [{ step: 0, reward: before['val/reward_mean'] }] : []), { step: asStep, reward: after['val/reward_mean'] }];
writeFileSync(join(out, 'compare.jsonl'), lines.map((l) => JSON.stringify(l)).join('\n') + '\n');
writeFileSync(join(out, 'validation.json'), JSON.stringify({ from: a.from, seconds, sftSeconds, sftSteps: result.history.length, finalStep: result.steps, before, after }, null, 2) + '\n');
