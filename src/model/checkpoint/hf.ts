/**
 * Hugging Face-format gpt-oss checkpoints: a directory with `config.json` and `model.safetensors` (or shards plus
 * `model.safetensors.index.json`), tensor names as in `paramShapes(config)`.
 *
 * Expert weights may be stored plainly (F32/BF16/F16, HF orientation) or as MXFP4 pairs the way the released
 * checkpoints store them: `…experts.gate_up_proj_blocks/_scales` hold the TRANSPOSE of the HF parameter, i.e.
 * gate_up_proj [E, C, 2I] is stored as blocks [E, 2I, C/32, 16] + scales [E, 2I, C/32], and down_proj [E, I, C] as
 * blocks [E, C, I/32, 16] + scales [E, C, I/32]. Loading decodes and transposes back; every tensor comes back F32.
 */
import { mkdirSync } from 'node:fs';
import type { GptOssConfig } from '../config.ts';
import { paramShapes } from '../params.ts';
import { fromFloat32, isFloatDType, toFloat32, type DType } from './dtypes.ts';
import { CheckpointError, type CheckpointProblem } from './errors.ts';
import { readHfConfig, writeHfConfig } from './hf-config.ts';
import { decodeMxfp4, encodeMxfp4, MXFP4_BLOCK, MXFP4_BLOCK_BYTES } from './mxfp4.ts';
import type { TensorToWrite } from './safetensors.ts';
import { openTensorSource, writeCheckpointTensors, type TensorSource } from './sharded.ts';
import { numel, sameShape, shapeString, transposeLast2, type NamedTensor } from './tensors.ts';

/** A parameter as the model holds it: our NamedTensor, or anything with a shape and a float32 `data()` (engine Tensor). */
export type ParamLike = NamedTensor | { readonly shape: readonly number[]; data(): Float32Array };

export type StoredFloat = 'F32' | 'BF16' | 'F16';

export interface SaveOptions {
  /** Element type of the stored tensors (default F32). */
  dtype?: StoredFloat;
  /** Store expert gate_up_proj/down_proj as MXFP4 `_blocks`/`_scales` pairs (lossy unless values are MXFP4-exact). */
  mxfp4Experts?: boolean;
  /** Split into shards of at most this many bytes (one file when everything fits). */
  maxShardBytes?: number;
  metadata?: Record<string, string>;
}

export interface LoadedCheckpoint {
  config: GptOssConfig;
  /** Every parameter as F32, in `paramShapes(config)` order. */
  params: Map<string, NamedTensor & { dtype: 'F32'; data: Float32Array }>;
  /** How each parameter was stored: a dtype, or 'MXFP4'. */
  stored: Map<string, DType | 'MXFP4'>;
  metadata: Record<string, string>;
}

const EXPERT_WEIGHT = /\.mlp\.experts\.(gate_up_proj|down_proj)$/;

export function isExpertWeight(name: string): boolean {
  return EXPERT_WEIGHT.test(name);
}

function float32Of(name: string, p: ParamLike): { shape: number[]; data: Float32Array } {
  if ('dtype' in p) return { shape: [...p.shape], data: toFloat32(p.data, p.dtype) };
  const data = p.data();
  if (!(data instanceof Float32Array)) throw new CheckpointError('DTYPE_MISMATCH', `parameter '${name}': data() must return a Float32Array`);
  return { shape: [...p.shape], data };
}

/** Compares a name → shape map with what the config expects. */
export function checkAgainstConfig(expected: ReadonlyMap<string, number[]>, actual: ReadonlyMap<string, readonly number[]>): CheckpointProblem[] {
  const problems: CheckpointProblem[] = [];
  for (const [name, shape] of expected) {
    const got = actual.get(name);
    if (!got) problems.push({ code: 'MISSING_TENSOR', message: `missing tensor '${name}' (expected shape ${shapeString(shape)})` });
    else if (!sameShape(got, shape)) problems.push({ code: 'SHAPE_MISMATCH', message: `tensor '${name}' has shape ${shapeString(got)}, expected ${shapeString(shape)}` });
  }
  for (const name of actual.keys()) {
    if (!expected.has(name)) problems.push({ code: 'UNEXPECTED_TENSOR', message: `unexpected tensor '${name}' (not a parameter of this config)` });
  }
  return problems;
}

/** Writes `config.json` and the weights into `dir` (created if needed). Returns the weight files written. */
export function saveCheckpoint(dir: string, config: GptOssConfig, params: ReadonlyMap<string, ParamLike>, options: SaveOptions = {}): { files: string[] } {
  const dtype = options.dtype ?? 'F32';
  const expected = paramShapes(config);
  CheckpointError.throwAll('cannot save checkpoint', checkAgainstConfig(expected, new Map([...params].map(([n, p]) => [n, p.shape]))));
  if (options.mxfp4Experts && config.mlp !== 'moe') throw new CheckpointError('BAD_ARGUMENT', 'MXFP4 storage applies to MoE expert tensors; this config is dense');

  const out = new Map<string, TensorToWrite>();
  for (const name of expected.keys()) {
    const p = params.get(name)!;
    if (options.mxfp4Experts && isExpertWeight(name)) {
      const [E, A, B] = expected.get(name)!;
      if (A % MXFP4_BLOCK !== 0) throw new CheckpointError('BAD_MXFP4', `cannot store '${name}' as MXFP4: its input dimension ${A} is not a multiple of 32`);
      // Encode lazily but once: blocks and scales come from the same pass.
      let cached: ReturnType<typeof encodeMxfp4> | null = null;
      const encoded = (): ReturnType<typeof encodeMxfp4> => {
        cached ??= encodeMxfp4(transposeLast2(float32Of(name, p).data, [E, A, B]), [E, B, A]);
        return cached;
      };
      out.set(`${name}_blocks`, { dtype: 'U8', shape: [E, B, A / MXFP4_BLOCK, MXFP4_BLOCK_BYTES], data: () => encoded().blocks });
      out.set(`${name}_scales`, { dtype: 'U8', shape: [E, B, A / MXFP4_BLOCK], data: () => { const s = encoded().scales; cached = null; return s; } });
    } else {
      out.set(name, { dtype, shape: [...p.shape], data: () => fromFloat32(float32Of(name, p).data, dtype) });
    }
  }
  mkdirSync(dir, { recursive: true });
  const metadata = { format: 'pt', ...options.metadata };
  const files = writeCheckpointTensors(dir, out, { maxShardBytes: options.maxShardBytes, metadata });
  writeHfConfig(dir, config, { dtype, mxfp4Experts: options.mxfp4Experts });
  return { files };
}

interface Plan { kind: 'plain' | 'mxfp4'; name: string }

/** Decides, for every stored tensor, which parameter it feeds; collects every mismatch before throwing. */
function planLoad(source: TensorSource, expected: ReadonlyMap<string, number[]>): Plan[] {
  const problems: CheckpointProblem[] = [];
  const plans: Plan[] = [];
  const stored = new Set(source.names());
  const claimed = new Set<string>();
  for (const [name, shape] of expected) {
    const blocksName = `${name}_blocks`, scalesName = `${name}_scales`;
    const hasPlain = stored.has(name), hasBlocks = stored.has(blocksName), hasScales = stored.has(scalesName);
    if (isExpertWeight(name) && (hasBlocks || hasScales)) {
      claimed.add(blocksName).add(scalesName);
      if (hasPlain) { claimed.add(name); problems.push({ code: 'UNEXPECTED_TENSOR', message: `'${name}' is stored both plainly and as MXFP4 blocks/scales` }); continue; }
      if (!hasBlocks || !hasScales) { problems.push({ code: 'MISSING_TENSOR', message: `missing tensor '${hasBlocks ? scalesName : blocksName}' (the other half of an MXFP4 pair)` }); continue; }
      const [E, A, B] = shape;
      const wantBlocks = [E, B, A / MXFP4_BLOCK, MXFP4_BLOCK_BYTES], wantScales = [E, B, A / MXFP4_BLOCK];
      for (const [n, want] of [[blocksName, wantBlocks], [scalesName, wantScales]] as const) {
        const info = source.info(n);
        if (info.dtype !== 'U8') problems.push({ code: 'DTYPE_MISMATCH', message: `tensor '${n}' has dtype ${info.dtype}, MXFP4 ${n.endsWith('_blocks') ? 'blocks' : 'scales'} must be U8` });
        else if (A % MXFP4_BLOCK !== 0 || !sameShape(info.shape, want)) problems.push({ code: 'SHAPE_MISMATCH', message: `tensor '${n}' has shape ${shapeString(info.shape)}, expected ${shapeString(want)} for parameter ${shapeString(shape)}` });
      }
      plans.push({ kind: 'mxfp4', name });
      continue;
    }
    if (!hasPlain) { problems.push({ code: 'MISSING_TENSOR', message: `missing tensor '${name}' (expected shape ${shapeString(shape)})` }); continue; }
    claimed.add(name);
    const info = source.info(name);
    if (!isFloatDType(info.dtype)) problems.push({ code: 'DTYPE_MISMATCH', message: `tensor '${name}' has dtype ${info.dtype}, expected a float type (F32, BF16, F16)` });
    else if (!sameShape(info.shape, shape)) problems.push({ code: 'SHAPE_MISMATCH', message: `tensor '${name}' has shape ${shapeString(info.shape)}, expected ${shapeString(shape)}` });
    plans.push({ kind: 'plain', name });
  }
  for (const name of stored) {
    if (!claimed.has(name)) problems.push({ code: 'UNEXPECTED_TENSOR', message: `unexpected tensor '${name}' (not a parameter of this config)` });
  }
  CheckpointError.throwAll('checkpoint does not match its config', problems);
  return plans;
}

/** Reads and validates a checkpoint directory; throws a CheckpointError naming every problem found. */
export function loadCheckpoint(dir: string): LoadedCheckpoint {
  const config = readHfConfig(dir);
  const expected = paramShapes(config);
  const source = openTensorSource(dir);
  try {
    const plans = planLoad(source, expected);
    const params: LoadedCheckpoint['params'] = new Map();
    const stored: LoadedCheckpoint['stored'] = new Map();
    for (const { kind, name } of plans) {
      const shape = expected.get(name)!;
      if (kind === 'plain') {
        const t = source.read(name);
        params.set(name, { dtype: 'F32', shape, data: toFloat32(t.data, t.dtype) });
        stored.set(name, t.dtype);
      } else {
        const blocks = source.read(`${name}_blocks`), scales = source.read(`${name}_scales`);
        const decoded = decodeMxfp4({ blocks: blocks.data as Uint8Array, blocksShape: blocks.shape, scales: scales.data as Uint8Array, scalesShape: scales.shape });
        params.set(name, { dtype: 'F32', shape, data: transposeLast2(decoded.data, decoded.shape) });
        stored.set(name, 'MXFP4');
      }
      if (params.get(name)!.data.length !== numel(shape)) throw new CheckpointError('SHAPE_MISMATCH', `tensor '${name}' decoded to the wrong size`);
    }
    return { config, params, stored, metadata: { ...source.metadata } };
  } finally {
    source.close();
  }
}
