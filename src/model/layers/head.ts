/**
 * Untied unembedding and per-token log-probabilities.
 *   logits = h Whᵀ [N, V] (lm_head.weight [V, C], no bias)
 *   logprob_n = logits[n, t_n] − logsumexp(logits[n])   (targets −1 → 0, no gradient)
 * The loss built on top (model.ts) is −Σ m_n logprob_n / Σ m_n with the loss mask m.
 * Backward from dlogprob: dlogits = −dlogprob_n · (softmax(logits_n) − onehot(t_n)) (the engine's cross-entropy
 * backward with dloss = −dlogprob, written over the saved logits), dWh += dlogitsᵀ h, dh = dlogits Wh.
 */
import { Tensor } from '../../engine/index.ts';
import { TAG, type LayerContext } from './context.ts';
import { softmaxEntropyGrad } from './entropy.ts';

export interface HeadSaved {
  h: Tensor;
  logits: Tensor;
  lse: Tensor;
  targets: Int32Array;
}

export function headForward(ctx: LayerContext, weight: Tensor, h: Tensor, targets: Int32Array): { logprobs: Float32Array; saved: HeadSaved } {
  const be = ctx.backend;
  const V = weight.shape[0];
  for (let i = 0; i < targets.length; i++) {
    if (targets[i] !== -1 && !(targets[i] >= 0 && targets[i] < V)) throw new RangeError(`targets[${i}] = ${targets[i]} is outside the vocabulary [0, ${V}) (use −1 for none)`);
  }
  const logits = be.matmul(h, weight, { transB: true, tag: TAG.logits });
  const ce = be.crossEntropy(logits, targets, { tag: TAG.act });
  const logprobs = new Float32Array(targets.length);
  const l = ce.loss.data();
  for (let i = 0; i < logprobs.length; i++) logprobs[i] = targets[i] >= 0 ? -l[i] : 0;
  ce.loss.dispose();
  return { logprobs, saved: { h, logits, lse: ce.lse, targets } };
}

/** Full-vocabulary log-softmax of the saved logits, [N, V] (a new tensor). */
export function headLogSoftmax(ctx: LayerContext, s: HeadSaved): Tensor {
  return ctx.backend.logSoftmax(s.logits, { tag: TAG.logits });
}

/**
 * d(objective)/d logits from a per-row entropy gradient g_n = d(objective)/dH_n, H_n = −Σ_j p_j log p_j:
 * dH/dz_j = −p_j (log p_j + H) (entropy.ts). Rows with g_n = 0 are skipped; the result holds only the rows listed in `rows`.
 */
function entropyLogitGrads(logits: Float32Array, lse: Float32Array, dEntropy: Float32Array, V: number): { rows: Int32Array; grad: Float32Array } {
  const rows: number[] = [];
  for (let n = 0; n < dEntropy.length; n++) if (dEntropy[n] !== 0) rows.push(n);
  const grad = new Float32Array(rows.length * V);
  rows.forEach((n, r) => softmaxEntropyGrad(logits, n * V, V, lse[n], dEntropy[n], grad, r * V));
  return { rows: Int32Array.from(rows), grad };
}

/** Backward from d/d logprob of the targets and, optionally, d/d entropy of each row's distribution. */
export function headBackward(ctx: LayerContext, weight: Tensor, gradWeight: Tensor | undefined, s: HeadSaved, dlogprobs: Float32Array, dEntropy?: Float32Array): Tensor {
  const be = ctx.backend, N = s.targets.length, V = weight.shape[0];
  if (dEntropy && dEntropy.length !== N) throw new RangeError(`backward: dEntropy has ${dEntropy.length} entries, the forward had ${N} tokens`);
  const ent = dEntropy ? entropyLogitGrads(s.logits.data(), s.lse.data(), dEntropy, V) : null;
  const dloss = Tensor.empty([N], { tag: TAG.temp });
  const dd = dloss.data();
  for (let i = 0; i < N; i++) dd[i] = -dlogprobs[i];
  // In place over the logits (dead after this point; the op is elementwise per row given the saved LSE): saves
  // one [N, V] buffer, the largest activation of a small model. The logits tensor is freed by disposeHeadSaved.
  const dlogits = be.crossEntropyBackward(s.logits, s.targets, s.lse, dloss, { out: s.logits });
  dloss.dispose();
  if (ent && ent.rows.length > 0) {
    const d = dlogits.data();
    ent.rows.forEach((n, r) => {
      const base = n * V, src = r * V;
      for (let j = 0; j < V; j++) d[base + j] += ent.grad[src + j];
    });
  }
  if (gradWeight) be.matmul(dlogits, s.h, { transA: true, out: gradWeight, accumulate: true });
  return be.matmul(dlogits, weight, { tag: TAG.act });
}

export function disposeHeadSaved(s: HeadSaved): void {
  s.logits.dispose(); s.lse.dispose();
}
