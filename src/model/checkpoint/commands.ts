/** The work behind `longrun model …` (the CLI file only parses arguments and prints). */
import { copyFileSync, existsSync, mkdirSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadBpeModel } from '../../llm/bpe-model.ts';
import { presetConfig } from '../config.ts';
import { GptOssModel } from '../model.ts';
import { countParams } from '../params.ts';
import { CheckpointError } from './errors.ts';
import { exportGguf } from './gguf-export.ts';
import { loadCheckpoint, saveCheckpoint, type StoredFloat } from './hf.ts';
import { loadModel, saveModel } from './model-io.ts';
import { widenAttention } from './widen.ts';

export interface InitCommandOptions {
  preset: string;
  seed: number;
  out: string;
  dtype?: StoredFloat;
  mxfp4?: boolean;
}

/** Random init (the model's seeded normal(0, initializer_range)), written as an HF checkpoint. */
export function initCommand(o: InitCommandOptions): { dir: string; files: string[]; params: number } {
  if (!Number.isSafeInteger(o.seed)) throw new CheckpointError('BAD_ARGUMENT', `--seed must be an integer, got ${o.seed}`);
  const config = presetConfig(o.preset);
  const model = new GptOssModel(config, { seed: o.seed, grads: false });
  try {
    const { files } = saveModel(o.out, model, { dtype: o.dtype, mxfp4Experts: o.mxfp4 });
    return { dir: o.out, files, params: countParams(config).total };
  } finally {
    model.dispose();
  }
}

export interface ExportCommandOptions {
  format: 'gguf' | 'safetensors';
  out: string;
  /** gguf: F32 or F16 matrices; safetensors: F32, BF16 or F16. */
  dtype?: StoredFloat;
  mxfp4?: boolean;
  /** A longrun BPE tokenizer JSON file whose vocabulary goes into the GGUF file. */
  tokenizer?: string;
  name?: string;
  /** gguf: force `tokenizer.ggml.pre` (see GgufTokenizerOptions.pre). */
  ggufPre?: string;
  /** gguf: write a `rope_scaling.truncate: false` config that llama.cpp will run with truncated YaRN dims. */
  allowYarnTruncate?: boolean;
}

/** Re-encodes a checkpoint: to GGUF (a file) or to an HF safetensors checkpoint directory (other dtype / MXFP4). */
export function exportCommand(dir: string, o: ExportCommandOptions): { out: string; bytes: number; warnings: string[] } {
  const loaded = loadCheckpoint(dir);
  if (o.format === 'gguf') {
    if (o.dtype === 'BF16') throw new CheckpointError('BAD_ARGUMENT', 'GGUF export writes F32 or F16 matrices; --dtype bf16 is for safetensors');
    if (o.mxfp4) throw new CheckpointError('BAD_ARGUMENT', '--mxfp4 applies to safetensors export only');
    if (o.ggufPre !== undefined && o.tokenizer === undefined) throw new CheckpointError('BAD_ARGUMENT', '--gguf-pre names the pre-tokenizer of the embedded vocabulary; give --tokenizer too');
    const tokenizer = o.tokenizer === undefined ? undefined : loadBpeModel(o.tokenizer);
    const { warnings } = exportGguf(o.out, loaded.config, loaded.params, {
      type: o.dtype ?? 'F32', tokenizer, name: o.name, tokenizerOptions: { pre: o.ggufPre }, allowYarnTruncate: o.allowYarnTruncate,
    });
    return { out: o.out, bytes: statSync(o.out).size, warnings };
  }
  if (o.ggufPre !== undefined || o.allowYarnTruncate) throw new CheckpointError('BAD_ARGUMENT', '--gguf-pre and --allow-yarn-truncate apply to GGUF export only');
  if (o.format !== 'safetensors') throw new CheckpointError('BAD_ARGUMENT', `unknown export format '${String(o.format)}' (use gguf or safetensors)`);
  if (o.tokenizer !== undefined) throw new CheckpointError('BAD_ARGUMENT', '--tokenizer applies to GGUF export only');
  if (existsSync(o.out) && !statSync(o.out).isDirectory()) throw new CheckpointError('BAD_ARGUMENT', `${o.out} exists and is not a directory; safetensors export writes a checkpoint directory`);
  const { files } = saveCheckpoint(o.out, loaded.config, loaded.params, { dtype: o.dtype, mxfp4Experts: o.mxfp4 });
  return { out: o.out, bytes: files.reduce((n, f) => n + statSync(`${o.out}/${f}`).size, 0), warnings: [] };
}

/** Parses "1,2,3" into token ids. */
export function parseTokenList(text: string): number[] {
  const parts = text.split(',').map((s) => s.trim()).filter((s) => s.length > 0);
  if (parts.length === 0) throw new CheckpointError('BAD_ARGUMENT', '--tokens needs at least one token id, e.g. --tokens 1,2,3');
  return parts.map((p) => {
    if (!/^\d+$/.test(p)) throw new CheckpointError('BAD_ARGUMENT', `--tokens: '${p}' is not a non-negative integer token id`);
    return Number(p);
  });
}

/** The full-vocabulary log-softmax at every position of `tokens` ([T][V]). */
export function logprobsCommand(dir: string, tokens: readonly number[]): number[][] {
  const model = loadModel(dir);
  try {
    const V = model.config.vocab_size;
    const bad = tokens.find((t) => t >= V);
    if (bad !== undefined) throw new CheckpointError('BAD_ARGUMENT', `token id ${bad} is outside the vocabulary (vocab_size ${V})`);
    const result = model.logprobs({ tokens }, { fullLogprobs: true });
    const full = result.fullLogprobs!;
    try {
      const data = full.data();
      return Array.from({ length: tokens.length }, (_, i) => Array.from(data.subarray(i * V, (i + 1) * V)));
    } finally {
      full.dispose();
    }
  } finally {
    model.dispose();
  }
}

export interface WidenCommandOptions {
  out: string;
  kvHeads?: number;
  queryHeads?: number;
  seed?: number;
}

/**
 * `longrun model widen`: the checkpoint with more attention heads and the same function (widen.ts), written to `out`
 * with the folder's tokenizer.json and longrun.json beside it (the prompts do not change), never its optimizer state.
 */
export function widenCommand(dir: string, o: WidenCommandOptions): { out: string; params: number; paramsBefore: number; files: string[]; copied: string[] } {
  const resolvedIn = resolve(dir), resolvedOut = resolve(o.out);
  if (resolvedIn === resolvedOut) throw new CheckpointError('BAD_ARGUMENT', '--out must be another folder than the checkpoint');
  if (existsSync(join(o.out, 'model.safetensors'))) throw new CheckpointError('BAD_ARGUMENT', `${o.out} already holds a model.safetensors; choose an empty folder`);
  const loaded = loadCheckpoint(dir);
  const w = widenAttention(loaded, { kvHeads: o.kvHeads, queryHeads: o.queryHeads, seed: o.seed });
  mkdirSync(o.out, { recursive: true });
  const { files } = saveCheckpoint(o.out, w.config, w.params);
  const copied: string[] = [];
  for (const f of ['tokenizer.json', 'longrun.json']) {
    if (existsSync(join(dir, f))) {
      copyFileSync(join(dir, f), join(o.out, f));
      copied.push(f);
    }
  }
  return { out: o.out, params: countParams(w.config).total, paramsBefore: countParams(loaded.config).total, files, copied };
}
