/**
 * The default backend: AssemblyScript SIMD kernels (assembly/) run on the runtime's thread pool. Inputs and
 * outputs must live in Wasm memory (the default tensor storage). Small problems run on the calling thread only,
 * since waking the pool costs about 25 µs.
 */
import type {
  Backend, CrossEntropyResult, MatmulOptions, OutOptions, ReduceColsOptions, RmsNormBackwardOptions, RmsNormGrads,
  RmsNormOptions, RmsNormResult, SwigluGrads, SwigluOptions,
} from './backend.ts';
import {
  assertLive, checkIds, outTensor, planBias, planMatmul, planRowVector, planRows, planSame, planTable, planTranspose,
} from './plan.ts';
import { getRuntime, type WasmRuntime } from './runtime.ts';
import { formatShape } from './shape.ts';
import type { Tensor } from './tensor.ts';

/** Work (flops for matmul, elements otherwise) below which a kernel runs on one thread. */
export const PARALLEL_THRESHOLDS = { matmulFlops: 1_000_000, elementwise: 65_536, rowwise: 16_384 };

function p(op: string, t: Tensor): number {
  if (t.storageKind !== 'wasm') throw new Error(`${op} (wasm backend): tensor ${formatShape(t.shape)} '${t.tag}' lives in JS memory; create it with storage 'wasm'`);
  return t.ptr;
}

function rt(): WasmRuntime {
  return getRuntime();
}

/** Copies ids into a temporary Wasm block, runs `fn(ptr)`, frees the block. */
function withIds<T>(ids: Int32Array, fn: (ptr: number) => T): T {
  const r = rt();
  const ptr = r.alloc(Math.max(1, ids.length) * 4, 16, 'engine.temp');
  try {
    r.i32(ptr, ids.length).set(ids);
    return fn(ptr);
  } finally {
    r.free(ptr);
  }
}

function elementwise(op: string, kernel: string, x: Tensor, o: OutOptions | undefined, extra: number[] = []): Tensor {
  assertLive(op, x);
  const out = outTensor(op, x.shape, o, 'wasm');
  rt().run(kernel, [p(op, x), p(op, out), x.size, ...extra, rt().workCounter], x.size, PARALLEL_THRESHOLDS.elementwise);
  return out;
}

function binary(op: string, a: Tensor, b: Tensor, o: OutOptions | undefined): Tensor {
  planSame(op, a, b);
  const out = outTensor(op, a.shape, o, 'wasm');
  rt().run(op, [p(op, a), p(op, b), p(op, out), a.size, rt().workCounter], a.size, PARALLEL_THRESHOLDS.elementwise);
  return out;
}

function rowwise(op: string, x: Tensor, o: OutOptions | undefined): Tensor {
  const { rows, cols } = planRows(op, x);
  const out = outTensor(op, x.shape, o, 'wasm');
  rt().run(op, [p(op, x), p(op, out), rows, cols, rt().workCounter], rows * cols, PARALLEL_THRESHOLDS.rowwise);
  return out;
}

function rowwiseBackward(op: string, y: Tensor, dy: Tensor, o: OutOptions | undefined): Tensor {
  planSame(op, y, dy, ['y', 'dy']);
  const { rows, cols } = planRows(op, y);
  const out = outTensor(op, y.shape, o, 'wasm');
  rt().run(op, [p(op, y), p(op, dy), p(op, out), rows, cols, rt().workCounter], rows * cols, PARALLEL_THRESHOLDS.rowwise);
  return out;
}

function reduceRows(op: string, kernel: string, x: Tensor, o: OutOptions | undefined, extra: number[] = []): Tensor {
  const { rows, cols, reduced } = planRows(op, x);
  const out = outTensor(op, reduced, o, 'wasm');
  rt().run(kernel, [p(op, x), p(op, out), rows, cols, ...extra, rt().workCounter], rows * cols, PARALLEL_THRESHOLDS.rowwise);
  return out;
}

export const wasmBackend: Backend = {
  name: 'wasm',

  matmul(a: Tensor, b: Tensor, o: MatmulOptions = {}): Tensor {
    const plan = planMatmul(a, b, o);
    const out = outTensor('matmul', plan.outShape, o, 'wasm');
    if (out.sharesStorage(a) || out.sharesStorage(b)) throw new Error('matmul: out must not share storage with an input');
    const r = rt();
    r.run('matmul', [
      p('matmul', a), p('matmul', b), p('matmul', out), plan.batch, plan.M, plan.N, plan.K, plan.strideA, plan.strideB, plan.strideC,
      o.transA ? 1 : 0, o.transB ? 1 : 0, o.alpha ?? 1, o.accumulate ? 1 : 0, r.matmulScratch, r.workCounter,
    ], 2 * plan.batch * plan.M * plan.N * plan.K, PARALLEL_THRESHOLDS.matmulFlops);
    return out;
  },

  add: (a, b, o) => binary('add', a, b, o),
  sub: (a, b, o) => binary('sub', a, b, o),
  mul: (a, b, o) => binary('mul', a, b, o),
  scale: (x, s, o) => elementwise('scale', 'scale', x, o, [s]),
  exp: (x, o) => elementwise('exp', 'exp', x, o),

  axpy(y: Tensor, alpha: number, x: Tensor): Tensor {
    planSame('axpy', y, x, ['y', 'x']);
    rt().run('axpy', [p('axpy', y), p('axpy', x), y.size, alpha, rt().workCounter], y.size, PARALLEL_THRESHOLDS.elementwise);
    return y;
  },

  addBias(x: Tensor, bias: Tensor, o?: OutOptions): Tensor {
    const { rows, cols } = planBias('addBias', x, bias);
    const out = outTensor('addBias', x.shape, o, 'wasm');
    rt().run('addBias', [p('addBias', x), p('addBias', bias), p('addBias', out), rows, cols, rt().workCounter], rows * cols,
      PARALLEL_THRESHOLDS.elementwise);
    return out;
  },

  biasGrad(dy: Tensor, o: ReduceColsOptions = {}): Tensor {
    const { rows, cols } = planRows('biasGrad', dy);
    if (o.accumulate && !o.out) throw new Error('biasGrad: accumulate needs an `out` tensor to add into');
    const out = outTensor('biasGrad', [cols], o, 'wasm');
    rt().run('colSum', [p('biasGrad', dy), p('biasGrad', out), rows, cols, o.accumulate ? 1 : 0], rows * cols, PARALLEL_THRESHOLDS.elementwise);
    return out;
  },

  sum: (x, o) => reduceRows('sum', 'rowSum', x, o, [1]),
  mean(x: Tensor, o?: OutOptions): Tensor {
    const cols = x.shape[x.rank - 1];
    return reduceRows('mean', 'rowSum', x, o, [cols === 0 ? NaN : 1 / cols]);
  },
  max: (x, o) => reduceRows('max', 'rowMax', x, o),

  softmax: (x, o) => rowwise('softmax', x, o),
  softmaxBackward: (y, dy, o) => rowwiseBackward('softmaxBackward', y, dy, o),
  logSoftmax: (x, o) => rowwise('logSoftmax', x, o),
  logSoftmaxBackward: (y, dy, o) => rowwiseBackward('logSoftmaxBackward', y, dy, o),

  rmsnorm(x: Tensor, weight: Tensor, eps: number, o: RmsNormOptions = {}): RmsNormResult {
    const { rows, cols, reduced } = planRows('rmsnorm', x);
    assertLive('rmsnorm', weight);
    if (weight.rank !== 1 || weight.shape[0] !== cols) throw new Error(`rmsnorm: weight must be [${cols}], got ${formatShape(weight.shape)}`);
    const y = outTensor('rmsnorm', x.shape, o, 'wasm');
    const rstd = outTensor('rmsnorm (rstd)', reduced, { out: o.rstdOut, tag: o.tag }, 'wasm');
    rt().run('rmsnorm', [p('rmsnorm', x), p('rmsnorm', weight), p('rmsnorm', y), p('rmsnorm', rstd), rows, cols, eps, rt().workCounter],
      rows * cols, PARALLEL_THRESHOLDS.rowwise);
    return { y, rstd };
  },

  rmsnormBackward(dy: Tensor, x: Tensor, weight: Tensor, rstd: Tensor, o: RmsNormBackwardOptions = {}): RmsNormGrads {
    const op = 'rmsnormBackward';
    planSame(op, dy, x, ['dy', 'x']);
    const { rows, cols, reduced } = planRows(op, x);
    assertLive(op, weight, rstd);
    if (weight.rank !== 1 || weight.shape[0] !== cols) throw new Error(`${op}: weight must be [${cols}], got ${formatShape(weight.shape)}`);
    planRowVector(op, 'rstd', rstd, reduced);
    if (o.accumulateWeight && !o.dweight) throw new Error(`${op}: accumulateWeight needs a \`dweight\` tensor to add into`);
    const dx = outTensor(`${op} (dx)`, x.shape, { out: o.dx, tag: o.tag }, 'wasm');
    const dw = outTensor(`${op} (dweight)`, [cols], { out: o.dweight, tag: o.tag }, 'wasm');
    const r = rt();
    r.run('rmsnormBackward', [p(op, dy), p(op, x), p(op, weight), p(op, rstd), p(op, dx), rows, cols, r.workCounter], rows * cols, PARALLEL_THRESHOLDS.rowwise);
    r.run('rmsnormWeightGrad', [p(op, dy), p(op, x), p(op, rstd), p(op, dw), rows, cols, o.accumulateWeight ? 1 : 0],
      rows * cols, PARALLEL_THRESHOLDS.elementwise);
    return { dx, dweight: dw };
  },

  silu: (x, o) => elementwise('silu', 'silu', x, o),
  siluBackward(x: Tensor, dy: Tensor, o?: OutOptions): Tensor {
    planSame('siluBackward', x, dy, ['x', 'dy']);
    const out = outTensor('siluBackward', x.shape, o, 'wasm');
    rt().run('siluBackward', [p('siluBackward', x), p('siluBackward', dy), p('siluBackward', out), x.size, rt().workCounter], x.size,
      PARALLEL_THRESHOLDS.elementwise);
    return out;
  },

  swiglu(gate: Tensor, up: Tensor, o: SwigluOptions = {}): Tensor {
    planSame('swiglu', gate, up, ['gate', 'up']);
    const out = outTensor('swiglu', gate.shape, o, 'wasm');
    rt().run('swiglu', [p('swiglu', gate), p('swiglu', up), p('swiglu', out), gate.size, o.alpha ?? 1, o.limit ?? Infinity, o.upBias ?? 0,
      rt().workCounter], gate.size, PARALLEL_THRESHOLDS.elementwise);
    return out;
  },

  swigluBackward(gate: Tensor, up: Tensor, dout: Tensor, o: SwigluOptions & { dgate?: Tensor; dup?: Tensor } = {}): SwigluGrads {
    const op = 'swigluBackward';
    planSame(op, gate, up, ['gate', 'up']);
    planSame(op, gate, dout, ['gate', 'dout']);
    const dgate = outTensor(`${op} (dgate)`, gate.shape, { out: o.dgate, tag: o.tag }, 'wasm');
    const dup = outTensor(`${op} (dup)`, gate.shape, { out: o.dup, tag: o.tag }, 'wasm');
    rt().run(op, [p(op, gate), p(op, up), p(op, dout), p(op, dgate), p(op, dup), gate.size, o.alpha ?? 1, o.limit ?? Infinity, o.upBias ?? 0,
      rt().workCounter], gate.size, PARALLEL_THRESHOLDS.elementwise);
    return { dgate, dup };
  },

  crossEntropy(logits: Tensor, targets: Int32Array, o: { tag?: string } = {}): CrossEntropyResult {
    const op = 'crossEntropy';
    const { rows, cols } = planRows(op, logits);
    if (logits.rank !== 2) throw new Error(`${op}: logits must be 2-D [rows, vocab], got ${formatShape(logits.shape)}`);
    if (targets.length !== rows) throw new Error(`${op}: ${targets.length} targets for ${rows} rows of logits`);
    checkIds(op, targets, cols, true);
    const loss = outTensor(op, [rows], o, 'wasm');
    const lse = outTensor(op, [rows], o, 'wasm');
    withIds(targets, (ids) => rt().run(op, [p(op, logits), ids, p(op, loss), p(op, lse), rows, cols, rt().workCounter], rows * cols, PARALLEL_THRESHOLDS.rowwise));
    return { loss, lse };
  },

  crossEntropyBackward(logits: Tensor, targets: Int32Array, lse: Tensor, dloss: Tensor, o?: OutOptions): Tensor {
    const op = 'crossEntropyBackward';
    const { rows, cols } = planRows(op, logits);
    if (logits.rank !== 2) throw new Error(`${op}: logits must be 2-D [rows, vocab], got ${formatShape(logits.shape)}`);
    if (targets.length !== rows) throw new Error(`${op}: ${targets.length} targets for ${rows} rows of logits`);
    assertLive(op, lse, dloss);
    planRowVector(op, 'lse', lse, [rows]);
    planRowVector(op, 'dloss', dloss, [rows]);
    checkIds(op, targets, cols, true);
    const out = outTensor(op, logits.shape, o, 'wasm');
    withIds(targets, (ids) => rt().run(op, [p(op, logits), ids, p(op, lse), p(op, dloss), p(op, out), rows, cols, rt().workCounter], rows * cols,
      PARALLEL_THRESHOLDS.rowwise));
    return out;
  },

  gatherRows(table: Tensor, ids: Int32Array, o?: OutOptions): Tensor {
    const op = 'gatherRows';
    const { vocab, cols } = planTable(op, table);
    checkIds(op, ids, vocab, false);
    const out = outTensor(op, [ids.length, cols], o, 'wasm');
    withIds(ids, (ip) => rt().run(op, [p(op, table), ip, p(op, out), ids.length, cols], ids.length * cols, PARALLEL_THRESHOLDS.elementwise));
    return out;
  },

  scatterAddRows(table: Tensor, ids: Int32Array, rows: Tensor): void {
    const op = 'scatterAddRows';
    const { vocab, cols } = planTable(op, table);
    assertLive(op, rows);
    if (rows.rank !== 2 || rows.shape[0] !== ids.length || rows.shape[1] !== cols) {
      throw new Error(`${op}: rows must be [${ids.length}, ${cols}], got ${formatShape(rows.shape)}`);
    }
    checkIds(op, ids, vocab, false);
    withIds(ids, (ip) => rt().run(op, [p(op, table), ip, p(op, rows), ids.length, cols], ids.length * cols, PARALLEL_THRESHOLDS.elementwise));
  },

  transpose(x: Tensor, o?: OutOptions): Tensor {
    const plan = planTranspose(x);
    const out = outTensor('transpose', plan.outShape, o, 'wasm');
    if (out.sharesStorage(x)) throw new Error('transpose: out must not share storage with the input');
    rt().run('transpose', [p('transpose', x), p('transpose', out), plan.batch, plan.rows, plan.cols], x.size, PARALLEL_THRESHOLDS.elementwise);
    return out;
  },

  sumSquares(x: Tensor): number {
    assertLive('sumSquares', x);
    const r = rt();
    const threads = x.size >= PARALLEL_THRESHOLDS.elementwise ? r.threads : 1;
    if (threads > 1) r.parallel('sumSquares', [p('sumSquares', x), x.size, r.smallScratch]);
    else r.serial('sumSquares', [p('sumSquares', x), x.size, r.smallScratch]);
    const partials = r.f64(r.smallScratch, threads);
    let s = 0;
    for (let i = 0; i < threads; i++) s += partials[i];
    return s;
  },
};
