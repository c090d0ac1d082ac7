/**
 * gpt-oss experts as one grouped computation: x [R, C] holds the tokens routed to expert e in rows
 * offsets[e] … offsets[e+1] (gathered contiguously), and the stacked weights are used in place by a grouped
 * matmul (../ops/grouped-matmul.ts). The dense MLP is the case E = 1, offsets [0, N].
 *
 *   h = x W1[e] + b1[e] [R, 2I]; gate = h[:, 0::2], up = h[:, 1::2]               (W1 [E, C, 2I], interleaved)
 *   g = min(gate, limit), u = clamp(up, −limit, limit), act = g·σ(α·g)·(u + 1)    (α = 1.702, limit = 7)
 *   y = act W2[e] + b2[e] [R, C]                                                  (W2 [E, I, C])
 * Backward: dact = dy W2[e]ᵀ, dW2[e] += act_eᵀ dy_e, (dgate, dup) from the engine's swiglu backward (zero where
 * clamped) interleaved into dh, dW1[e] += x_eᵀ dh_e, dx = dh W1[e]ᵀ; bias gradients are per-expert column sums.
 * Optional per-expert LoRA adds s·(x A1[e]) B1[e] to h and s·(act A2[e]) B2[e] to y.
 */
import { Tensor } from '../../engine/index.ts';
import { groupedMatmul, type GroupOperand } from '../ops/grouped-matmul.ts';
import { TAG, type LayerContext } from './context.ts';

export const SWIGLU_ALPHA = 1.702;

/** Stacked expert tensors: w1 [E, C, 2I], b1 [E, 2I], w2 [E, I, C], b2 [E, C]. */
export interface ExpertTensors {
  w1: Tensor;
  b1: Tensor;
  w2: Tensor;
  b2: Tensor;
}

/**
 * Optional per-expert LoRA: W1 += s·A1 B1 (A1 [E, C, r], B1 [E, r, 2I]) and W2 += s·A2 B2 (A2 [E, I, r], B2 [E, r, C]),
 * in the x @ W orientation of the expert tensors. No `grad` = frozen.
 */
export interface ExpertLora {
  a1: Tensor;
  b1: Tensor;
  a2: Tensor;
  b2: Tensor;
  scale: number;
  grad?: { a1: Tensor; b1: Tensor; a2: Tensor; b2: Tensor };
}

export interface ExpertSaved {
  gate: Tensor;
  up: Tensor;
  act: Tensor;
  /** x A1 and act A2 [R, r] when the adapter ran. */
  xa1?: Tensor;
  aa2?: Tensor;
}

const rows = (t: Tensor): GroupOperand => ({ t, kind: 'rows' });
const stack = (t: Tensor): GroupOperand => ({ t, kind: 'stack' });

/** Expert index of every row, from the group offsets. */
function forEachGroupRow(offsets: Int32Array, fn: (e: number, r: number) => void): void {
  for (let e = 0; e + 1 < offsets.length; e++) for (let r = offsets[e]; r < offsets[e + 1]; r++) fn(e, r);
}

export function expertForward(ctx: LayerContext, w: ExpertTensors, x: Tensor, offsets: Int32Array, limit: number, lora?: ExpertLora): { y: Tensor; saved: ExpertSaved } {
  const be = ctx.backend, R = x.shape[0], C = x.shape[1], I = w.w2.shape[1];
  const h = Tensor.empty([R, 2 * I], { tag: TAG.temp });
  groupedMatmul(ctx, rows(x), stack(w.w1), rows(h), offsets);
  let xa1: Tensor | undefined, aa2: Tensor | undefined;
  if (lora) {
    xa1 = Tensor.empty([R, lora.a1.shape[2]], { tag: TAG.act });
    groupedMatmul(ctx, rows(x), stack(lora.a1), rows(xa1), offsets);
    groupedMatmul(ctx, rows(xa1), stack(lora.b1), rows(h), offsets, { accumulate: true, alpha: lora.scale });
  }
  const gate = Tensor.empty([R, I], { tag: TAG.act }), up = Tensor.empty([R, I], { tag: TAG.act });
  const hd = h.data(), b1 = w.b1.data(), gd = gate.data(), ud = up.data();
  forEachGroupRow(offsets, (e, r) => {
    const hb = r * 2 * I, bb = e * 2 * I, ob = r * I;
    for (let j = 0; j < I; j++) { gd[ob + j] = hd[hb + 2 * j] + b1[bb + 2 * j]; ud[ob + j] = hd[hb + 2 * j + 1] + b1[bb + 2 * j + 1]; }
  });
  h.dispose();
  const act = be.swiglu(gate, up, { alpha: SWIGLU_ALPHA, limit, upBias: 1, tag: TAG.act });
  const y = Tensor.empty([R, C], { tag: TAG.act });
  groupedMatmul(ctx, rows(act), stack(w.w2), rows(y), offsets);
  if (lora) {
    aa2 = Tensor.empty([R, lora.a2.shape[2]], { tag: TAG.act });
    groupedMatmul(ctx, rows(act), stack(lora.a2), rows(aa2), offsets);
    groupedMatmul(ctx, rows(aa2), stack(lora.b2), rows(y), offsets, { accumulate: true, alpha: lora.scale });
  }
  const yd = y.data(), b2 = w.b2.data();
  forEachGroupRow(offsets, (e, r) => { for (let j = 0; j < C; j++) yd[r * C + j] += b2[e * C + j]; });
  return { y, saved: { gate, up, act, xa1, aa2 } };
}

/** Returns dx [R, C]; accumulates into the given gradient tensors (undefined = frozen). */
export function expertBackward(ctx: LayerContext, w: ExpertTensors, g: Partial<ExpertTensors>, x: Tensor, offsets: Int32Array, s: ExpertSaved, dy: Tensor, limit: number, lora?: ExpertLora): Tensor {
  const be = ctx.backend, R = x.shape[0], C = x.shape[1], I = w.w2.shape[1];
  const acc = { transA: true, accumulate: true };
  if (g.w2) groupedMatmul(ctx, rows(s.act), rows(dy), stack(g.w2), offsets, acc);
  if (g.b2) {
    const db = g.b2.data(), d = dy.data();
    forEachGroupRow(offsets, (e, r) => { for (let j = 0; j < C; j++) db[e * C + j] += d[r * C + j]; });
  }
  const dact = Tensor.empty([R, I], { tag: TAG.temp });
  groupedMatmul(ctx, rows(dy), stack(w.w2), rows(dact), offsets, { transB: true });
  if (lora && s.aa2) {
    if (lora.grad) groupedMatmul(ctx, rows(s.aa2), rows(dy), stack(lora.grad.b2), offsets, { ...acc, alpha: lora.scale });
    const daa2 = Tensor.empty(s.aa2.shape, { tag: TAG.temp });
    groupedMatmul(ctx, rows(dy), stack(lora.b2), rows(daa2), offsets, { transB: true, alpha: lora.scale });
    if (lora.grad) groupedMatmul(ctx, rows(s.act), rows(daa2), stack(lora.grad.a2), offsets, acc);
    groupedMatmul(ctx, rows(daa2), stack(lora.a2), rows(dact), offsets, { transB: true, accumulate: true });
    daa2.dispose();
  }
  const { dgate, dup } = be.swigluBackward(s.gate, s.up, dact, { alpha: SWIGLU_ALPHA, limit, upBias: 1, tag: TAG.temp });
  dact.dispose();
  const dh = Tensor.empty([R, 2 * I], { tag: TAG.temp });
  const dhd = dh.data(), dgd = dgate.data(), dud = dup.data(), db1 = g.b1?.data();
  forEachGroupRow(offsets, (e, r) => {
    const hb = r * 2 * I, ob = r * I;
    for (let j = 0; j < I; j++) { dhd[hb + 2 * j] = dgd[ob + j]; dhd[hb + 2 * j + 1] = dud[ob + j]; }
    if (db1) for (let j = 0; j < 2 * I; j++) db1[e * 2 * I + j] += dhd[hb + j];
  });
  dgate.dispose(); dup.dispose();
  if (g.w1) groupedMatmul(ctx, rows(x), rows(dh), stack(g.w1), offsets, acc);
  const dx = Tensor.empty([R, C], { tag: TAG.act });
  groupedMatmul(ctx, rows(dh), stack(w.w1), rows(dx), offsets, { transB: true });
  if (lora && s.xa1) {
    if (lora.grad) groupedMatmul(ctx, rows(s.xa1), rows(dh), stack(lora.grad.b1), offsets, { ...acc, alpha: lora.scale });
    const dxa1 = Tensor.empty(s.xa1.shape, { tag: TAG.temp });
    groupedMatmul(ctx, rows(dh), stack(lora.b1), rows(dxa1), offsets, { transB: true, alpha: lora.scale });
    if (lora.grad) groupedMatmul(ctx, rows(x), rows(dxa1), stack(lora.grad.a1), offsets, acc);
    groupedMatmul(ctx, rows(dxa1), stack(lora.a1), rows(dx), offsets, { transB: true, accumulate: true });
    dxa1.dispose();
  }
  dh.dispose();
  return dx;
}

export function disposeExpertSaved(s: ExpertSaved): void {
  s.gate.dispose(); s.up.dispose(); s.act.dispose(); s.xa1?.dispose(); s.aa2?.dispose();
}
