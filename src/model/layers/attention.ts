/**
 * The gpt-oss attention block on N packed tokens: q/k/v projections with biases, YaRN RoPE on q and k, sink-aware
 * flex attention (GQA: query head h reads kv head floor(h / (Hq/Hkv))), output projection.
 *
 *   q = xn Wqᵀ + bq [N, Hq·d] → rope → [Hq, N, d]     k likewise [Hkv, N, d]; v only transposed
 *   o = attention(q, k, v; block mask, sinks σ, scale 1/√d)     [Hq, N, d] → rows [N, Hq·d]
 *   y = o Woᵀ + bo
 * Backward: y → do rows → dO heads → attention backward (dq, dk, dv, dσ) → transposed rope → projections.
 */
import { Tensor } from '../../engine/index.ts';
import type { BlockMask } from '../../attention/block-mask.ts';
import { attentionCore, type CoreOutput } from './attention-core.ts';
import { TAG, type LayerContext } from './context.ts';
import { disposeLinearSaved, linearBackward, linearForward, type LinearParams, type LinearSaved } from './linear.ts';
import { headsToRows, rowsToHeads, type RopeTable } from './rope.ts';

export interface AttentionParams {
  q: LinearParams;
  k: LinearParams;
  v: LinearParams;
  o: LinearParams;
  /** The layer's sink logits [Hq]; null: no sink term (a model built with sinks: 'ignore'). */
  readonly sinks: Tensor | null;
  gradSinks?: Tensor;
}

export interface AttentionDims {
  hq: number;
  hkv: number;
  d: number;
}

export interface AttentionSaved {
  xn: Tensor;
  sq: LinearSaved;
  sk: LinearSaved;
  sv: LinearSaved;
  so: LinearSaved;
  qh: Tensor;
  kh: Tensor;
  vh: Tensor;
  core: CoreOutput;
  orows: Tensor;
  positions: Int32Array;
}

/** q, k (rotated) and v in head-major layout for N tokens; used by the forward and by KV-cache prefill. */
export function projectQkv(ctx: LayerContext, p: AttentionParams, dims: AttentionDims, xn: Tensor, positions: Int32Array, rope: RopeTable, useLora: boolean) {
  const N = xn.shape[0], { hq, hkv, d } = dims;
  const q = linearForward(ctx, p.q, xn, useLora), k = linearForward(ctx, p.k, xn, useLora), v = linearForward(ctx, p.v, xn, useLora);
  let maxPos = 0;
  for (let i = 0; i < N; i++) maxPos = Math.max(maxPos, positions[i]);
  rope.ensure(maxPos);
  const qh = Tensor.empty([hq, N, d], { tag: TAG.act }), kh = Tensor.empty([hkv, N, d], { tag: TAG.act }), vh = Tensor.empty([hkv, N, d], { tag: TAG.act });
  rowsToHeads(q.y.data(), qh.data(), N, hq, d, { table: rope, positions, mode: 1 });
  rowsToHeads(k.y.data(), kh.data(), N, hkv, d, { table: rope, positions, mode: 1 });
  rowsToHeads(v.y.data(), vh.data(), N, hkv, d);
  q.y.dispose(); k.y.dispose(); v.y.dispose();
  return { qh, kh, vh, sq: q.saved, sk: k.saved, sv: v.saved };
}

export function attentionForward(ctx: LayerContext, p: AttentionParams, dims: AttentionDims, xn: Tensor, positions: Int32Array,
  rope: RopeTable, blockMask: BlockMask, useLora: boolean): { y: Tensor; saved: AttentionSaved } {
  const N = xn.shape[0], { hq, d } = dims;
  const { qh, kh, vh, sq, sk, sv } = projectQkv(ctx, p, dims, xn, positions, rope, useLora);
  const core = attentionCore(ctx.impl, qh, kh, vh, { blockMask, sinks: p.sinks ? p.sinks.toArray() : null, scale: 1 / Math.sqrt(d) }, ctx.attention);
  const orows = Tensor.empty([N, hq * d], { tag: TAG.act });
  headsToRows(core.o.data(), orows.data(), N, hq, d);
  const o = linearForward(ctx, p.o, orows, useLora);
  return { y: o.y, saved: { xn, sq, sk, sv, so: o.saved, qh, kh, vh, core, orows, positions } };
}

/** Returns dxn; accumulates parameter gradients. */
export function attentionBackward(ctx: LayerContext, p: AttentionParams, dims: AttentionDims, s: AttentionSaved, rope: RopeTable, dy: Tensor): Tensor {
  const N = s.xn.shape[0], { hq, hkv, d } = dims;
  const dorows = linearBackward(ctx, p.o, s.orows, s.so, dy);
  const dO = Tensor.empty([hq, N, d], { tag: TAG.act });
  rowsToHeads(dorows.data(), dO.data(), N, hq, d);
  dorows.dispose();
  const g = s.core.backward(dO);
  dO.dispose();
  if (p.gradSinks && g.dsinks) {
    const gs = p.gradSinks.data();
    for (let h = 0; h < hq; h++) gs[h] += g.dsinks[h];
  }
  const dq = Tensor.empty([N, hq * d], { tag: TAG.act }), dk = Tensor.empty([N, hkv * d], { tag: TAG.act }), dv = Tensor.empty([N, hkv * d], { tag: TAG.act });
  headsToRows(g.dq.data(), dq.data(), N, hq, d, { table: rope, positions: s.positions, mode: -1 });
  headsToRows(g.dk.data(), dk.data(), N, hkv, d, { table: rope, positions: s.positions, mode: -1 });
  headsToRows(g.dv.data(), dv.data(), N, hkv, d);
  g.dq.dispose(); g.dk.dispose(); g.dv.dispose();
  const dxn = linearBackward(ctx, p.q, s.xn, s.sq, dq);
  linearBackward(ctx, p.k, s.xn, s.sk, dk, dxn);
  linearBackward(ctx, p.v, s.xn, s.sv, dv, dxn);
  dq.dispose(); dk.dispose(); dv.dispose();
  return dxn;
}

export function disposeAttentionSaved(s: AttentionSaved): void {
  for (const l of [s.sq, s.sk, s.sv, s.so]) disposeLinearSaved(l);
  s.qh.dispose(); s.kh.dispose(); s.vh.dispose(); s.orows.dispose();
  s.core.dispose();
}
