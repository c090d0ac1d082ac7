/**
 * Linear layer with bias, nn.Linear orientation: weight [out, in], y = x Wᵀ + b, with an optional LoRA adapter
 * y += s·(x Aᵀ) Bᵀ (A [r, in], B [out, r], s = alpha / r).
 *
 * Backward: dx = dy W (+ s·(dy B) A), dW += dyᵀ x, db += Σ_rows dy, dB += s·dyᵀ (x Aᵀ), dA += s·(dy B)ᵀ x.
 * A gradient slot left undefined means that tensor is frozen (its gradient is not computed).
 */
import type { Tensor } from '../../engine/index.ts';
import { TAG, type LayerContext } from './context.ts';

export interface LoraAdapter {
  readonly a: Tensor;
  readonly b: Tensor;
  readonly scale: number;
  gradA?: Tensor;
  gradB?: Tensor;
}

export interface LinearParams {
  readonly weight: Tensor;
  readonly bias?: Tensor;
  gradWeight?: Tensor;
  gradBias?: Tensor;
  lora?: LoraAdapter;
}

export interface LinearSaved {
  /** x Aᵀ, when the adapter ran. */
  xa?: Tensor;
}

/** y [N, out] for x [N, in]. `useLora` false runs the base weights only (the reference policy). */
export function linearForward(ctx: LayerContext, p: LinearParams, x: Tensor, useLora = true): { y: Tensor; saved: LinearSaved } {
  const be = ctx.backend;
  const y = be.matmul(x, p.weight, { transB: true, tag: TAG.act });
  if (p.bias) be.addBias(y, p.bias, { out: y });
  const saved: LinearSaved = {};
  if (p.lora && useLora) {
    const xa = be.matmul(x, p.lora.a, { transB: true, tag: TAG.act });
    be.matmul(xa, p.lora.b, { transB: true, out: y, accumulate: true, alpha: p.lora.scale });
    saved.xa = xa;
  }
  return { y, saved };
}

/** Accumulates parameter gradients; returns dx, or adds it into `dxInto` when given. */
export function linearBackward(ctx: LayerContext, p: LinearParams, x: Tensor, saved: LinearSaved, dy: Tensor, dxInto?: Tensor): Tensor {
  const be = ctx.backend;
  if (p.gradWeight) be.matmul(dy, x, { transA: true, out: p.gradWeight, accumulate: true });
  if (p.bias && p.gradBias) be.biasGrad(dy, { out: p.gradBias, accumulate: true });
  const dx = dxInto ?? be.matmul(dy, p.weight, { tag: TAG.act });
  if (dxInto) be.matmul(dy, p.weight, { out: dxInto, accumulate: true });
  if (p.lora && saved.xa) {
    const { a, b, scale } = p.lora;
    if (p.lora.gradB) be.matmul(dy, saved.xa, { transA: true, out: p.lora.gradB, accumulate: true, alpha: scale });
    const dxa = be.matmul(dy, b, { alpha: scale, tag: TAG.temp });
    if (p.lora.gradA) be.matmul(dxa, x, { transA: true, out: p.lora.gradA, accumulate: true });
    be.matmul(dxa, a, { out: dx, accumulate: true });
    dxa.dispose();
  }
  return dx;
}

export function disposeLinearSaved(s: LinearSaved): void {
  s.xa?.dispose();
}
