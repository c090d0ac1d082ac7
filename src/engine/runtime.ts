/**
 * The engine's Wasm runtime: one shared `WebAssembly.Memory` (up to 4 GiB), the kernel module instantiated on
 * the main thread and on every pool worker, a free-list allocator over the memory, and `parallel()` to run a
 * multi-threaded kernel. A process has one runtime: `getRuntime()` creates it on first use (synchronously) with
 * the defaults, or `initRuntime(options)` creates it with explicit options.
 *
 * Kernel convention: a multi-threaded export takes `(tid, nthreads, ...params)` and computes share `tid`.
 * Pointers are byte addresses into `memory`; pass them as plain numbers.
 */
import { readFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { setFlagsFromString } from 'node:v8';
import { FreeListAllocator, type AllocatorStats } from './allocator.ts';
import { engineMemory } from './memory.ts';
import { ThreadPool } from './pool.ts';
import { wasmApi, type WasmMemory, type WasmModule } from './wasm-api.ts';

const PAGE = 65536;
const MAX_PAGES = 65536;
const INITIAL_BYTES = 32 * 1024 * 1024;

export interface RuntimeOptions {
  /** Threads for parallel kernels, main thread included. Default: min(2, available cores), or LONGRUN_THREADS. */
  threads?: number;
  /**
   * Relaxed SIMD (fused multiply-add): opt-in. 'auto' (default) loads the plain build unless LONGRUN_RELAXED_SIMD=1;
   * true (or the variable) loads the relaxed build, switching V8's --experimental-wasm-relaxed-simd on at runtime
   * where this Node needs it (Node 20); false never uses it. Why not by default (bench/results/matmul.md,
   * bench/results/attention.md): on AMD Zen 4 it is no faster (separate multiply and add pipes already retire as
   * many flops as the fused ones) and attention runs slower; and `relaxed_madd` may round once or twice depending on
   * the machine, so a seed would reproduce a run bit for bit only between machines that agree; the plain build's
   * arithmetic is fully specified by Wasm.
   */
  relaxed?: boolean | 'auto';
}

export type KernelFunction = (...args: number[]) => number | void;

function readWasm(file: string): Uint8Array {
  const url = new URL(`../../build/${file}`, import.meta.url);
  try {
    return readFileSync(url);
  } catch (err) {
    throw new Error(`cannot read build/${file}: run \`npm run build:wasm\` first (${(err as Error).message})`, { cause: err });
  }
}

function chooseModule(relaxed: boolean | 'auto'): { module: WasmModule; relaxed: boolean } {
  const env = process.env.LONGRUN_RELAXED_SIMD;
  if (env !== undefined && env !== '' && env !== '0' && env !== '1') throw new Error(`LONGRUN_RELAXED_SIMD must be 0 or 1, got '${env}'`);
  const want = relaxed === 'auto' ? env === '1' : relaxed;
  if (want) {
    const bytes = readWasm('longrun.relaxed.wasm');
    if (!wasmApi.validate(bytes)) setFlagsFromString('--experimental-wasm-relaxed-simd');
    if (wasmApi.validate(bytes)) return { module: new wasmApi.Module(bytes), relaxed: true };
    throw new Error('this Node cannot compile the relaxed-SIMD build even with --experimental-wasm-relaxed-simd');
  }
  return { module: new wasmApi.Module(readWasm('longrun.wasm')), relaxed: false };
}

function defaultThreads(): number {
  const env = process.env.LONGRUN_THREADS;
  if (env !== undefined && env !== '') {
    const n = Number(env);
    if (!Number.isInteger(n) || n < 1) throw new Error(`LONGRUN_THREADS must be a positive integer, got '${env}'`);
    return n;
  }
  return Math.min(2, availableParallelism());
}

interface RawBlock {
  bytes: number;
  tag: string;
}

export class WasmRuntime {
  readonly memory: WasmMemory;
  readonly exports: Readonly<Record<string, KernelFunction>>;
  /** Whether the relaxed-SIMD build is loaded (on every thread). */
  readonly relaxed: boolean;
  /** Pool size: the most threads `parallel` can use. */
  readonly maxThreads: number;
  /** Start of the per-thread matmul workspace (maxThreads × matmulScratchBytes). */
  readonly matmulScratch: number;
  /** 64 bytes per thread for kernels' small per-thread outputs (partial sums, temporaries). */
  readonly smallScratch: number;
  /**
   * Address of an i32 that `parallel` and `serial` set to 0 before every job. Kernels that hand out work items
   * dynamically (`claim(counter, chunk, n)` from assembly/simd.ts) take it as a parameter.
   */
  readonly workCounter: number;
  private activeThreads: number;
  private readonly allocator: FreeListAllocator;
  private readonly pool: ThreadPool | undefined;
  private readonly names: string[];
  private readonly nameIndex = new Map<string, number>();
  private readonly blocks = new Map<number, RawBlock>();
  private closed = false;

  constructor(options: RuntimeOptions = {}) {
    const threads = options.threads ?? defaultThreads();
    if (!Number.isInteger(threads) || threads < 1 || threads > 64) throw new RangeError(`threads must be an integer in 1..64, got ${threads}`);
    const { module, relaxed } = chooseModule(options.relaxed ?? 'auto');
    this.relaxed = relaxed;
    this.memory = new wasmApi.Memory({ initial: INITIAL_BYTES / PAGE, maximum: MAX_PAGES, shared: true });
    const instance = new wasmApi.Instance(module, {
      env: { memory: this.memory, abort: () => { throw new Error('wasm abort'); } },
    });
    const exports: Record<string, KernelFunction> = {};
    for (const [name, value] of Object.entries(instance.exports)) if (typeof value === 'function') exports[name] = value as KernelFunction;
    this.exports = exports;
    this.names = Object.keys(exports).sort();
    this.names.forEach((n, i) => this.nameIndex.set(n, i));
    const heapBase = Math.ceil(Number(exports.heapBase()) / 64) * 64;
    this.allocator = new FreeListAllocator(heapBase, (end) => this.ensureBytes(end), 'the 4 GiB Wasm memory');
    this.maxThreads = threads;
    this.activeThreads = threads;
    this.pool = threads > 1 ? new ThreadPool(module, this.memory, threads, this.names) : undefined;
    this.matmulScratch = this.alloc(threads * Number(exports.matmulScratchBytes()), 64, 'engine.workspace');
    this.smallScratch = this.alloc(threads * 64, 64, 'engine.workspace');
    this.workCounter = this.alloc(64, 64, 'engine.workspace');
  }

  /** Threads that `parallel` uses now (≤ maxThreads). */
  get threads(): number {
    return this.activeThreads;
  }

  /** Uses only the first n threads of the pool (1 = everything on the main thread). */
  setThreads(n: number): void {
    if (!Number.isInteger(n) || n < 1 || n > this.maxThreads) throw new RangeError(`setThreads: need an integer in 1..${this.maxThreads}, got ${n}`);
    this.activeThreads = n;
  }

  /** Allocates `bytes` bytes of Wasm memory, recorded in the engine's memory accounting under `tag`. */
  alloc(bytes: number, align = 16, tag = 'runtime.raw'): number {
    this.assertOpen();
    const ptr = this.allocator.alloc(bytes, align);
    this.blocks.set(ptr, { bytes, tag });
    engineMemory.record(tag, bytes);
    return ptr;
  }

  free(ptr: number): void {
    const block = this.blocks.get(ptr);
    if (!block) throw new Error(`free: ${ptr} is not a live runtime allocation (double free or foreign pointer)`);
    this.blocks.delete(ptr);
    this.allocator.free(ptr);
    engineMemory.release(block.tag, block.bytes);
  }

  /** Bytes requested for a live allocation. */
  sizeOf(ptr: number): number | undefined {
    return this.blocks.get(ptr)?.bytes;
  }

  heapStats(): AllocatorStats & { memoryBytes: number } {
    return { ...this.allocator.stats(), memoryBytes: this.memory.buffer.byteLength };
  }

  /** A Float32Array over [ptr, ptr + 4·len). Views made before a memory growth do not cover the new pages: make a fresh one per use. */
  f32(ptr: number, len: number): Float32Array {
    return new Float32Array(this.memory.buffer, ptr, len);
  }

  i32(ptr: number, len: number): Int32Array {
    return new Int32Array(this.memory.buffer, ptr, len);
  }

  f64(ptr: number, len: number): Float64Array {
    return new Float64Array(this.memory.buffer, ptr, len);
  }

  u8(ptr: number, len: number): Uint8Array {
    return new Uint8Array(this.memory.buffer, ptr, len);
  }

  /** Runs exports[name](tid, nthreads, ...params) on all active threads and returns when every share is done. */
  parallel(name: string, params: readonly number[]): void {
    this.assertOpen();
    const fn = this.kernel(name);
    this.resetCounter();
    const n = this.activeThreads;
    if (n === 1 || !this.pool) {
      fn(0, 1, ...params);
      return;
    }
    this.pool.run(this.nameIndex.get(name)!, params, n, () => fn(0, n, ...params));
  }

  /** Runs exports[name](0, 1, ...params) on the calling thread only (for work too small to split). */
  serial(name: string, params: readonly number[]): void {
    this.assertOpen();
    const fn = this.kernel(name);
    this.resetCounter();
    fn(0, 1, ...params);
  }

  /** `parallel` when `work` (≈ flops or bytes touched) is at least `threshold`, else `serial`. */
  run(name: string, params: readonly number[], work: number, threshold = 1 << 16): void {
    if (work >= threshold) this.parallel(name, params);
    else this.serial(name, params);
  }

  /** Stops the workers; the runtime (and every tensor in its memory) is unusable afterwards. */
  async shutdown(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (runtime === this) runtime = undefined;
    for (const [ptr, b] of this.blocks) {
      engineMemory.release(b.tag, b.bytes);
      this.blocks.delete(ptr);
    }
    await this.pool?.shutdown();
  }

  get isClosed(): boolean {
    return this.closed;
  }

  private resetCounter(): void {
    new Int32Array(this.memory.buffer, this.workCounter, 1)[0] = 0;
  }

  private kernel(name: string): KernelFunction {
    const fn = this.exports[name];
    if (!fn) throw new Error(`no Wasm kernel named '${name}' (is it exported from assembly/index.ts and rebuilt?)`);
    return fn;
  }

  private ensureBytes(end: number): boolean {
    const have = this.memory.buffer.byteLength;
    if (end <= have) return true;
    const havePages = have / PAGE;
    const needPages = Math.ceil((end - have) / PAGE);
    if (havePages + needPages > MAX_PAGES) return false;
    // Grow by at least 1/8 of the current size to keep the number of growths small.
    const pages = Math.min(MAX_PAGES - havePages, Math.max(needPages, Math.ceil(havePages / 8)));
    this.memory.grow(pages);
    return true;
  }

  private assertOpen(): void {
    if (this.closed) throw new Error('the Wasm runtime was shut down; tensors from it are gone. Call initRuntime() again');
  }
}

let runtime: WasmRuntime | undefined;

/** The process's runtime, created with default options on first use. */
export function getRuntime(): WasmRuntime {
  if (!runtime) runtime = new WasmRuntime();
  return runtime;
}

/**
 * Creates the runtime with explicit options (synchronous; `await` works too). If one exists already it is
 * returned when the options agree, otherwise this throws: call `shutdownRuntime()` first.
 */
export function initRuntime(options: RuntimeOptions = {}): WasmRuntime {
  if (runtime) {
    const threadsOk = options.threads === undefined || options.threads === runtime.maxThreads;
    const r = options.relaxed;
    const relaxedOk = r === undefined || r === 'auto' || r === runtime.relaxed;
    if (threadsOk && relaxedOk) return runtime;
    throw new Error(`the runtime already exists with threads=${runtime.maxThreads}, relaxed=${runtime.relaxed}; call shutdownRuntime() first`);
  }
  runtime = new WasmRuntime(options);
  return runtime;
}

/** Shuts the runtime's pool down (if any) and forgets it; every Wasm tensor becomes unusable. */
export async function shutdownRuntime(): Promise<void> {
  const r = runtime;
  runtime = undefined;
  await r?.shutdown();
}

/** True when a runtime exists (without creating one). */
export function hasRuntime(): boolean {
  return runtime !== undefined;
}
