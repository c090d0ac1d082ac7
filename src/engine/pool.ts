import { Worker } from 'node:worker_threads';
import type { WasmMemory, WasmModule } from './wasm-api.ts';
import { CONTROL_BYTES, CTRL, MAX_PARAMS, MESSAGE_BYTE_OFFSET, MESSAGE_BYTES, PARAMS_BYTE_OFFSET } from './pool-protocol.ts';

const READY_TIMEOUT_MS = 60_000;
/** Polls of the done counter before sleeping (tens of microseconds): most shares finish close together. */
const SPIN = 20_000;

/**
 * A pool of worker threads that share one Wasm memory with the main thread. `run` is synchronous: the main
 * thread posts the job through the control block, computes share 0 itself, then blocks in `Atomics.wait` until
 * every worker has acknowledged. Workers are unref'd, so an idle pool never keeps the process alive.
 */
export class ThreadPool {
  private readonly ctrl: Int32Array;
  private readonly params: Float64Array;
  private readonly message: Uint8Array;
  private readonly workers: Worker[] = [];
  private closed = false;

  constructor(module: WasmModule, memory: WasmMemory, readonly size: number, private readonly names: readonly string[]) {
    if (!Number.isInteger(size) || size < 1) throw new RangeError(`thread pool size must be a positive integer, got ${size}`);
    const control = new SharedArrayBuffer(CONTROL_BYTES);
    this.ctrl = new Int32Array(control);
    this.params = new Float64Array(control, PARAMS_BYTE_OFFSET, MAX_PARAMS);
    this.message = new Uint8Array(control, MESSAGE_BYTE_OFFSET, MESSAGE_BYTES);
    for (let tid = 1; tid < size; tid++) {
      const w = new Worker(new URL('./pool-worker.mjs', import.meta.url), {
        workerData: {
          module, memory, control, tid, names,
          paramsOffset: PARAMS_BYTE_OFFSET, maxParams: MAX_PARAMS, messageOffset: MESSAGE_BYTE_OFFSET, messageBytes: MESSAGE_BYTES,
        },
        execArgv: [],
      });
      w.unref();
      this.workers.push(w);
    }
    this.waitReady();
  }

  /** Runs fns[index](tid, threads, ...params) on threads 0..threads−1 (0 is the caller's `mainShare`). */
  run(index: number, params: readonly number[], threads: number, mainShare: () => void): void {
    if (this.closed) throw new Error('thread pool is shut down; call initRuntime() again');
    if (params.length > MAX_PARAMS) throw new RangeError(`a pool job takes at most ${MAX_PARAMS} parameters, got ${params.length}`);
    const nWorkers = this.workers.length;
    const c = this.ctrl;
    for (let i = 0; i < params.length; i++) this.params[i] = params[i];
    Atomics.store(c, CTRL.NPARAMS, params.length);
    Atomics.store(c, CTRL.FN, index);
    Atomics.store(c, CTRL.ACTIVE, threads);
    Atomics.store(c, CTRL.DONE, 0);
    Atomics.store(c, CTRL.ERROR, 0);
    Atomics.add(c, CTRL.SEQ, 1);
    Atomics.notify(c, CTRL.SEQ);
    let mainError: unknown;
    try {
      mainShare();
    } catch (err) {
      mainError = err;
    }
    for (let i = 0; i < SPIN && Atomics.load(c, CTRL.DONE) < nWorkers; i++);
    for (;;) {
      const d = Atomics.load(c, CTRL.DONE);
      if (d >= nWorkers) break;
      Atomics.wait(c, CTRL.DONE, d);
    }
    if (mainError !== undefined) throw mainError;
    const failed = Atomics.load(c, CTRL.ERROR);
    if (failed !== 0) throw new Error(`kernel '${this.names[index]}' failed on worker ${failed - 1}: ${this.readMessage()}`);
  }

  /** Stops the workers (they leave their wait loop and exit). Idempotent. */
  shutdown(): Promise<void> {
    if (this.closed) return Promise.resolve();
    this.closed = true;
    Atomics.store(this.ctrl, CTRL.SHUTDOWN, 1);
    Atomics.add(this.ctrl, CTRL.SEQ, 1);
    Atomics.notify(this.ctrl, CTRL.SEQ);
    // ref() so that awaiting the exits keeps the event loop alive until they happen.
    return Promise.all(this.workers.map((w) => new Promise<void>((resolve) => {
      if (w.threadId < 0) return resolve();
      w.once('exit', () => resolve());
      w.ref();
    }))).then(() => undefined);
  }

  private waitReady(): void {
    const want = this.workers.length;
    const deadline = Date.now() + READY_TIMEOUT_MS;
    for (;;) {
      const r = Atomics.load(this.ctrl, CTRL.READY);
      if (r < 0) {
        this.closed = true;
        for (const w of this.workers) void w.terminate();
        throw new Error(`a pool worker failed to start: ${this.readMessage()}`);
      }
      if (r >= want) return;
      const left = deadline - Date.now();
      if (left <= 0) {
        this.closed = true;
        for (const w of this.workers) void w.terminate();
        throw new Error(`pool workers did not start within ${READY_TIMEOUT_MS / 1000} s (${r}/${want} ready)`);
      }
      Atomics.wait(this.ctrl, CTRL.READY, r, Math.min(left, 100));
    }
  }

  private readMessage(): string {
    const end = this.message.indexOf(0);
    return new TextDecoder().decode(this.message.slice(0, end < 0 ? undefined : end));
  }
}
