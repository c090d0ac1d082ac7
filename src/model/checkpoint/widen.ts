/**
 * Widening a checkpoint's attention without changing what it computes: more key/value heads, more query heads, or
 * both, so a trained model can continue with more attention capacity instead of being pretrained again.
 *
 * - **Key/value heads.** With grouped-query attention, query head h reads key/value head floor(h / group). Going from
 *   `Hkv` to `r · Hkv` key/value heads, new head j starts as a copy of old head floor(j / r): each old group's query
 *   heads still read exactly the keys and values they read before, now through r copies that get different gradients
 *   (they serve different query heads) and so drift apart in training. `r = Hq / Hkv` is full multi-head attention.
 * - **Query heads.** The old query heads keep their rows of q_proj, their sink and their columns of o_proj, placed
 *   where they read the copy of their old key/value head; every added query head gets seeded Gaussian q rows (the
 *   config's `initializer_range`), a zero bias and sink, and **zero** o_proj columns, so it adds nothing to the output
 *   until training moves those columns (the zero-initialised residual branch of LoRA's B, or of ReZero).
 *
 * RoPE, the sliding window, the sinks of the old heads and every other tensor are untouched, so the widened model's
 * logits equal the original's up to float rounding (test/model/widen.test.ts).
 */
import { validateConfig, type GptOssConfig } from '../config.ts';
import { layerPrefix } from '../params.ts';
import { mulberry32 } from '../../engine/random.ts';
import { CheckpointError } from './errors.ts';
import type { LoadedCheckpoint } from './hf.ts';

export interface WidenOptions {
  /** Key/value heads of the result: a multiple of the checkpoint's, dividing `queryHeads`. Default: unchanged. */
  kvHeads?: number;
  /** Query heads of the result: at least the checkpoint's. Default: unchanged. */
  queryHeads?: number;
  /** Seed of the added query heads' q rows. */
  seed?: number;
}

export interface Widened {
  config: GptOssConfig;
  params: LoadedCheckpoint['params'];
  /** For each query head of the result: the old query head it continues, or -1 for an added head. */
  queryFrom: number[];
  /** For each key/value head of the result: the old key/value head it copies. */
  kvFrom: number[];
}

function positiveInt(name: string, v: number): number {
  if (!Number.isInteger(v) || v < 1) throw new CheckpointError('BAD_ARGUMENT', `${name} must be a positive integer, got ${v}`);
  return v;
}

/** Seeded standard normal draws (Box–Muller). */
function normal(seed: number): () => number {
  const u = mulberry32(seed);
  return () => Math.sqrt(-2 * Math.log(1 - u())) * Math.cos(2 * Math.PI * u());
}

/**
 * Where each head of the result comes from. Old group g's key/value head becomes heads g·r … g·r + r − 1; its `gOld`
 * query heads are spread evenly over the r·gNew query slots those heads serve, the other slots are added heads.
 */
export function widenedHeadMap(hq: number, hkv: number, newHq: number, newHkv: number): { queryFrom: number[]; kvFrom: number[] } {
  if (newHkv % hkv !== 0) throw new CheckpointError('BAD_ARGUMENT', `kvHeads ${newHkv} must be a multiple of the checkpoint's ${hkv} key/value heads`);
  if (newHq < hq) throw new CheckpointError('BAD_ARGUMENT', `queryHeads ${newHq} must be at least the checkpoint's ${hq} (heads are added, never removed)`);
  if (newHq % newHkv !== 0) throw new CheckpointError('BAD_ARGUMENT', `queryHeads ${newHq} must be divisible by kvHeads ${newHkv}`);
  // newHq is a multiple of newHkv, itself a multiple of hkv, so each old group has a whole number of query slots
  const r = newHkv / hkv, gOld = hq / hkv, slots = newHq / hkv;
  const kvFrom = Array.from({ length: newHkv }, (_, j) => Math.floor(j / r));
  const queryFrom = new Array<number>(newHq).fill(-1);
  for (let g = 0; g < hkv; g++) {
    for (let k = 0; k < gOld; k++) queryFrom[g * slots + Math.floor((k * slots) / gOld)] = g * gOld + k;
  }
  return { queryFrom, kvFrom };
}

/** The checkpoint with more attention heads and the same function (see the file comment). */
export function widenAttention(ckpt: Pick<LoadedCheckpoint, 'config' | 'params'>, options: WidenOptions): Widened {
  const c = ckpt.config;
  const hq = c.num_attention_heads, hkv = c.num_key_value_heads, d = c.head_dim, C = c.hidden_size;
  const newHq = positiveInt('queryHeads', options.queryHeads ?? hq);
  const newHkv = positiveInt('kvHeads', options.kvHeads ?? hkv);
  const seed = options.seed ?? 0;
  if (!Number.isInteger(seed)) throw new CheckpointError('BAD_ARGUMENT', `seed must be an integer, got ${seed}`);
  const { queryFrom, kvFrom } = widenedHeadMap(hq, hkv, newHq, newHkv);
  let config: GptOssConfig;
  try {
    config = validateConfig({ ...c, num_attention_heads: newHq, num_key_value_heads: newHkv });
  } catch (error) {
    throw new CheckpointError('BAD_ARGUMENT', `the widened config is invalid: ${(error as Error).message}`);
  }
  for (let i = 0; i < c.num_hidden_layers; i++) {
    for (const t of ['q_proj.weight', 'k_proj.weight', 'v_proj.weight', 'o_proj.weight', 'sinks']) {
      const name = `${layerPrefix(i)}.self_attn.${t}`;
      if (!ckpt.params.has(name)) throw new CheckpointError('MISSING_TENSOR', `checkpoint has no tensor '${name}'`);
    }
  }
  const gauss = normal(seed);
  const std = c.initializer_range;
  const out: LoadedCheckpoint['params'] = new Map();
  for (const [name, p] of ckpt.params) {
    const m = /^model\.layers\.(\d+)\.self_attn\.(q_proj|k_proj|v_proj|o_proj)\.(weight|bias)$|^model\.layers\.(\d+)\.self_attn\.sinks$/.exec(name);
    if (!m) {
      out.set(name, p);
      continue;
    }
    const proj = m[2] ?? 'sinks', part = m[3] ?? 'sinks';
    let shape: number[], data: Float32Array;
    if (proj === 'q_proj') {
      // Rows h·d … h·d + d − 1 belong to query head h (weight rows of C columns, or bias entries).
      const w = part === 'weight' ? C : 1;
      shape = part === 'weight' ? [newHq * d, C] : [newHq * d];
      data = new Float32Array(newHq * d * w);
      queryFrom.forEach((from, h) => {
        if (from >= 0) data.set(p.data.subarray(from * d * w, (from + 1) * d * w), h * d * w);
        else if (part === 'weight') for (let i = h * d * w; i < (h + 1) * d * w; i++) data[i] = std * gauss();
      });
    } else if (proj === 'k_proj' || proj === 'v_proj') {
      const w = part === 'weight' ? C : 1;
      shape = part === 'weight' ? [newHkv * d, C] : [newHkv * d];
      data = new Float32Array(newHkv * d * w);
      kvFrom.forEach((from, j) => data.set(p.data.subarray(from * d * w, (from + 1) * d * w), j * d * w));
    } else if (proj === 'o_proj') {
      if (part === 'bias') {
        out.set(name, p);
        continue;
      }
      // [C, Hq·d]: columns h·d … h·d + d − 1 read query head h's output; an added head's stay zero.
      shape = [C, newHq * d];
      data = new Float32Array(C * newHq * d);
      for (let row = 0; row < C; row++) {
        queryFrom.forEach((from, h) => {
          if (from >= 0) data.set(p.data.subarray(row * hq * d + from * d, row * hq * d + (from + 1) * d), row * newHq * d + h * d);
        });
      }
    } else {
      shape = [newHq];
      data = Float32Array.from(queryFrom, (from) => (from >= 0 ? p.data[from] : 0));
    }
    out.set(name, { ...p, shape, data });
  }
  return { config, params: out, queryFrom, kvFrom };
}
