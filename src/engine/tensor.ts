/**
 * Float32 tensors, contiguous and row-major. Data lives either in the Wasm memory (`storage: 'wasm'`, the
 * default; kernels of the wasm backend need it there) or in a JS Float32Array (`'js'`). Every storage is
 * recorded in the engine's memory accounting under the tensor's tag and released by `dispose()`: the garbage
 * collector plays no part. `reshape` makes a view that shares the storage; the storage is freed when the tensor
 * and all its views are disposed.
 */
import { engineMemory } from './memory.ts';
import { Mulberry32Rng } from './random.ts';
import { getRuntime, type WasmRuntime } from './runtime.ts';
import { assertValidShape, formatShape, shapeSize, type Shape } from './shape.ts';

export type StorageKind = 'wasm' | 'js';

export interface TensorOptions {
  /** Accounting tag, e.g. 'activations', 'attn.scores', 'params'. Default 'tensor'. */
  tag?: string;
  /** Where the data lives. Default 'wasm'. */
  storage?: StorageKind;
}

const DEFAULT_TAG = 'tensor';

/** Tensors created while a `tensorScope` runs, innermost scope last. */
const scopeStack: Set<Tensor>[] = [];

class Storage {
  refs = 1;
  freed = false;

  constructor(
    readonly kind: StorageKind,
    readonly bytes: number,
    readonly tag: string,
    readonly ptr: number,
    readonly array: Float32Array | undefined,
    readonly runtime: WasmRuntime | undefined,
  ) {}

  static create(kind: StorageKind, size: number, tag: string): Storage {
    const bytes = size * 4;
    if (kind === 'wasm') {
      const rt = getRuntime();
      return new Storage(kind, bytes, tag, rt.alloc(bytes, 64, tag), undefined, rt);
    }
    if (kind !== 'js') throw new Error(`unknown tensor storage '${String(kind)}' (use 'wasm' or 'js')`);
    const array = new Float32Array(size);
    engineMemory.record(tag, bytes);
    return new Storage(kind, bytes, tag, -1, array, undefined);
  }

  release(): void {
    if (--this.refs > 0 || this.freed) return;
    this.freed = true;
    if (this.kind === 'js') engineMemory.release(this.tag, this.bytes);
    // A shut-down runtime has already released its blocks from the accounting.
    else if (!this.runtime!.isClosed) this.runtime!.free(this.ptr);
  }
}

export class Tensor {
  readonly shape: Shape;
  readonly size: number;
  private disposedFlag = false;

  private constructor(shape: Shape, private readonly storage: Storage) {
    this.shape = Object.freeze([...shape]);
    this.size = shapeSize(shape);
    scopeStack[scopeStack.length - 1]?.add(this);
  }

  /** Uninitialised tensor (Wasm memory is reused, so contents are arbitrary). */
  static empty(shape: Shape, options: TensorOptions = {}): Tensor {
    assertValidShape(shape);
    return new Tensor(shape, Storage.create(options.storage ?? 'wasm', shapeSize(shape), options.tag ?? DEFAULT_TAG));
  }

  static zeros(shape: Shape, options: TensorOptions = {}): Tensor {
    return Tensor.empty(shape, options).fill(0);
  }

  static full(shape: Shape, value: number, options: TensorOptions = {}): Tensor {
    return Tensor.empty(shape, options).fill(value);
  }

  /** A tensor holding `values` (copied); the count must match the shape. */
  static from(values: ArrayLike<number>, shape: Shape, options: TensorOptions = {}): Tensor {
    assertValidShape(shape);
    if (values.length !== shapeSize(shape)) {
      throw new Error(`Tensor.from: ${values.length} values do not fill shape ${formatShape(shape)} (${shapeSize(shape)} elements)`);
    }
    const t = Tensor.empty(shape, options);
    t.data().set(values);
    return t;
  }

  /** Normal(0, std²) entries from a seeded generator. */
  static randn(shape: Shape, seed: number | Mulberry32Rng, options: TensorOptions & { std?: number } = {}): Tensor {
    const rng = typeof seed === 'number' ? new Mulberry32Rng(seed) : seed;
    const std = options.std ?? 1;
    const t = Tensor.empty(shape, options);
    const d = t.data();
    for (let i = 0; i < d.length; i++) d[i] = rng.normal() * std;
    return t;
  }

  /** Uniform [lo, hi) entries from a seeded generator. */
  static uniform(shape: Shape, seed: number | Mulberry32Rng, lo = -1, hi = 1, options: TensorOptions = {}): Tensor {
    const rng = typeof seed === 'number' ? new Mulberry32Rng(seed) : seed;
    const t = Tensor.empty(shape, options);
    const d = t.data();
    for (let i = 0; i < d.length; i++) d[i] = rng.uniform(lo, hi);
    return t;
  }

  get storageKind(): StorageKind {
    return this.storage.kind;
  }

  get tag(): string {
    return this.storage.tag;
  }

  get isDisposed(): boolean {
    return this.disposedFlag;
  }

  /** Number of dimensions. */
  get rank(): number {
    return this.shape.length;
  }

  /** Byte address in the Wasm memory (wasm storage only). */
  get ptr(): number {
    this.assertLive('ptr');
    if (this.storage.kind !== 'wasm') throw new Error('ptr: this tensor lives in a JS Float32Array, not in Wasm memory');
    return this.storage.ptr;
  }

  /** The live data. For wasm storage this is a fresh view: do not keep it across allocations (memory may grow). */
  data(): Float32Array {
    this.assertLive('data');
    if (this.storage.kind === 'js') return this.storage.array!;
    return this.storage.runtime!.f32(this.storage.ptr, this.size);
  }

  /** A copy of the data, safe to keep. */
  toArray(): Float32Array {
    return Float32Array.from(this.data());
  }

  /** The single value of a one-element tensor. */
  item(): number {
    if (this.size !== 1) throw new Error(`item: tensor of shape ${formatShape(this.shape)} has ${this.size} elements, not 1`);
    return this.data()[0];
  }

  /** A view with another shape of the same size (shares storage; dispose it too). */
  reshape(shape: Shape): Tensor {
    this.assertLive('reshape');
    assertValidShape(shape);
    if (shapeSize(shape) !== this.size) throw new Error(`reshape: cannot view ${formatShape(this.shape)} as ${formatShape(shape)}`);
    this.storage.refs++;
    return new Tensor(shape, this.storage);
  }

  fill(value: number): this {
    this.data().fill(value);
    return this;
  }

  /** Copies `src`'s data in; shapes must match exactly. */
  copyFrom(src: Tensor): this {
    if (src.size !== this.size || src.shape.length !== this.shape.length || src.shape.some((d, i) => d !== this.shape[i])) {
      throw new Error(`copyFrom: shape mismatch, destination is ${formatShape(this.shape)} but source is ${formatShape(src.shape)}`);
    }
    this.data().set(src.data());
    return this;
  }

  clone(options: TensorOptions = {}): Tensor {
    this.assertLive('clone');
    const t = Tensor.empty(this.shape, { tag: options.tag ?? this.tag, storage: options.storage ?? this.storageKind });
    t.data().set(this.data());
    return t;
  }

  /** True when both tensors are views of the same storage. */
  sharesStorage(other: Tensor): boolean {
    return this.storage === other.storage;
  }

  /** Frees this tensor's hold on its storage and its accounting. Disposing twice is a no-op. */
  dispose(): void {
    if (this.disposedFlag) return;
    this.disposedFlag = true;
    this.storage.release();
  }

  toString(): string {
    return `Tensor${formatShape(this.shape)}(${this.storage.kind}, '${this.tag}'${this.disposedFlag ? ', disposed' : ''})`;
  }

  private assertLive(op: string): void {
    if (this.disposedFlag) throw new Error(`${op}: tensor ${formatShape(this.shape)} '${this.tag}' was disposed`);
    if (this.storage.kind === 'wasm' && this.storage.runtime!.isClosed) {
      throw new Error(`${op}: tensor ${formatShape(this.shape)} belongs to a Wasm runtime that was shut down`);
    }
  }
}

/**
 * Runs `fn` and then disposes every tensor created during it (views included), except the tensors reachable
 * from its result (a tensor, or an array or plain object of tensors, one level deep) and those passed to
 * `keepTensor`. Kept tensors move to the enclosing scope, if any. Tensors created outside are never touched.
 */
export function tensorScope<T>(fn: () => T): T {
  const created = new Set<Tensor>();
  scopeStack.push(created);
  let result: T;
  try {
    result = fn();
  } catch (err) {
    scopeStack.pop();
    for (const t of created) t.dispose();
    throw err;
  }
  scopeStack.pop();
  const keep = new Set<Tensor>();
  const visit = (v: unknown) => { if (v instanceof Tensor) keep.add(v); };
  if (result instanceof Tensor) keep.add(result);
  else if (Array.isArray(result)) result.forEach(visit);
  else if (result !== null && typeof result === 'object') Object.values(result).forEach(visit);
  const parent = scopeStack[scopeStack.length - 1];
  for (const t of created) {
    if (keep.has(t) || kept.has(t)) {
      kept.delete(t);
      parent?.add(t);
    } else t.dispose();
  }
  return result;
}

const kept = new Set<Tensor>();

/** Exempts a tensor created inside the current `tensorScope` from its clean-up. Returns the tensor. */
export function keepTensor(t: Tensor): Tensor {
  if (scopeStack.length > 0) kept.add(t);
  return t;
}

/** Disposes every tensor given (undefined entries are skipped). */
export function disposeAll(...tensors: (Tensor | undefined)[]): void {
  for (const t of tensors) t?.dispose();
}
