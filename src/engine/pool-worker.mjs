// A pool worker: instantiates the engine's Wasm module on the shared memory and runs kernel shares on request.
// Protocol and offsets: pool-protocol.ts. Plain ESM so it runs without a TypeScript loader.
/* global WebAssembly */
import { workerData } from 'node:worker_threads';

const SPIN = 20000;
const SEQ = 0, FN = 1, NPARAMS = 2, DONE = 3, ERROR = 4, SHUTDOWN = 5, READY = 6, ACTIVE = 7;
const { module, memory, control, tid, names, paramsOffset, maxParams, messageOffset, messageBytes } = workerData;
const ctrl = new Int32Array(control);
const params = new Float64Array(control, paramsOffset, maxParams);
const message = new Uint8Array(control, messageOffset, messageBytes);

function reportError(err) {
  if (Atomics.compareExchange(ctrl, ERROR, 0, tid + 1) !== 0) return;
  const bytes = new TextEncoder().encode(String(err && err.stack ? err.stack : err)).subarray(0, messageBytes - 1);
  message.fill(0);
  message.set(bytes);
}

let fns;
try {
  const instance = new WebAssembly.Instance(module, {
    env: { memory, abort: () => { throw new Error('wasm abort'); } },
  });
  fns = names.map((n) => instance.exports[n]);
  Atomics.add(ctrl, READY, 1);
} catch (err) {
  reportError(err);
  Atomics.store(ctrl, READY, -1);
}
Atomics.notify(ctrl, READY);

if (fns) {
  // Start from generation 0, not the current one: a job posted before this worker booted must still run.
  let seen = 0;
  for (;;) {
    // Jobs come in bursts (one per op of a forward pass): spin briefly before sleeping, which cuts the wake-up
    // latency of back-to-back jobs from tens of microseconds to a few.
    for (let i = 0; i < SPIN && Atomics.load(ctrl, SEQ) === seen; i++);
    Atomics.wait(ctrl, SEQ, seen);
    const seq = Atomics.load(ctrl, SEQ);
    if (seq === seen) continue;
    seen = seq;
    if (Atomics.load(ctrl, SHUTDOWN) !== 0) break;
    // Every worker acknowledges every job (idle ones at once), so no worker can lag behind into the next job.
    const active = Atomics.load(ctrl, ACTIVE);
    if (tid < active) {
      try {
        const n = Atomics.load(ctrl, NPARAMS);
        const args = [tid, active];
        for (let i = 0; i < n; i++) args.push(params[i]);
        fns[Atomics.load(ctrl, FN)](...args);
      } catch (err) {
        reportError(err);
      }
    }
    Atomics.add(ctrl, DONE, 1);
    Atomics.notify(ctrl, DONE);
  }
}
