/** Gradient helpers: global L2 norm, norm clipping, and a finiteness check. */
import type { Backend } from './backend.ts';
import { formatShape } from './shape.ts';
import type { Tensor } from './tensor.ts';
import { wasmBackend } from './wasm-backend.ts';
import { referenceBackend } from './reference-backend.ts';

function backendFor(t: Tensor): Backend {
  return t.storageKind === 'wasm' ? wasmBackend : referenceBackend;
}

/** sqrt(Σ over all tensors of Σ g²), accumulated in float64. */
export function globalNorm(grads: readonly Tensor[]): number {
  let s = 0;
  for (const g of grads) s += backendFor(g).sumSquares(g);
  return Math.sqrt(s);
}

/**
 * Scales all gradients by min(1, maxNorm / (norm + 1e-6)) like torch.nn.utils.clip_grad_norm_, and returns the
 * norm before clipping. A non-finite norm leaves the gradients unchanged (check the returned value).
 */
export function clipGradNorm(grads: readonly Tensor[], maxNorm: number): number {
  if (!(maxNorm > 0)) throw new RangeError(`clipGradNorm: maxNorm must be > 0, got ${maxNorm}`);
  const norm = globalNorm(grads);
  if (!Number.isFinite(norm)) return norm;
  const coef = maxNorm / (norm + 1e-6);
  if (coef < 1) for (const g of grads) backendFor(g).scale(g, coef, { out: g });
  return norm;
}

/** Throws if `t` holds a NaN or ±∞, naming the tensor and the first bad position. */
export function checkFinite(t: Tensor, name = t.tag): void {
  const d = t.data();
  for (let i = 0; i < d.length; i++) {
    if (!Number.isFinite(d[i])) throw new Error(`checkFinite: ${name} ${formatShape(t.shape)} has ${d[i]} at flat index ${i}`);
  }
}

/** True when every element is finite. */
export function allFinite(t: Tensor): boolean {
  const d = t.data();
  for (let i = 0; i < d.length; i++) if (!Number.isFinite(d[i])) return false;
  return true;
}
