/**
 * The reference backend: plain TypeScript, every sum accumulated in float64. Slow; it is the oracle the Wasm
 * kernels are tested against, and it works on tensors of either storage kind.
 */
import type {
  Backend, CrossEntropyResult, MatmulOptions, OutOptions, ReduceColsOptions, RmsNormBackwardOptions, RmsNormGrads,
  RmsNormOptions, RmsNormResult, SwigluGrads, SwigluOptions,
} from './backend.ts';
import {
  assertLive, checkIds, outTensor, planBias, planMatmul, planRowVector, planRows, planSame, planTable, planTranspose,
} from './plan.ts';
import { formatShape } from './shape.ts';
import type { Tensor } from './tensor.ts';

const sigmoid = (z: number): number => 1 / (1 + Math.exp(-z));

function logSumExp(x: Float32Array, off: number, cols: number): number {
  let m = -Infinity;
  for (let c = 0; c < cols; c++) m = Math.max(m, x[off + c]);
  let s = 0;
  for (let c = 0; c < cols; c++) s += Math.exp(x[off + c] - m);
  return m + Math.log(s);
}

function map1(op: string, x: Tensor, o: OutOptions | undefined, f: (v: number) => number): Tensor {
  assertLive(op, x);
  const out = outTensor(op, x.shape, o, x.storageKind);
  const xd = x.data(), od = out.data();
  for (let i = 0; i < xd.length; i++) od[i] = f(xd[i]);
  return out;
}

function map2(op: string, a: Tensor, b: Tensor, o: OutOptions | undefined, f: (u: number, v: number) => number): Tensor {
  planSame(op, a, b);
  const out = outTensor(op, a.shape, o, a.storageKind);
  const ad = a.data(), bd = b.data(), od = out.data();
  for (let i = 0; i < ad.length; i++) od[i] = f(ad[i], bd[i]);
  return out;
}

function reduceRows(op: string, x: Tensor, o: OutOptions | undefined, f: (d: Float32Array, off: number, cols: number) => number): Tensor {
  const { rows, cols, reduced } = planRows(op, x);
  const out = outTensor(op, reduced, o, x.storageKind);
  const xd = x.data(), od = out.data();
  for (let r = 0; r < rows; r++) od[r] = f(xd, r * cols, cols);
  return out;
}

export const referenceBackend: Backend = {
  name: 'reference',

  matmul(a: Tensor, b: Tensor, o: MatmulOptions = {}): Tensor {
    const p = planMatmul(a, b, o);
    const out = outTensor('matmul', p.outShape, o, a.storageKind);
    if (out.sharesStorage(a) || out.sharesStorage(b)) throw new Error('matmul: out must not share storage with an input');
    const A = a.data(), B = b.data(), C = out.data();
    const alpha = o.alpha ?? 1;
    const row = new Float64Array(p.N);
    for (let bi = 0; bi < p.batch; bi++) {
      const oa = bi * p.strideA, ob = bi * p.strideB, oc = bi * p.strideC;
      for (let i = 0; i < p.M; i++) {
        row.fill(0);
        for (let k = 0; k < p.K; k++) {
          const av = o.transA ? A[oa + k * p.M + i] : A[oa + i * p.K + k];
          if (o.transB) for (let j = 0; j < p.N; j++) row[j] += av * B[ob + j * p.K + k];
          else for (let j = 0; j < p.N; j++) row[j] += av * B[ob + k * p.N + j];
        }
        for (let j = 0; j < p.N; j++) C[oc + i * p.N + j] = (o.accumulate ? C[oc + i * p.N + j] : 0) + alpha * row[j];
      }
    }
    return out;
  },

  add: (a, b, o) => map2('add', a, b, o, (u, v) => u + v),
  sub: (a, b, o) => map2('sub', a, b, o, (u, v) => u - v),
  mul: (a, b, o) => map2('mul', a, b, o, (u, v) => u * v),
  scale: (x, s, o) => map1('scale', x, o, (v) => v * s),
  exp: (x, o) => map1('exp', x, o, Math.exp),

  axpy(y: Tensor, alpha: number, x: Tensor): Tensor {
    planSame('axpy', y, x, ['y', 'x']);
    const yd = y.data(), xd = x.data();
    for (let i = 0; i < yd.length; i++) yd[i] += alpha * xd[i];
    return y;
  },

  addBias(x: Tensor, bias: Tensor, o?: OutOptions): Tensor {
    const { rows, cols } = planBias('addBias', x, bias);
    const out = outTensor('addBias', x.shape, o, x.storageKind);
    const xd = x.data(), bd = bias.data(), od = out.data();
    for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) od[r * cols + c] = xd[r * cols + c] + bd[c];
    return out;
  },

  biasGrad(dy: Tensor, o: ReduceColsOptions = {}): Tensor {
    const { rows, cols } = planRows('biasGrad', dy);
    if (o.accumulate && !o.out) throw new Error('biasGrad: accumulate needs an `out` tensor to add into');
    const out = outTensor('biasGrad', [cols], o, dy.storageKind);
    const d = dy.data(), od = out.data();
    const acc = new Float64Array(cols);
    for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) acc[c] += d[r * cols + c];
    for (let c = 0; c < cols; c++) od[c] = (o.accumulate ? od[c] : 0) + acc[c];
    return out;
  },

  sum: (x, o) => reduceRows('sum', x, o, (d, off, n) => { let s = 0; for (let c = 0; c < n; c++) s += d[off + c]; return s; }),
  mean: (x, o) => reduceRows('mean', x, o, (d, off, n) => { let s = 0; for (let c = 0; c < n; c++) s += d[off + c]; return s / n; }),
  max: (x, o) => reduceRows('max', x, o, (d, off, n) => {
    let m = -Infinity;
    for (let c = 0; c < n; c++) m = Number.isNaN(d[off + c]) || Number.isNaN(m) ? NaN : Math.max(m, d[off + c]);
    return m;
  }),

  softmax(x: Tensor, o?: OutOptions): Tensor {
    const { rows, cols } = planRows('softmax', x);
    const out = outTensor('softmax', x.shape, o, x.storageKind);
    const xd = x.data(), od = out.data();
    for (let r = 0; r < rows; r++) {
      const lse = logSumExp(xd, r * cols, cols);
      for (let c = 0; c < cols; c++) od[r * cols + c] = Math.exp(xd[r * cols + c] - lse);
    }
    return out;
  },

  softmaxBackward(y: Tensor, dy: Tensor, o?: OutOptions): Tensor {
    planSame('softmaxBackward', y, dy, ['y', 'dy']);
    const { rows, cols } = planRows('softmaxBackward', y);
    const out = outTensor('softmaxBackward', y.shape, o, y.storageKind);
    const yd = y.data(), gd = dy.data(), od = out.data();
    for (let r = 0; r < rows; r++) {
      let dot = 0;
      for (let c = 0; c < cols; c++) dot += yd[r * cols + c] * gd[r * cols + c];
      for (let c = 0; c < cols; c++) od[r * cols + c] = yd[r * cols + c] * (gd[r * cols + c] - dot);
    }
    return out;
  },

  logSoftmax(x: Tensor, o?: OutOptions): Tensor {
    const { rows, cols } = planRows('logSoftmax', x);
    const out = outTensor('logSoftmax', x.shape, o, x.storageKind);
    const xd = x.data(), od = out.data();
    for (let r = 0; r < rows; r++) {
      const lse = logSumExp(xd, r * cols, cols);
      for (let c = 0; c < cols; c++) od[r * cols + c] = xd[r * cols + c] - lse;
    }
    return out;
  },

  logSoftmaxBackward(y: Tensor, dy: Tensor, o?: OutOptions): Tensor {
    planSame('logSoftmaxBackward', y, dy, ['y', 'dy']);
    const { rows, cols } = planRows('logSoftmaxBackward', y);
    const out = outTensor('logSoftmaxBackward', y.shape, o, y.storageKind);
    const yd = y.data(), gd = dy.data(), od = out.data();
    for (let r = 0; r < rows; r++) {
      let s = 0;
      for (let c = 0; c < cols; c++) s += gd[r * cols + c];
      for (let c = 0; c < cols; c++) od[r * cols + c] = gd[r * cols + c] - Math.exp(yd[r * cols + c]) * s;
    }
    return out;
  },

  rmsnorm(x: Tensor, weight: Tensor, eps: number, o: RmsNormOptions = {}): RmsNormResult {
    const { rows, cols, reduced } = planRows('rmsnorm', x);
    assertLive('rmsnorm', weight);
    if (weight.rank !== 1 || weight.shape[0] !== cols) throw new Error(`rmsnorm: weight must be [${cols}], got ${formatShape(weight.shape)}`);
    const y = outTensor('rmsnorm', x.shape, o, x.storageKind);
    const rstd = outTensor('rmsnorm (rstd)', reduced, { out: o.rstdOut, tag: o.tag }, x.storageKind);
    const xd = x.data(), wd = weight.data(), yd = y.data(), sd = rstd.data();
    for (let r = 0; r < rows; r++) {
      let ss = 0;
      for (let c = 0; c < cols; c++) ss += xd[r * cols + c] ** 2;
      const s = 1 / Math.sqrt(ss / cols + eps);
      sd[r] = s;
      for (let c = 0; c < cols; c++) yd[r * cols + c] = xd[r * cols + c] * s * wd[c];
    }
    return { y, rstd };
  },

  rmsnormBackward(dy: Tensor, x: Tensor, weight: Tensor, rstd: Tensor, o: RmsNormBackwardOptions = {}): RmsNormGrads {
    planSame('rmsnormBackward', dy, x, ['dy', 'x']);
    const { rows, cols, reduced } = planRows('rmsnormBackward', x);
    assertLive('rmsnormBackward', weight, rstd);
    if (weight.rank !== 1 || weight.shape[0] !== cols) throw new Error(`rmsnormBackward: weight must be [${cols}], got ${formatShape(weight.shape)}`);
    planRowVector('rmsnormBackward', 'rstd', rstd, reduced);
    if (o.accumulateWeight && !o.dweight) throw new Error('rmsnormBackward: accumulateWeight needs a `dweight` tensor to add into');
    const dx = outTensor('rmsnormBackward (dx)', x.shape, { out: o.dx, tag: o.tag }, x.storageKind);
    const dw = outTensor('rmsnormBackward (dweight)', [cols], { out: o.dweight, tag: o.tag }, x.storageKind);
    const g = dy.data(), xd = x.data(), wd = weight.data(), sd = rstd.data(), dxd = dx.data(), dwd = dw.data();
    const acc = new Float64Array(cols);
    for (let r = 0; r < rows; r++) {
      const s = sd[r];
      let dot = 0;
      for (let c = 0; c < cols; c++) dot += g[r * cols + c] * wd[c] * xd[r * cols + c];
      const k = (s * s * s * dot) / cols;
      for (let c = 0; c < cols; c++) {
        dxd[r * cols + c] = g[r * cols + c] * wd[c] * s - xd[r * cols + c] * k;
        acc[c] += g[r * cols + c] * xd[r * cols + c] * s;
      }
    }
    for (let c = 0; c < cols; c++) dwd[c] = (o.accumulateWeight ? dwd[c] : 0) + acc[c];
    return { dx, dweight: dw };
  },

  silu: (x, o) => map1('silu', x, o, (v) => v * sigmoid(v)),
  siluBackward: (x, dy, o) => map2('siluBackward', x, dy, o, (v, g) => {
    const s = sigmoid(v);
    return g * s * (1 + v * (1 - s));
  }),

  swiglu(gate: Tensor, up: Tensor, o: SwigluOptions = {}): Tensor {
    const alpha = o.alpha ?? 1, limit = o.limit ?? Infinity, upBias = o.upBias ?? 0;
    return map2('swiglu', gate, up, o, (gv, uv) => {
      const g = Math.min(gv, limit), u = Math.max(Math.min(uv, limit), -limit);
      return g * sigmoid(alpha * g) * (u + upBias);
    });
  },

  swigluBackward(gate: Tensor, up: Tensor, dout: Tensor, o: SwigluOptions & { dgate?: Tensor; dup?: Tensor } = {}): SwigluGrads {
    planSame('swigluBackward', gate, up, ['gate', 'up']);
    planSame('swigluBackward', gate, dout, ['gate', 'dout']);
    const alpha = o.alpha ?? 1, limit = o.limit ?? Infinity, upBias = o.upBias ?? 0;
    const dgate = outTensor('swigluBackward (dgate)', gate.shape, { out: o.dgate, tag: o.tag }, gate.storageKind);
    const dup = outTensor('swigluBackward (dup)', gate.shape, { out: o.dup, tag: o.tag }, gate.storageKind);
    const gd = gate.data(), ud = up.data(), dd = dout.data(), dgd = dgate.data(), dud = dup.data();
    for (let i = 0; i < gd.length; i++) {
      const g = Math.min(gd[i], limit), u = Math.max(Math.min(ud[i], limit), -limit);
      const s = sigmoid(alpha * g);
      const glu = g * s;
      dgd[i] = gd[i] <= limit ? dd[i] * (u + upBias) * (s + alpha * glu * (1 - s)) : 0;
      dud[i] = ud[i] <= limit && ud[i] >= -limit ? dd[i] * glu : 0;
    }
    return { dgate, dup };
  },

  crossEntropy(logits: Tensor, targets: Int32Array, o: { tag?: string } = {}): CrossEntropyResult {
    const { rows, cols } = planRows('crossEntropy', logits);
    if (logits.rank !== 2) throw new Error(`crossEntropy: logits must be 2-D [rows, vocab], got ${formatShape(logits.shape)}`);
    if (targets.length !== rows) throw new Error(`crossEntropy: ${targets.length} targets for ${rows} rows of logits`);
    checkIds('crossEntropy', targets, cols, true);
    const loss = outTensor('crossEntropy', [rows], o, logits.storageKind);
    const lse = outTensor('crossEntropy', [rows], o, logits.storageKind);
    const x = logits.data(), ld = loss.data(), sd = lse.data();
    for (let r = 0; r < rows; r++) {
      const l = logSumExp(x, r * cols, cols);
      sd[r] = l;
      ld[r] = targets[r] < 0 ? 0 : l - x[r * cols + targets[r]];
    }
    return { loss, lse };
  },

  crossEntropyBackward(logits: Tensor, targets: Int32Array, lse: Tensor, dloss: Tensor, o?: OutOptions): Tensor {
    const { rows, cols } = planRows('crossEntropyBackward', logits);
    if (logits.rank !== 2) throw new Error(`crossEntropyBackward: logits must be 2-D [rows, vocab], got ${formatShape(logits.shape)}`);
    if (targets.length !== rows) throw new Error(`crossEntropyBackward: ${targets.length} targets for ${rows} rows of logits`);
    assertLive('crossEntropyBackward', lse, dloss);
    planRowVector('crossEntropyBackward', 'lse', lse, [rows]);
    planRowVector('crossEntropyBackward', 'dloss', dloss, [rows]);
    checkIds('crossEntropyBackward', targets, cols, true);
    const out = outTensor('crossEntropyBackward', logits.shape, o, logits.storageKind);
    const x = logits.data(), sd = lse.data(), gd = dloss.data(), od = out.data();
    for (let r = 0; r < rows; r++) {
      const t = targets[r];
      for (let c = 0; c < cols; c++) od[r * cols + c] = t < 0 ? 0 : (Math.exp(x[r * cols + c] - sd[r]) - (c === t ? 1 : 0)) * gd[r];
    }
    return out;
  },

  gatherRows(table: Tensor, ids: Int32Array, o?: OutOptions): Tensor {
    const { vocab, cols } = planTable('gatherRows', table);
    checkIds('gatherRows', ids, vocab, false);
    const out = outTensor('gatherRows', [ids.length, cols], o, table.storageKind);
    const td = table.data(), od = out.data();
    for (let i = 0; i < ids.length; i++) od.set(td.subarray(ids[i] * cols, ids[i] * cols + cols), i * cols);
    return out;
  },

  scatterAddRows(table: Tensor, ids: Int32Array, rows: Tensor): void {
    const { vocab, cols } = planTable('scatterAddRows', table);
    assertLive('scatterAddRows', rows);
    if (rows.rank !== 2 || rows.shape[0] !== ids.length || rows.shape[1] !== cols) {
      throw new Error(`scatterAddRows: rows must be [${ids.length}, ${cols}], got ${formatShape(rows.shape)}`);
    }
    checkIds('scatterAddRows', ids, vocab, false);
    const td = table.data(), rd = rows.data();
    for (let i = 0; i < ids.length; i++) for (let c = 0; c < cols; c++) td[ids[i] * cols + c] += rd[i * cols + c];
  },

  transpose(x: Tensor, o?: OutOptions): Tensor {
    const p = planTranspose(x);
    const out = outTensor('transpose', p.outShape, o, x.storageKind);
    if (out.sharesStorage(x)) throw new Error('transpose: out must not share storage with the input');
    const xd = x.data(), od = out.data();
    const mat = p.rows * p.cols;
    for (let b = 0; b < p.batch; b++) {
      for (let r = 0; r < p.rows; r++) for (let c = 0; c < p.cols; c++) od[b * mat + c * p.rows + r] = xd[b * mat + r * p.cols + c];
    }
    return out;
  },

  sumSquares(x: Tensor): number {
    assertLive('sumSquares', x);
    const d = x.data();
    let s = 0;
    for (let i = 0; i < d.length; i++) s += d[i] * d[i];
    return s;
  },
};
