/**
 * `longrun train --config FILE`: the optional data stage (src/rl/prepare.ts), copy curriculum (src/rl/copyDrill.ts) and
 * SFT stage (src/rl/sft.ts), then GRPO (src/rl/trainer.ts). The file
 * format is described in src/rl/trainSetup.ts; the GRPO section's keys in src/rl/config.ts.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Command } from 'commander';
import { parse as parseYaml } from 'yaml';
import { GptOssPolicy } from '../rl/modelPolicy.ts';
import { GrpoTrainer } from '../rl/trainer.ts';
import { buildRun, parseRunFile, type BuiltRun, type RunFile } from '../rl/trainSetup.ts';
import type { TrajectoryRecord } from '../rl/sftData.ts';

export interface TrainCommandOptions {
  config: string;
  steps?: string;
  resume?: boolean;
  progress?: boolean;
}

function readRunFile(path: string): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`cannot read config file ${path}: ${(e as Error).message}`, { cause: e });
  }
  try {
    return parseYaml(text);
  } catch (e) {
    throw new Error(`config file ${path} is not valid YAML: ${(e as Error).message}`, { cause: e });
  }
}

/** The run's SFT documents, rendered with the system prompt and tools the rollouts see (when the task provides them). */
export async function sftDocuments(run: RunFile, built: BuiltRun) {
  if (!run.sft) throw new Error('the config has no sft section');
  const { readTrajectoriesJsonl, buildSftDocuments } = await import('../rl/sftData.ts');
  const seqLen = typeof run.sft.config.seqLen === 'number' ? run.sft.config.seqLen : 512;
  const records = readTrajectoriesJsonl(run.sft.data);
  const expert = buildSftDocuments(records, built.deps.format, { maxSeqLen: seqLen, ...built.conversation });
  const docs = [...expert.docs];
  /** What was mixed in after the expert documents, in order: label, documents, tokens. */
  const mix: { label: string; count: number; tokens: number }[] = [];
  const add = (label: string, d: typeof docs) => {
    docs.push(...d);
    mix.push({ label, count: d.length, tokens: d.reduce((a, x) => a + x.tokens.length, 0) });
    return d.length;
  };
  const sft = run.sft;
  const conversations = (r: TrajectoryRecord[]) => buildSftDocuments(r, built.deps.format, { maxSeqLen: seqLen, overflow: 'drop' }).docs;
  const drill = sft.copyDrill
    ? add('copy-drill documents', (await import('../rl/copyDrill.ts')).copyDrillDocuments(built.tokenizer, sft.copyDrill).filter((x) => x.tokens.length <= seqLen)) : 0;
  const identity = sft.identityDrill
    ? add('identity-drill conversations', conversations((await import('../rl/identityDrill.ts')).identityDrillRecords(records, sft.identityDrill))) : 0;
  const address = sft.addressDrill
    ? add('address-drill conversations', conversations((await import('../rl/addressDrill.ts')).addressDrillRecords(records, sft.addressDrill))) : 0;
  const write = sft.writeDrill
    ? add('write-drill conversations', conversations((await import('../rl/addressDrill.ts')).writeDrillRecords(records, sft.writeDrill))) : 0;
  return { ...expert, docs, seqLen, drill, identity, address, write, mix };
}

/** The copy curriculum: drill stages that teach the fresh model to copy ids, before the SFT stage. */
async function runCurriculumStage(run: RunFile, built: BuiltRun, print: (l: string) => void, quiet: boolean): Promise<void> {
  if (!run.curriculum) return;
  if (!built.model) throw new Error('the curriculum stage needs policy.type gpt-oss');
  const { runCopyCurriculum } = await import('../rl/copyDrill.ts');
  print(`curriculum: ${run.curriculum.stages.map((s) => `${s.steps} steps on ${s.ids[0]}–${s.ids[1]} ids`).join(', then ')} → ${run.curriculum.outDir}`);
  await runCopyCurriculum(run.curriculum, { model: built.model, tokenizer: built.tokenizer, padId: built.deps.padId, quiet, log: print });
}

/** The SFT stage: warm-starts the gpt-oss policy from expert trajectories before GRPO. */
async function runSftStage(run: RunFile, built: BuiltRun, print: (l: string) => void, quiet: boolean): Promise<void> {
  if (!run.sft) return;
  if (!built.model) throw new Error('the sft stage needs policy.type gpt-oss');
  const { runSft } = await import('../rl/sft.ts');
  const { docs, stats, seqLen, mix } = await sftDocuments(run, built);
  print(`sft: ${stats.documents} documents from ${stats.records} trajectories, ${stats.tokens} tokens (${stats.lossTokens} trained), longest ${stats.maxLength}, ${stats.truncated} truncated to ${seqLen}` +
    mix.filter((m) => m.count > 0).map((m) => `; plus ${m.count} ${m.label} (${m.tokens} tokens)`).join(''));
  if (docs.length === 0) throw new Error(`sft: no document has an assistant token within seqLen ${seqLen} (shortest prompt ${stats.shortestPrompt} tokens); raise sft.config.seqLen`);
  let every = 0;
  const result = await runSft({ ...run.sft.config, padId: built.deps.padId }, {
    model: built.model, data: docs, outDir: run.sft.outDir, resume: true, quiet,
    onStep: (m) => {
      every ||= Math.max(1, Math.round((run.sft!.config.steps as number | undefined ?? 100) / 10));
      if (m.step % every === 0 || m.step === 1) print(`sft step ${m.step}: loss ${m.loss.toFixed(4)}, lr ${m.lr.toExponential(2)}, ${Math.round(m.tokensPerSec)} tok/s`);
    },
  });
  print(`sft: ${result.steps} steps, final loss ${result.finalLoss?.toFixed(4) ?? 'n/a'}`);
  // GRPO's KL reference is the SFT model.
  if (built.deps.policy instanceof GptOssPolicy) built.deps.policy.resetReferenceToCurrent();
}

export async function trainCommand(opts: TrainCommandOptions, print: (line: string) => void = console.log): Promise<number> {
  const raw = readRunFile(opts.config) as Record<string, unknown>;
  if (raw && typeof raw === 'object' && opts.steps !== undefined) {
    const steps = Number(opts.steps);
    if (!(Number.isInteger(steps) && steps > 0)) throw new Error(`--steps must be a positive integer, got ${opts.steps}`);
    const grpo = (raw.grpo ?? {}) as Record<string, unknown>;
    raw.grpo = { ...grpo, trainer: { ...((grpo.trainer ?? {}) as Record<string, unknown>), totalSteps: steps } };
  }
  const { run, trainer: config } = parseRunFile(raw);
  if (opts.resume === false) config.trainer.resume = false;
  if (opts.progress) config.trainer.progress = true;
  if (run.prepare !== undefined) {
    if (run.task !== 'retail-synth') throw new Error('the prepare section needs task: retail-synth');
    const { prepareRetailData } = await import('../rl/prepare.ts');
    for (const line of (await prepareRetailData(run.prepare, { tools: run.taskOptions.tools })).log) print(line);
  }
  for (const f of [config.trainer.metricsFile, config.trainer.episodesFile, config.trainer.checkpointDir && join(config.trainer.checkpointDir, 'x')]) if (f) mkdirSync(dirname(f), { recursive: true });
  const built = await buildRun(run);
  await runCurriculumStage(run, built, print, !config.trainer.progress);
  await runSftStage(run, built, print, !config.trainer.progress);
  const trainer = new GrpoTrainer({ ...built.deps, config, log: print });
  const { history, validations } = await trainer.fit();
  const last = history.at(-1);
  if (config.trainer.checkpointDir) writeFileSync(join(config.trainer.checkpointDir, 'summary.json'), JSON.stringify({ steps: trainer.step, last, validations }, null, 2));
  print(`done: ${trainer.step} steps${last ? `, last reward ${last['reward/mean'].toFixed(3)}, success ${last['success/mean'].toFixed(3)}` : ''}`);
  return 0;
}

export function register(program: Command): void {
  program
    .command('train')
    .description('train a policy with GRPO (optionally after an SFT stage) from a YAML config')
    .requiredOption('--config <file>', 'run config (YAML): task, policy, engine, optional sft, grpo')
    .option('--steps <n>', 'override grpo.trainer.totalSteps')
    .option('--no-resume', 'start fresh even if the checkpoint directory has a checkpoint')
    .option('--progress', 'show a progress bar')
    .action(async (opts: TrainCommandOptions) => {
      process.exitCode = await trainCommand(opts);
    });
}
