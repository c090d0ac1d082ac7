/**
 * Our dense MLP option: one always-on gpt-oss expert (same interleaved gate/up and clamped SwiGLU), run as the
 * grouped expert computation with E = 1 (offsets [0, N]) on [1, ·, ·] views of the [C, 2I] / [I, C] tensors.
 */
import type { Tensor } from '../../engine/index.ts';
import type { LayerContext } from './context.ts';
import { disposeExpertSaved, expertBackward, expertForward, type ExpertLora, type ExpertSaved, type ExpertTensors } from './expert.ts';

export interface DenseMlpParams {
  /** w1 [C, 2I], b1 [2I], w2 [I, C], b2 [C]. */
  w: ExpertTensors;
  grad?: Partial<ExpertTensors>;
  /** Adapters with a leading expert axis of 1: a1 [1, C, r], b1 [1, r, 2I], a2 [1, I, r], b2 [1, r, C]. */
  lora?: ExpertLora;
}

export interface DenseMlpSaved {
  xn: Tensor;
  expert: ExpertSaved;
  useLora: boolean;
}

function asOneExpert<T extends Partial<ExpertTensors>>(w: T): T {
  const out: Partial<ExpertTensors> = {};
  for (const k of ['w1', 'b1', 'w2', 'b2'] as const) if (w[k]) out[k] = w[k].reshape([1, ...w[k].shape]);
  return out as T;
}

function release(w: Partial<ExpertTensors>): void {
  for (const t of Object.values(w)) t?.dispose();
}

export function denseMlpForward(ctx: LayerContext, p: DenseMlpParams, xn: Tensor, limit: number, useLora = true): { y: Tensor; saved: DenseMlpSaved } {
  const w = asOneExpert(p.w);
  const r = expertForward(ctx, w, xn, Int32Array.of(0, xn.shape[0]), limit, useLora ? p.lora : undefined);
  release(w);
  return { y: r.y, saved: { xn, expert: r.saved, useLora } };
}

export function denseMlpBackward(ctx: LayerContext, p: DenseMlpParams, s: DenseMlpSaved, dy: Tensor, limit: number): Tensor {
  const w = asOneExpert(p.w), g = asOneExpert(p.grad ?? {});
  const dx = expertBackward(ctx, w, g, s.xn, Int32Array.of(0, s.xn.shape[0]), s.expert, dy, limit, s.useLora ? p.lora : undefined);
  release(w); release(g);
  return dx;
}

export function disposeDenseMlpSaved(s: DenseMlpSaved): void {
  disposeExpertSaved(s.expert);
}
