/**
 * `Batch`: the container that flows between rollout and training stages (verl's DataProto,
 * https://verl.readthedocs.io/en/latest/api/data.html).
 *
 * Three parts: `tensors` (named typed arrays with a shape whose first dimension is the batch), `objects`
 * (per-sample values of any kind, one array entry per row) and `meta` (batch-level values). The one invariant is
 * that every tensor and object column has the same number of rows; every operation keeps it and throws a clear
 * error where it would break.
 *
 * Padding layout (docs/grpo.md, "The batch"): prompts are LEFT-padded to width P, responses RIGHT-padded to width R,
 * `input_ids = [prompts | responses]`, `attention_mask` is 1 on every real token, `position_ids =
 * max(cumsum(attention_mask) − 1, 0)`, `response_mask` is 1 only on tokens the policy generated.
 */
import { isDeepStrictEqual } from 'node:util';

export type TypedArray = Float32Array | Float64Array | Int32Array | Uint8Array;

export interface BatchTensor {
  data: TypedArray;
  /** `shape[0]` is the batch size; the data is row-major. */
  shape: readonly number[];
}

export interface BatchInit {
  tensors?: Record<string, BatchTensor>;
  objects?: Record<string, readonly unknown[]>;
  meta?: Record<string, unknown>;
}

type TypedArrayCtor = { new (n: number): TypedArray };

function ctorOf(a: TypedArray): TypedArrayCtor {
  return a.constructor as TypedArrayCtor;
}

function rowWidth(shape: readonly number[]): number {
  let w = 1;
  for (let i = 1; i < shape.length; i++) w *= shape[i];
  return w;
}

export function tensor(data: TypedArray, shape: readonly number[]): BatchTensor {
  if (shape.length === 0) throw new Error('a batch tensor needs at least one dimension (the batch)');
  const n = shape.reduce((a, b) => a * b, 1);
  if (data.length !== n) throw new Error(`tensor data has ${data.length} values but shape [${shape.join(', ')}] needs ${n}`);
  return { data, shape: [...shape] };
}

export class Batch {
  readonly tensors: Record<string, BatchTensor>;
  readonly objects: Record<string, unknown[]>;
  meta: Record<string, unknown>;

  constructor(init: BatchInit = {}) {
    this.tensors = {};
    this.objects = {};
    this.meta = { ...(init.meta ?? {}) };
    for (const [k, t] of Object.entries(init.tensors ?? {})) this.tensors[k] = tensor(t.data, t.shape);
    for (const [k, o] of Object.entries(init.objects ?? {})) {
      if (!Array.isArray(o)) throw new Error(`batch object column "${k}" must be an array`);
      this.objects[k] = [...o];
    }
    this.checkConsistent();
  }

  /** Number of rows; 0 for an empty batch. */
  get size(): number {
    const t = Object.values(this.tensors)[0];
    if (t) return t.shape[0];
    const o = Object.values(this.objects)[0];
    return o ? o.length : 0;
  }

  get tensorKeys(): string[] {
    return Object.keys(this.tensors);
  }

  get objectKeys(): string[] {
    return Object.keys(this.objects);
  }

  private checkConsistent(): void {
    const sizes: string[] = [];
    for (const [k, t] of Object.entries(this.tensors)) sizes.push(`tensor "${k}": ${t.shape[0]}`);
    for (const [k, o] of Object.entries(this.objects)) sizes.push(`object "${k}": ${o.length}`);
    const n = this.size;
    const bad = [...Object.values(this.tensors).map((t) => t.shape[0]), ...Object.values(this.objects).map((o) => o.length)].some((s) => s !== n);
    if (bad) throw new Error(`batch columns disagree on the batch size (${sizes.join(', ')})`);
  }

  tensor(name: string): BatchTensor {
    const t = this.tensors[name];
    if (!t) throw new Error(`batch has no tensor "${name}" (it has: ${this.tensorKeys.join(', ') || 'none'})`);
    return t;
  }

  hasTensor(name: string): boolean {
    return name in this.tensors;
  }

  object<T = unknown>(name: string): T[] {
    const o = this.objects[name];
    if (!o) throw new Error(`batch has no object column "${name}" (it has: ${this.objectKeys.join(', ') || 'none'})`);
    return o as T[];
  }

  /** The batch size implied by every column except `name` (undefined when there is no other column). */
  private sizeWithout(name: string): number | undefined {
    for (const [k, t] of Object.entries(this.tensors)) if (k !== name) return t.shape[0];
    for (const [k, o] of Object.entries(this.objects)) if (k !== name) return o.length;
    return undefined;
  }

  /** Adds or replaces a tensor column (its batch size must match the other columns). */
  setTensor(name: string, data: TypedArray, shape: readonly number[]): this {
    const t = tensor(data, shape);
    const n = this.sizeWithout(name);
    if (n !== undefined && t.shape[0] !== n) throw new Error(`tensor "${name}" has batch size ${t.shape[0]}, the batch has ${n}`);
    this.tensors[name] = t;
    return this;
  }

  setObject(name: string, values: readonly unknown[]): this {
    const n = this.sizeWithout(name);
    if (n !== undefined && values.length !== n) throw new Error(`object column "${name}" has ${values.length} rows, the batch has ${n}`);
    this.objects[name] = [...values];
    return this;
  }

  /**
   * Merges `other` into this batch in place (verl's union): batch sizes must match; a key present on both sides must
   * hold equal values (tensors exactly, objects by NaN-aware deep equality, meta by deep equality).
   */
  union(other: Batch): this {
    if (this.tensorKeys.length + this.objectKeys.length > 0 && other.tensorKeys.length + other.objectKeys.length > 0 && other.size !== this.size) {
      throw new Error(`union: batch sizes differ (${this.size} vs ${other.size})`);
    }
    for (const [k, t] of Object.entries(other.tensors)) {
      const mine = this.tensors[k];
      if (mine && !(isDeepStrictEqual(mine.shape, t.shape) && mine.data.length === t.data.length && mine.data.every((v, i) => Object.is(v, t.data[i]) || v === t.data[i]))) {
        throw new Error(`union: tensor "${k}" differs between the two batches`);
      }
    }
    for (const [k, o] of Object.entries(other.objects)) {
      if (k in this.objects && !isDeepStrictEqual(this.objects[k], o)) throw new Error(`union: object column "${k}" differs between the two batches`);
    }
    for (const [k, v] of Object.entries(other.meta)) {
      if (k in this.meta && !isDeepStrictEqual(this.meta[k], v)) throw new Error(`union: meta "${k}" differs (${JSON.stringify(this.meta[k])} vs ${JSON.stringify(v)})`);
    }
    for (const [k, t] of Object.entries(other.tensors)) this.tensors[k] = t;
    for (const [k, o] of Object.entries(other.objects)) this.objects[k] = [...o];
    Object.assign(this.meta, other.meta);
    this.checkConsistent();
    return this;
  }

  /** Rows at `indices` (any order, repeats allowed) of the chosen columns (all when omitted). */
  select(options: { tensors?: readonly string[]; objects?: readonly string[]; indices?: readonly number[] } = {}): Batch {
    const n = this.size;
    const idx = options.indices ?? Array.from({ length: n }, (_, i) => i);
    for (const i of idx) if (!Number.isInteger(i) || i < 0 || i >= n) throw new RangeError(`select: row index ${i} is out of range for a batch of ${n}`);
    const tKeys = options.tensors ?? this.tensorKeys;
    const oKeys = options.objects ?? this.objectKeys;
    const tensors: Record<string, BatchTensor> = {};
    for (const k of tKeys) {
      const t = this.tensor(k);
      const w = rowWidth(t.shape);
      const data = new (ctorOf(t.data))(idx.length * w);
      idx.forEach((src, dst) => data.set(t.data.subarray(src * w, (src + 1) * w), dst * w));
      tensors[k] = { data, shape: [idx.length, ...t.shape.slice(1)] };
    }
    const objects: Record<string, unknown[]> = {};
    for (const k of oKeys) {
      const o = this.object(k);
      objects[k] = idx.map((i) => o[i]);
    }
    return new Batch({ tensors, objects, meta: { ...this.meta } });
  }

  /** Rows `[start, end)`. */
  slice(start: number, end = this.size): Batch {
    if (!(Number.isInteger(start) && Number.isInteger(end) && start >= 0 && end <= this.size && start <= end)) {
      throw new RangeError(`slice(${start}, ${end}) is out of range for a batch of ${this.size}`);
    }
    return this.select({ indices: Array.from({ length: end - start }, (_, i) => start + i) });
  }

  /** Removes the named columns and returns them as a new batch (sharing meta). */
  pop(options: { tensors?: readonly string[]; objects?: readonly string[] }): Batch {
    const out = this.select({ tensors: options.tensors ?? [], objects: options.objects ?? [] });
    for (const k of options.tensors ?? []) delete this.tensors[k];
    for (const k of options.objects ?? []) delete this.objects[k];
    return out;
  }

  /** `k` equal chunks; throws unless the size is divisible by k (pad first with `padToDivisor`). */
  chunk(k: number): Batch[] {
    if (!(Number.isInteger(k) && k >= 1)) throw new RangeError(`chunk: k must be a positive integer, got ${k}`);
    if (this.size % k !== 0) throw new Error(`chunk: batch size ${this.size} is not divisible by ${k}; pad it with padToDivisor(${k}) first`);
    const s = this.size / k;
    return Array.from({ length: k }, (_, i) => this.slice(i * s, (i + 1) * s));
  }

  /** Consecutive slices of `size` rows (the last may be smaller): mini- and micro-batches. */
  split(size: number): Batch[] {
    if (!(Number.isInteger(size) && size >= 1)) throw new RangeError(`split: size must be a positive integer, got ${size}`);
    const out: Batch[] = [];
    for (let i = 0; i < this.size; i += size) out.push(this.slice(i, Math.min(i + size, this.size)));
    return out;
  }

  /**
   * Repeats rows n times. `interleave: true` (default, what GRPO uses) gives `[a,a,b,b]`; false tiles `[a,b,a,b]`.
   */
  repeat(n: number, options: { interleave?: boolean } = {}): Batch {
    if (!(Number.isInteger(n) && n >= 1)) throw new RangeError(`repeat: n must be a positive integer, got ${n}`);
    const size = this.size;
    const interleave = options.interleave ?? true;
    const idx: number[] = [];
    if (interleave) for (let i = 0; i < size; i++) for (let j = 0; j < n; j++) idx.push(i);
    else for (let j = 0; j < n; j++) for (let i = 0; i < size; i++) idx.push(i);
    return this.select({ indices: idx });
  }

  /** Reorders rows in place: row i becomes the old row `perm[i]`. */
  reorder(perm: readonly number[]): this {
    if (perm.length !== this.size || new Set(perm).size !== perm.length) throw new Error(`reorder: expected a permutation of ${this.size} rows`);
    const r = this.select({ indices: perm });
    Object.assign(this.tensors, r.tensors);
    Object.assign(this.objects, r.objects);
    return this;
  }

  /**
   * Pads by re-appending leading rows (cycling) so the size divides `k`; returns the padded batch and how many rows
   * were added (give that to `unpad`).
   */
  padToDivisor(k: number): { batch: Batch; padSize: number } {
    if (!(Number.isInteger(k) && k >= 1)) throw new RangeError(`padToDivisor: k must be a positive integer, got ${k}`);
    if (this.size === 0) throw new Error('padToDivisor: cannot pad an empty batch');
    const padSize = (k - (this.size % k)) % k;
    const idx = Array.from({ length: this.size + padSize }, (_, i) => i % this.size);
    return { batch: this.select({ indices: idx }), padSize };
  }

  unpad(padSize: number): Batch {
    return this.slice(0, this.size - padSize);
  }

  /**
   * Concatenates along the batch dimension. Every batch must have the same columns and row shapes. Meta is merged
   * (a conflicting key throws), except `metrics`, whose entries are gathered into lists.
   */
  static concat(batches: readonly Batch[]): Batch {
    if (batches.length === 0) throw new Error('concat: no batches given');
    const first = batches[0];
    const tKeys = first.tensorKeys.slice().sort();
    const oKeys = first.objectKeys.slice().sort();
    for (const [i, b] of batches.entries()) {
      if (!isDeepStrictEqual(b.tensorKeys.slice().sort(), tKeys) || !isDeepStrictEqual(b.objectKeys.slice().sort(), oKeys)) {
        throw new Error(`concat: batch ${i} has columns [${[...b.tensorKeys, ...b.objectKeys].join(', ')}], batch 0 has [${[...tKeys, ...oKeys].join(', ')}]`);
      }
    }
    const tensors: Record<string, BatchTensor> = {};
    for (const k of tKeys) {
      const parts = batches.map((b) => b.tensor(k));
      const inner = parts[0].shape.slice(1);
      for (const p of parts) {
        if (!isDeepStrictEqual(p.shape.slice(1), inner)) throw new Error(`concat: tensor "${k}" has row shape [${p.shape.slice(1).join(', ')}] in one batch and [${inner.join(', ')}] in another`);
        if (p.data.constructor !== parts[0].data.constructor) throw new Error(`concat: tensor "${k}" has different element types`);
      }
      const rows = parts.reduce((a, p) => a + p.shape[0], 0);
      const data = new (ctorOf(parts[0].data))(rows * rowWidth(parts[0].shape));
      let off = 0;
      for (const p of parts) {
        data.set(p.data, off);
        off += p.data.length;
      }
      tensors[k] = { data, shape: [rows, ...inner] };
    }
    const objects: Record<string, unknown[]> = {};
    for (const k of oKeys) objects[k] = batches.flatMap((b) => b.object(k));
    const meta: Record<string, unknown> = {};
    const metrics: Record<string, unknown[]> = {};
    for (const b of batches) {
      for (const [k, v] of Object.entries(b.meta)) {
        if (k === 'metrics' && typeof v === 'object' && v !== null) {
          for (const [mk, mv] of Object.entries(v)) (metrics[mk] ??= []).push(...(Array.isArray(mv) ? mv : [mv]));
          continue;
        }
        if (k in meta && !isDeepStrictEqual(meta[k], v)) throw new Error(`concat: meta "${k}" conflicts (${JSON.stringify(meta[k])} vs ${JSON.stringify(v)})`);
        meta[k] = v;
      }
    }
    if (Object.keys(metrics).length > 0) meta.metrics = metrics;
    return new Batch({ tensors, objects, meta });
  }
}

/** One row of a 2-D tensor as a view. */
export function row(t: BatchTensor, i: number): TypedArray {
  if (t.shape.length !== 2) throw new Error(`row: expected a 2-D tensor, got shape [${t.shape.join(', ')}]`);
  const w = t.shape[1];
  return t.data.subarray(i * w, (i + 1) * w);
}

/** Left-pads id sequences to `width` (prompts). Throws if one is longer. Returns ids and the matching mask. */
export function leftPad(seqs: readonly (readonly number[])[], width: number, padId: number): { ids: Int32Array; mask: Int32Array } {
  const ids = new Int32Array(seqs.length * width).fill(padId);
  const mask = new Int32Array(seqs.length * width);
  seqs.forEach((s, i) => {
    if (s.length > width) throw new Error(`leftPad: sequence ${i} has ${s.length} tokens, more than the width ${width}`);
    const off = i * width + width - s.length;
    for (let j = 0; j < s.length; j++) {
      ids[off + j] = s[j];
      mask[off + j] = 1;
    }
  });
  return { ids, mask };
}

/** Right-pads sequences to `width` (responses, masks, log-probs). */
export function rightPad<A extends Int32Array | Float32Array>(ctor: { new (n: number): A }, seqs: readonly (readonly number[])[], width: number, padValue: number): A {
  const out = new ctor(seqs.length * width).fill(padValue) as A;
  seqs.forEach((s, i) => {
    if (s.length > width) throw new Error(`rightPad: sequence ${i} has ${s.length} values, more than the width ${width}`);
    for (let j = 0; j < s.length; j++) out[i * width + j] = s[j];
  });
  return out;
}

/** `position_ids = max(cumsum(attention_mask) − 1, 0)` per row. */
export function positionIdsFromMask(mask: ArrayLike<number>, rows: number, cols: number): Int32Array {
  const out = new Int32Array(rows * cols);
  for (let i = 0; i < rows; i++) {
    let c = 0;
    for (let t = 0; t < cols; t++) {
      c += mask[i * cols + t];
      out[i * cols + t] = Math.max(c - 1, 0);
    }
  }
  return out;
}

/** Rounds `n` up to a multiple of `k`. */
export function padToMultiple(n: number, k: number): number {
  if (!(Number.isInteger(k) && k >= 1)) throw new RangeError(`padToMultiple: k must be a positive integer, got ${k}`);
  return Math.ceil(n / k) * k;
}

/**
 * Sets the `uid` column to one id per row, `${prefix}-${i}` — call it on the prompt batch BEFORE `repeat(n)`, so the n
 * samples of a prompt share their uid (the GRPO group key, docs/grpo.md "The batch").
 */
export function assignUids(batch: Batch, prefix: string): Batch {
  if (batch.size === 0) throw new Error('assignUids: the batch is empty');
  return batch.setObject('uid', Array.from({ length: batch.size }, (_, i) => `${prefix}-${i}`));
}
