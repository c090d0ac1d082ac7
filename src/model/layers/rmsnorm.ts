/**
 * RMSNorm: y = x · rstd · w with rstd = 1/sqrt(mean(x²) + eps) per row (float32 here, like gpt-oss's fp32 norm).
 * Backward (engine kernel): dx = rstd·(w⊙dy − x·rstd²·mean(x⊙w⊙dy)), dw += Σ_rows dy ⊙ x·rstd.
 */
import type { Tensor } from '../../engine/index.ts';
import { TAG, type LayerContext } from './context.ts';

export interface NormParams {
  readonly weight: Tensor;
  gradWeight?: Tensor;
}

export function rmsnormForward(ctx: LayerContext, p: NormParams, x: Tensor, eps: number): { y: Tensor; rstd: Tensor } {
  return ctx.backend.rmsnorm(x, p.weight, eps, { tag: TAG.act });
}

/** Returns dx (new tensor); accumulates dw. */
export function rmsnormBackward(ctx: LayerContext, p: NormParams, x: Tensor, rstd: Tensor, dy: Tensor): Tensor {
  const be = ctx.backend;
  const { dx, dweight } = be.rmsnormBackward(dy, x, p.weight, rstd, p.gradWeight
    ? { dweight: p.gradWeight, accumulateWeight: true, tag: TAG.act }
    : { tag: TAG.act });
  if (!p.gradWeight) dweight.dispose();
  return dx;
}
