/** Shape validation and result shapes shared by both backends, so both reject the same inputs the same way. */
import type { MatmulOptions, OutOptions } from './backend.ts';
import { assertSameShape, formatShape, rowsCols, sameShape, type Shape } from './shape.ts';
import { Tensor, type StorageKind } from './tensor.ts';

export interface MatmulPlan {
  batch: number;
  M: number;
  N: number;
  K: number;
  /** Batch strides in elements (0 = the same matrix for every batch). */
  strideA: number;
  strideB: number;
  strideC: number;
  outShape: number[];
}

export function assertLive(op: string, ...ts: Tensor[]): void {
  for (const t of ts) if (t.isDisposed) throw new Error(`${op}: input tensor ${formatShape(t.shape)} '${t.tag}' was disposed`);
}

export function planMatmul(a: Tensor, b: Tensor, o: MatmulOptions): MatmulPlan {
  assertLive('matmul', a, b);
  const ra = a.rank, rb = b.rank;
  if ((ra !== 2 && ra !== 3) || (rb !== 2 && rb !== 3)) {
    throw new Error(`matmul: operands must be 2-D or 3-D, got ${formatShape(a.shape)} and ${formatShape(b.shape)}`);
  }
  const [am, ak] = a.shape.slice(-2);
  const [bk, bn] = b.shape.slice(-2);
  const M = o.transA ? ak : am, Ka = o.transA ? am : ak;
  const Kb = o.transB ? bn : bk, N = o.transB ? bk : bn;
  if (Ka !== Kb) {
    throw new Error(`matmul: inner dimensions differ: op(a) is ${M}×${Ka} (a ${formatShape(a.shape)}${o.transA ? ' transposed' : ''}), ` +
      `op(b) is ${Kb}×${N} (b ${formatShape(b.shape)}${o.transB ? ' transposed' : ''})`);
  }
  const ba = ra === 3 ? a.shape[0] : 1, bb = rb === 3 ? b.shape[0] : 1;
  if (ra === 3 && rb === 3 && ba !== bb) throw new Error(`matmul: batch sizes differ: ${formatShape(a.shape)} vs ${formatShape(b.shape)}`);
  const batch = Math.max(ba, bb);
  const batched = ra === 3 || rb === 3;
  const outShape = batched ? [batch, M, N] : [M, N];
  if (o.accumulate && !o.out) throw new Error('matmul: accumulate needs an `out` tensor to add into');
  if (o.alpha !== undefined && !Number.isFinite(o.alpha)) throw new Error(`matmul: alpha must be finite, got ${o.alpha}`);
  return { batch, M, N, K: Ka, strideA: ra === 3 ? M * Ka : 0, strideB: rb === 3 ? Ka * N : 0, strideC: M * N, outShape };
}

/** The `out` tensor if given (checked against `shape`), else a new one. */
export function outTensor(op: string, shape: Shape, o: OutOptions | undefined, storage: StorageKind): Tensor {
  if (o?.out) {
    if (o.out.isDisposed) throw new Error(`${op}: out tensor was disposed`);
    if (!sameShape(o.out.shape, shape)) throw new Error(`${op}: out has shape ${formatShape(o.out.shape)}, expected ${formatShape(shape)}`);
    return o.out;
  }
  return Tensor.empty(shape, { tag: o?.tag, storage });
}

export function planSame(op: string, a: Tensor, b: Tensor, names?: string[]): void {
  assertLive(op, a, b);
  assertSameShape(op, a.shape, b.shape, names);
}

/** rows × cols of a tensor for a last-axis op, plus the reduced shape. */
export function planRows(op: string, x: Tensor): { rows: number; cols: number; reduced: number[] } {
  assertLive(op, x);
  const { rows, cols } = rowsCols(op, x.shape);
  return { rows, cols, reduced: x.shape.slice(0, -1) };
}

export function planBias(op: string, x: Tensor, bias: Tensor): { rows: number; cols: number } {
  const { rows, cols } = planRows(op, x);
  if (bias.rank !== 1 || bias.shape[0] !== cols) {
    throw new Error(`${op}: bias must be [${cols}] for x ${formatShape(x.shape)}, got ${formatShape(bias.shape)}`);
  }
  return { rows, cols };
}

export function planRowVector(op: string, what: string, v: Tensor, reduced: Shape): void {
  if (!sameShape(v.shape, reduced)) throw new Error(`${op}: ${what} must have shape ${formatShape(reduced)}, got ${formatShape(v.shape)}`);
}

export function checkIds(op: string, ids: Int32Array, limit: number, allowIgnore: boolean): void {
  if (!(ids instanceof Int32Array)) throw new TypeError(`${op}: ids/targets must be an Int32Array`);
  for (let i = 0; i < ids.length; i++) {
    const v = ids[i];
    if (v >= limit || v < (allowIgnore ? -1 : 0)) {
      throw new RangeError(`${op}: index ${v} at position ${i} is outside [${allowIgnore ? -1 : 0}, ${limit})`);
    }
  }
}

export function planTable(op: string, table: Tensor): { vocab: number; cols: number } {
  assertLive(op, table);
  if (table.rank !== 2) throw new Error(`${op}: table must be 2-D [V, C], got ${formatShape(table.shape)}`);
  return { vocab: table.shape[0], cols: table.shape[1] };
}

export function planTranspose(x: Tensor): { batch: number; rows: number; cols: number; outShape: number[] } {
  assertLive('transpose', x);
  if (x.rank < 2) throw new Error(`transpose: needs at least 2 dimensions, got ${formatShape(x.shape)}`);
  const rows = x.shape[x.rank - 2], cols = x.shape[x.rank - 1];
  const batch = rows * cols === 0 ? 0 : x.size / (rows * cols);
  return { batch, rows, cols, outShape: [...x.shape.slice(0, -2), cols, rows] };
}
