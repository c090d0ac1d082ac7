/**
 * `longrun sft`: supervised warm start of a tiny gpt-oss model on expert trajectories (from `longrun rollout
 * --agent expert`). Trains (or loads) the BPE tokenizer, renders the trajectories with loss on the assistant tokens,
 * packs them and runs `runSft`. OUT gets metrics.jsonl, checkpoints/, tokenizer.json and, when done, model/.
 */
import { existsSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import type { Command } from 'commander';
import { readTaskSet } from '../domains/retail/synth/taskset.ts';
import { BpeTokenizer, createChatFormat, type ToolSpec } from '../llm/index.ts';
import { GptOssModel, presetConfig, PRESETS } from '../model/index.ts';
import { runSft, parseSftConfig, type SftConfigInput } from '../rl/sft.ts';
import { buildSftDocuments, readTrajectoriesJsonl, trainSftTokenizer } from '../rl/sft-data.ts';
import { DONE_TOOL_SCHEMA } from '../tooluse/env.ts';
import { agentSystemPrompt } from '../tooluse/openai.ts';
import { readConfigFile } from '../recipes/config-file.ts';

interface SftOpts {
  data: string;
  preset: string;
  out: string;
  config?: string;
  tasks?: string;
  format: string;
  tokenizer?: string;
  vocabSize?: number;
  steps?: number;
  epochs?: number;
  seqLen?: number;
  microBatchTokens?: number;
  rowsPerStep?: number;
  lr?: number;
  warmup?: number;
  minLrRatio?: number;
  weightDecay?: number;
  gradClip?: number;
  evalFraction?: number;
  evalEvery?: number;
  checkpointEvery?: number;
  seed?: number;
  modelSeed: number;
  overflow: string;
  minReward?: number;
  trainOnGreeting?: boolean;
  resume?: boolean;
  progress: boolean;
}

function num(name: string, integer: boolean) {
  return (v: string): number => {
    const n = Number(v);
    if (v.trim() === '' || !Number.isFinite(n) || (integer && !Number.isSafeInteger(n))) throw new Error(`--${name} must be ${integer ? 'an integer' : 'a number'}, got '${v}'`);
    return n;
  };
}

function readSftSettings(path: string): Record<string, unknown> {
  const value = readConfigFile(path, '--config');
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new Error(`--config ${path}: expected an object of SFT settings`);
  return value as Record<string, unknown>;
}

export function register(program: Command): void {
  program
    .command('sft')
    .description('supervised fine-tuning (warm start) of a tiny model on expert trajectories (JSONL from `longrun rollout`)')
    .requiredOption('--data <file>', 'trajectories JSONL')
    .requiredOption('--out <dir>', 'output folder (metrics.jsonl, checkpoints/, tokenizer.json, model/)')
    .option('--preset <name>', `model preset: ${Object.keys(PRESETS).filter((k) => k.startsWith('tiny')).join(' | ')}`, 'tiny-1m')
    .option('--config <file>', 'SFT settings (JSON or YAML, keys as in SftConfigSchema); flags override it')
    .option('--tasks <dir>', 'task-set folder: adds its agent system prompt (with the policy) and tool schemas, as the rollout sees them')
    .option('--format <name>', 'chat format: harmony | hermes', 'harmony')
    .option('--tokenizer <file>', 'use this tokenizer.json instead of training one')
    .option('--vocab-size <n>', 'train the BPE tokenizer to this size (default: the preset vocabulary)', num('vocab-size', true))
    .option('--steps <n>', 'total optimizer steps (default: epochs × steps per epoch)', num('steps', true))
    .option('--epochs <n>', 'epochs when --steps is not given', num('epochs', true))
    .option('--seq-len <n>', 'packed row length = longest document', num('seq-len', true))
    .option('--micro-batch-tokens <n>', 'token budget of a micro-batch (rows × width)', num('micro-batch-tokens', true))
    .option('--rows-per-step <n>', 'packed rows per optimizer step', num('rows-per-step', true))
    .option('--lr <x>', 'peak learning rate', num('lr', false))
    .option('--warmup <n>', 'warmup steps', num('warmup', true))
    .option('--min-lr-ratio <x>', 'final lr / peak lr', num('min-lr-ratio', false))
    .option('--weight-decay <x>', 'AdamW weight decay', num('weight-decay', false))
    .option('--grad-clip <x>', 'max global grad norm (0 = off)', num('grad-clip', false))
    .option('--eval-fraction <x>', 'held-out share of the trajectories', num('eval-fraction', false))
    .option('--eval-every <n>', 'evaluate every N steps (0 = at the end)', num('eval-every', true))
    .option('--checkpoint-every <n>', 'checkpoint every N steps (0 = at the end)', num('checkpoint-every', true))
    .option('--seed <n>', 'data order / eval split seed', num('seed', true))
    .option('--model-seed <n>', 'model initialisation seed', num('model-seed', true), 0)
    .option('--overflow <mode>', 'trajectories longer than --seq-len: truncate (keep the head) | drop', 'truncate')
    .option('--min-reward <x>', 'train only on trajectories with at least this reward', num('min-reward', false))
    .option('--train-on-greeting', 'also train on the fixed greeting before the first user message')
    .option('--resume', 'continue from the newest checkpoint in --out')
    .option('--no-progress', 'no progress bar')
    .action(async (o: SftOpts) => {
      if (o.overflow !== 'truncate' && o.overflow !== 'drop') throw new Error(`--overflow must be truncate or drop, got '${o.overflow}'`);
      if (o.format !== 'harmony' && o.format !== 'hermes') throw new Error(`--format must be harmony or hermes, got '${o.format}'`);
      const flags: SftConfigInput = {
        ...(o.steps !== undefined ? { steps: o.steps } : {}), ...(o.epochs !== undefined ? { epochs: o.epochs } : {}),
        ...(o.seqLen !== undefined ? { seqLen: o.seqLen } : {}), ...(o.microBatchTokens !== undefined ? { microBatchTokens: o.microBatchTokens } : {}),
        ...(o.rowsPerStep !== undefined ? { rowsPerStep: o.rowsPerStep } : {}), ...(o.lr !== undefined ? { lr: o.lr } : {}),
        ...(o.warmup !== undefined ? { warmupSteps: o.warmup } : {}), ...(o.minLrRatio !== undefined ? { minLrRatio: o.minLrRatio } : {}),
        ...(o.weightDecay !== undefined ? { weightDecay: o.weightDecay } : {}), ...(o.gradClip !== undefined ? { gradClip: o.gradClip } : {}),
        ...(o.evalFraction !== undefined ? { evalFraction: o.evalFraction } : {}), ...(o.evalEvery !== undefined ? { evalEvery: o.evalEvery } : {}),
        ...(o.checkpointEvery !== undefined ? { checkpointEvery: o.checkpointEvery } : {}), ...(o.seed !== undefined ? { seed: o.seed } : {}),
      };
      const config = parseSftConfig({ ...(o.config ? readSftSettings(o.config) : {}), ...flags });

      let systemPrompt: string | undefined;
      let tools: ToolSpec[] | undefined;
      if (o.tasks) {
        const set = readTaskSet(basename(o.tasks) === 'tasks.json' ? dirname(o.tasks) : o.tasks);
        systemPrompt = agentSystemPrompt(set.domain.policy);
        tools = [...set.domain.tools.map((t) => t.schema as ToolSpec), DONE_TOOL_SCHEMA as ToolSpec];
      }
      const records = readTrajectoriesJsonl(o.data);
      const presetVocab = presetConfig(o.preset).vocab_size;
      const saved = join(o.out, 'tokenizer.json');
      let tokenizer: BpeTokenizer;
      if (o.tokenizer) tokenizer = BpeTokenizer.load(o.tokenizer);
      else if (o.resume && existsSync(saved)) tokenizer = BpeTokenizer.load(saved);
      else tokenizer = trainSftTokenizer(records, { vocabSize: o.vocabSize ?? presetVocab, format: o.format, systemPrompt, tools });
      const format = createChatFormat(o.format, tokenizer);
      const { docs, stats } = buildSftDocuments(records, format, {
        maxSeqLen: config.seqLen, overflow: o.overflow, systemPrompt, tools, trainOnGreeting: o.trainOnGreeting ?? false,
        ...(o.minReward !== undefined ? { minReward: o.minReward } : {}),
      });
      console.log(`${stats.records} trajectories → ${stats.documents} documents, ${stats.tokens} tokens (${stats.lossTokens} assistant), ` +
        `${stats.truncated} truncated, ${stats.droppedTooLong} dropped as too long, ${stats.droppedLowReward} below --min-reward, ` +
        `${stats.droppedNoLossTokens} without assistant tokens; longest ${stats.maxLength} tokens; tokenizer ${tokenizer.name}`);
      if (docs.length === 0) {
        throw new Error(`no training documents: ${stats.droppedNoLossTokens > 0 ? `the shortest prompt is ${stats.shortestPrompt} tokens, so no assistant token falls inside --seq-len ${config.seqLen}; raise --seq-len, use a larger --vocab-size, or leave out --tasks (its policy and tool schemas make the prompt long)` : 'every trajectory was filtered out'}`);
      }
      const model = new GptOssModel(presetConfig(o.preset, { vocab_size: tokenizer.vocabSize }), { seed: o.modelSeed });
      const ac = new AbortController();
      const onSignal = () => {
        console.error('\nlongrun sft: interrupted, writing a checkpoint after this step (Ctrl-C again to kill)');
        ac.abort();
        process.off('SIGINT', onSignal);
      };
      process.on('SIGINT', onSignal);
      try {
        const r = await runSft(config, { model, tokenizer, data: docs, outDir: o.out, resume: o.resume ?? false, quiet: !o.progress, signal: ac.signal });
        const evalText = r.finalEvalLoss !== null ? `, eval loss ${r.finalEvalLoss.toFixed(4)} (${r.evalDocuments} documents)` : '';
        console.log(`${r.resumedFromStep !== null ? `resumed at step ${r.resumedFromStep}; ` : ''}steps ${r.steps}/${r.totalSteps} (${r.stepsPerEpoch} per epoch, ` +
          `${r.rows} packed rows), loss ${r.finalLoss?.toFixed(4) ?? '-'}${evalText}, ${r.tokensSeen} tokens seen, ${r.skippedSteps} skipped steps`);
        if (r.modelDir) console.log(`model written to ${r.modelDir}, tokenizer to ${saved}`);
        else console.log(`stopped early; continue with --resume (checkpoint ${r.checkpointDir})`);
      } finally {
        process.off('SIGINT', onSignal);
        model.dispose();
      }
    });
}
