/**
 * `longrun train --config FILE`: the optional data stage (src/recipes/retail/prepare.ts), copy curriculum (src/recipes/retail/copy-drill.ts) and
 * SFT stage (src/rl/sft.ts), then GRPO (src/rl/trainer.ts). The file
 * format is described in src/recipes/train-setup.ts; the GRPO section's keys in src/rl/config.ts.
 */
import { copyFileSync, existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Command } from 'commander';
import { loadCheckpoint, loadWeightsInto } from '../model/checkpoint/index.ts';
import type { GptOssModel } from '../model/model.ts';
import type { TrainingBackend } from '../rl/backend.ts';
import { createCritic } from '../rl/critic.ts';
import { GptOssPolicy } from '../rl/model-policy.ts';
import { SFT_BACKEND_STATE_DIR } from '../rl/sft-backend.ts';
import { listCheckpoints } from '../rl/sft-checkpoint.ts';
import { GrpoTrainer } from '../rl/trainer.ts';
import type { TrainerConfig } from '../rl/config.ts';
import { applyOverrides, readConfigFile } from '../recipes/config-file.ts';
import { sftDocuments } from '../recipes/sft-documents.ts';
import { retailTaskOptions } from '../recipes/retail/run-section.ts';
import { buildRun, parseStagesRunFile, sftResumeKind, type BuiltRun, type RunFile } from '../recipes/train-setup.ts';

export interface TrainCommandOptions {
  config: string;
  steps?: string;
  maxWallSeconds?: string;
  /** `key.path=value` overrides of the run file (applyOverrides), applied before --steps and --max-wall-seconds. */
  set?: string[];
  resume?: boolean;
  progress?: boolean;
}

/** The copy curriculum: drill stages that teach the fresh model to copy ids, before the SFT stage. */
async function runCurriculumStage(run: RunFile, built: BuiltRun, print: (l: string) => void, quiet: boolean): Promise<void> {
  const curriculum = run.retail?.curriculum;
  if (!curriculum) return;
  if (!built.model) throw new Error('the curriculum stage needs policy.type gpt-oss');
  if (run.sft && (listCheckpoints(join(run.sft.outDir, 'checkpoints')).length > 0 || (run.sft.resumeFrom !== undefined && sftResumeKind(run.sft.resumeFrom) !== null))) {
    // The SFT checkpoint holds the weights the curriculum led to (and more): nothing to redo, even if the curriculum's own folders are gone.
    print(`curriculum: skipped, the sft stage continues from a checkpoint (${run.sft.outDir} or sft.resumeFrom)`);
    return;
  }
  const { runCopyCurriculum } = await import('../recipes/retail/copy-drill.ts');
  print(`curriculum: ${curriculum.stages.map((s) => `${s.steps} steps on ${s.ids[0]}–${s.ids[1]} ids`).join(', then ')} → ${curriculum.outDir}`);
  await runCopyCurriculum(curriculum, { model: built.model, tokenizer: built.tokenizer, padId: built.deps.padId, quiet, log: print });
}

/** Where an SFT stage starts: `resume` as runSft takes it, and a model folder whose weights to load first. */
interface SftStart {
  resume: true | string;
  weights?: string;
}

/**
 * Where an SFT stage continues: its newest checkpoint; else `sft.resumeFrom` when that folder exists: an SFT
 * checkpoint (weights, optimizer and step; its metrics file comes along, so the run's history stays whole), or a model
 * folder (weights only: a fresh optimizer from step 0); else a fresh start.
 */
function sftStart(sft: NonNullable<RunFile['sft']>, print: (l: string) => void): SftStart {
  if (listCheckpoints(join(sft.outDir, 'checkpoints')).length > 0 || sft.resumeFrom === undefined) return { resume: true };
  if (!existsSync(sft.resumeFrom)) {
    print(`sft: ${sft.resumeFrom} (sft.resumeFrom) does not exist; starting fresh`);
    return { resume: true };
  }
  const kind = sftResumeKind(sft.resumeFrom);
  if (kind === null) throw new Error(`sft.resumeFrom ${sft.resumeFrom} is not an SFT checkpoint (no trainer.json) nor a model folder (config.json and .safetensors weights)`);
  if (kind === 'weights') {
    print(`sft: starting from the weights of ${sft.resumeFrom} (sft.resumeFrom holds no trainer.json: a fresh optimizer, from step 0; no checkpoint in ${sft.outDir} yet)`);
    return { resume: true, weights: sft.resumeFrom };
  }
  mkdirSync(sft.outDir, { recursive: true });
  const metrics = join(sft.resumeFrom, 'metrics.jsonl');
  if (existsSync(metrics) && !existsSync(join(sft.outDir, 'metrics.jsonl'))) copyFileSync(metrics, join(sft.outDir, 'metrics.jsonl'));
  print(`sft: continuing from ${sft.resumeFrom} (no checkpoint in ${sft.outDir} yet)`);
  return { resume: sft.resumeFrom };
}

/** `sftStart` with its weights loaded into the model the stage trains (weights only are for a model in process). */
function startSft(sft: NonNullable<RunFile['sft']>, built: BuiltRun, print: (l: string) => void): true | string {
  const start = sftStart(sft, print);
  if (start.weights !== undefined) {
    if (!built.model) throw new Error(`sft.resumeFrom ${start.weights} holds weights only (no trainer.json): a run on a training backend continues from an SFT checkpoint written through it`);
    loadWeightsInto(built.model, loadCheckpoint(start.weights).params);
  }
  return start.resume;
}

/** Where the SFT stage trains: the run's training backend (`backend:`), else the in-process gpt-oss model. */
function sftTarget(built: BuiltRun, what: string): { model: GptOssModel } | { backend: TrainingBackend; vocabSize: number } {
  if (built.backend) return { backend: built.backend, vocabSize: built.tokenizer.vocabSize };
  if (built.model) return { model: built.model };
  throw new Error(`${what} needs policy.type gpt-oss`);
}

/**
 * After the SFT stage: GRPO's KL reference is the SFT model; and GRPO starts with an optimizer of its own, as in
 * process (the policy's AdamW is not SFT's), so on a backend the SFT weights are loaded back without its moments.
 */
async function afterSft(run: RunFile, built: BuiltRun, checkpointDir: string | null): Promise<void> {
  if (built.deps.policy instanceof GptOssPolicy) built.deps.policy.resetReferenceToCurrent();
  if (built.backend && checkpointDir && run.grpo !== undefined) await built.backend.loadState(join(checkpointDir, SFT_BACKEND_STATE_DIR), { optimizer: false });
}

/** A streamed SFT stage: fresh retail conversations every step (src/recipes/retail/stream.ts). */
async function runStreamStage(run: RunFile, built: BuiltRun, print: (l: string) => void, quiet: boolean): Promise<void> {
  const sft = run.sft!;
  const target = sftTarget(built, 'retail.stream');
  if (!built.conversation) throw new Error('retail.stream needs task retail-synth');
  const { runSft, parseSftConfig } = await import('../rl/sft.ts');
  const { RetailStream, heldOutWorldSeeds, parseRetailStream, streamEvalDocuments } = await import('../recipes/retail/stream.ts');
  const config = parseSftConfig({ ...sft.config, padId: built.deps.padId });
  const raw = parseRetailStream(run.retail?.stream);
  const tasks = retailTaskOptions(run);
  const held = heldOutWorldSeeds([tasks.dataDir, tasks.valDir]);
  const spec = { ...raw, excludeWorldSeeds: [...new Set([...raw.excludeWorldSeeds, ...held])].sort((a, b) => a - b) };
  const ctx = { format: built.deps.format, tokenizer: built.tokenizer, conversation: built.conversation, seqLen: config.seqLen, rowsPerStep: config.rowsPerStep };
  const stream = new RetailStream(spec, ctx);
  const evalDocs = await streamEvalDocuments(spec, ctx);
  print(`sft: streaming fresh conversations (seed ${spec.seed}, ${spec.tasksPerWorld} tasks per world, difficulty ${JSON.stringify(spec.difficulty)}` +
    `${spec.expert.mistakeRate > 0 ? `, demonstrator mistake rate ${spec.expert.mistakeRate}` : ''}${spec.copyDrill ? `, copy drill ${spec.copyDrill.share}` : ''}), ` +
    `${config.steps} steps of ${config.rowsPerStep} × ${config.seqLen} tokens; ${held.length} held-out world seeds excluded; eval on ${evalDocs.length} conversations`);
  const every = Math.min(25, Math.max(1, Math.round((config.steps ?? 100) / 50)));
  const result = await runSft(config, {
    ...target, data: { source: stream, eval: evalDocs }, outDir: sft.outDir, resume: startSft(sft, built, print), quiet,
    onStep: (m) => {
      if (m.step % every !== 0 && m.step !== 1) return;
      const st = stream.lastStats;
      const extra = st ? `, ${st.episodes} episodes on ${st.worlds} worlds (expert reward-1 ${st.expertSuccess}/${st.episodes}), kept ${st.kept}/${st.generated} tokens, data ${(m.dataSeconds ?? 0).toFixed(2)} s` : '';
      print(`sft step ${m.step}: loss ${m.loss.toFixed(4)}${m.contextLoss !== undefined ? ` (context ${m.contextLoss.toFixed(4)})` : ''}, lr ${m.lr.toExponential(2)}, ${Math.round(m.tokensPerSec)} tok/s, ${m.tokensSeen} tokens seen${extra}`);
    },
    onEval: (m) => print(`sft eval at step ${m.step}: held-out loss ${m.evalLoss.toFixed(4)} over ${m.evalTokens} tokens`),
  });
  printBudgetStop(result, config.maxWallSeconds, print);
  print(`sft: ${result.steps} steps, ${result.tokensSeen} tokens, final loss ${result.finalLoss?.toFixed(4) ?? 'n/a'}${result.finalEvalLoss !== null ? `, held-out ${result.finalEvalLoss.toFixed(4)}` : ''}`);
  await afterSft(run, built, result.checkpointDir);
}

/** The SFT stage: warm-starts the gpt-oss policy from expert trajectories before GRPO. */
/** The line that says an SFT stage ended on its wall-time budget (`sft.config.maxWallSeconds`). */
function printBudgetStop(result: { stoppedByBudget: boolean; steps: number; trainSeconds: number }, max: number | undefined, print: (l: string) => void): void {
  if (result.stoppedByBudget) print(`sft: stopped at step ${result.steps}: ${result.trainSeconds.toFixed(0)} s of training steps reached sft.config.maxWallSeconds ${max}`);
}

async function runSftStage(run: RunFile, built: BuiltRun, print: (l: string) => void, quiet: boolean): Promise<void> {
  if (!run.sft) return;
  const target = sftTarget(built, 'the sft stage');
  if (run.retail?.stream !== undefined) return runStreamStage(run, built, print, quiet);
  const { runSft } = await import('../rl/sft.ts');
  const { docs, stats, seqLen, mix } = await sftDocuments(run, built);
  print(`sft: ${stats.documents} documents from ${stats.records} trajectories, ${stats.tokens} tokens (${stats.lossTokens} trained), longest ${stats.maxLength}, ${stats.truncated} truncated to ${seqLen}` +
    mix.filter((m) => m.count > 0).map((m) => `; plus ${m.count} ${m.label} (${m.tokens} tokens)`).join(''));
  if (docs.length === 0) throw new Error(`sft: no document has an assistant token within seqLen ${seqLen} (shortest prompt ${stats.shortestPrompt} tokens); raise sft.config.seqLen`);
  let every = 0;
  const resume = startSft(run.sft, built, print);
  const result = await runSft({ ...run.sft.config, padId: built.deps.padId }, {
    ...target, data: docs, outDir: run.sft.outDir, resume, quiet,
    onStep: (m) => {
      every ||= Math.max(1, Math.round((run.sft!.config.steps as number | undefined ?? 100) / 10));
      if (m.step % every === 0 || m.step === 1) print(`sft step ${m.step}: loss ${m.loss.toFixed(4)}, lr ${m.lr.toExponential(2)}, ${Math.round(m.tokensPerSec)} tok/s`);
    },
  });
  printBudgetStop(result, run.sft.config.maxWallSeconds as number | undefined, print);
  print(`sft: ${result.steps} steps, final loss ${result.finalLoss?.toFixed(4) ?? 'n/a'}`);
  await afterSft(run, built, result.checkpointDir);
}

export async function trainCommand(opts: TrainCommandOptions, print: (line: string) => void = console.log): Promise<number> {
  const raw = applyOverrides(readConfigFile(opts.config), opts.set ?? []) as Record<string, unknown>;
  const override = (flag: string, key: string, value: string | undefined): void => {
    if (value === undefined || !raw || typeof raw !== 'object') return;
    const n = Number(value);
    if (!(Number.isInteger(n) && n > 0)) throw new Error(`${flag} must be a positive integer, got ${value}`);
    const grpo = (raw.grpo ?? {}) as Record<string, unknown>;
    raw.grpo = { ...grpo, trainer: { ...((grpo.trainer ?? {}) as Record<string, unknown>), [key]: n } };
  };
  override('--steps', 'totalSteps', opts.steps);
  override('--max-wall-seconds', 'maxWallSeconds', opts.maxWallSeconds);
  const { run, trainer: config } = parseStagesRunFile(raw);
  if (config && opts.resume === false) config.trainer.resume = false;
  if (config && opts.progress) config.trainer.progress = true;
  const quiet = !(opts.progress ?? config?.trainer.progress ?? false);
  if (run.retail?.prepare !== undefined) {
    if (run.task !== 'retail-synth') throw new Error('retail.prepare needs task: retail-synth');
    const { prepareRetailData } = await import('../recipes/retail/prepare.ts');
    for (const line of (await prepareRetailData(run.retail.prepare, { tools: run.retail.tasks.tools })).log) print(line);
  }
  const built = await buildRun(run);
  try {
    return await runStages(run, config, built, print, quiet);
  } finally {
    await built.close?.();
  }
}

async function runStages(run: RunFile, config: TrainerConfig | null, built: BuiltRun, print: (line: string) => void, quiet: boolean): Promise<number> {
  if (run.backend) {
    const b = run.backend;
    print(`backend: the policy trains on ${b.baseUrl ?? process.env.TINKER_BASE_URL ?? 'the hosted Tinker service'} (base model ${b.model}, ${b.lora ? `LoRA rank ${b.lora.rank}` : 'every weight'}); ` +
      `${run.sft ? 'SFT steps are forward_backward (cross_entropy) + optim_step there; ' : ''}rollouts sample there, the actor update is forward_backward + optim_step there` + (run.policy.preset || run.policy.checkpoint ? '; policy.preset/checkpoint are not loaded here' : ''));
  }
  await runCurriculumStage(run, built, print, quiet);
  await runSftStage(run, built, print, quiet);
  if (config === null) {
    print('done: no grpo section, the run ends after its SFT stage');
    return 0;
  }
  // Per-episode records by default (bounded: trainer.episodeTranscripts), beside the metrics; '' turns them off.
  const t = config.trainer;
  if (t.episodesFile === undefined && (t.metricsFile ?? t.checkpointDir) !== undefined) t.episodesFile = join(t.metricsFile ? dirname(t.metricsFile) : t.checkpointDir!, 'episodes.jsonl');
  for (const f of [t.metricsFile, t.episodesFile, t.checkpointDir && join(t.checkpointDir, 'x')]) if (f) mkdirSync(dirname(f), { recursive: true });
  // PPO with a critic (algorithm.advEstimator gae): the value head on the policy, or a separate small model.
  const critic = config.critic && createCritic(config.critic, { policy: built.deps.policy, vocabSize: built.tokenizer.vocabSize, like: built.model?.config });
  const trainer = new GrpoTrainer({ ...built.deps, config, log: print, ...(critic ? { critic } : {}) });
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
    .option('--set <key=value>', 'override a run-file key, e.g. --set policy.modelConfig.sliding_window=32 (dotted path, YAML value; repeatable)', (v: string, prev: string[]) => [...prev, v], [] as string[])
    .option('--max-wall-seconds <s>', 'override grpo.trainer.maxWallSeconds (the GRPO stage\'s training-time budget)')
    .option('--no-resume', 'start fresh even if the checkpoint directory has a checkpoint')
    .option('--progress', 'show a progress bar')
    .action(async (opts: TrainCommandOptions) => {
      process.exitCode = await trainCommand(opts);
    });
}
