/**
 * The trainer ↔ model seam (ARCHITECTURE.md "Trainer ↔ model"). The trainer never sees kernels; it hands the policy
 * a `Batch` in verl's padded layout and gets per-token log-probs of the `responses` back, then hands back
 * d loss / d logprob (and optionally d loss / d entropy) for the same rows.
 *
 * Log-prob convention (docs/grpo.md, "The batch"): logits ÷ temperature, log-softmax over the full vocabulary, response token t of
 * row i is scored from position P−1+t of `input_ids` (the slice `[P−1, P+R−1)`). Padding positions get 0.
 */
import type { Batch } from '../rollout/batch.ts';

export interface PolicyForwardOptions {
  /** Must equal the rollout temperature. */
  temperature: number;
  /** Keep what `backward` needs (one backward per grad forward). */
  grad: boolean;
  /** Also return the per-token entropy of the temperature-scaled distribution. */
  entropy: boolean;
  /** Also return the value head's V per response slot (a policy with a value head attached: critic.type 'head'). */
  values?: boolean;
}

export interface PolicyForward {
  /** `[B, R]` row-major. */
  logprobs: Float32Array;
  /** `[B, R]`, when asked for. */
  entropy?: Float32Array;
  /** `[B, R]` V(s_t) of the value head, when asked for: the value of the state that scores response token t. */
  values?: Float32Array;
}

export interface OptimizerStepResult {
  /** Global L2 norm of the gradient before clipping. */
  gradNorm: number;
  /** True when the norm was not finite and the step was skipped (verl skips such steps). */
  skipped: boolean;
}

export interface Policy {
  /** Per-token log-probs of `batch.responses` under the current weights. */
  logprobs(batch: Batch, options: PolicyForwardOptions): Promise<PolicyForward>;
  /**
   * Back-propagates from the last `grad: true` forward: `dLogprobs[i,t]` = ∂loss/∂logprob[i,t]; `dEntropy` likewise
   * for the entropy bonus, `dValues` for the value head's loss (after a forward with `values`: the head's gradient and,
   * through the shared trunk, the model's). Gradients ACCUMULATE until `zeroGrad`.
   */
  backward(dLogprobs: Float32Array, dEntropy?: Float32Array, dValues?: Float32Array): Promise<void>;
  zeroGrad(): void;
  /** Clips the global grad norm to `gradClip` (≤ 0: no clipping) and steps the optimizer. */
  optimizerStep(options: { gradClip: number }): Promise<OptimizerStepResult>;
  /** Log-probs under the frozen reference policy (same layout); the trainer asks only when a KL term is on. */
  referenceLogprobs(batch: Batch, options: { temperature: number }): Promise<Float32Array>;
  /** Makes the inference engine use the current weights (a no-op when it shares them in process). */
  syncToInference(): Promise<void>;
  /** Saves weights + optimizer state (moments, step) so that a load resumes exactly. */
  saveCheckpoint(dir: string): Promise<void>;
  loadCheckpoint(dir: string): Promise<void>;
  /**
   * The optimizer's learning rate, when the policy has one the trainer may set: a resumed run applies its configured
   * rate over the one `loadCheckpoint` restored.
   */
  learningRate?: number;
  /** Peak bytes of model memory, when the policy tracks it. */
  peakMemoryBytes?(): number;
}

/** Shape checks shared by policies: B, P, R and the real-token layout of one row. */
export function batchDims(batch: Batch): { B: number; P: number; R: number } {
  const prompts = batch.tensor('prompts');
  const responses = batch.tensor('responses');
  if (prompts.shape.length !== 2 || responses.shape.length !== 2) throw new Error('policy: prompts and responses must be 2-D [B, P] and [B, R]');
  const B = prompts.shape[0];
  const P = prompts.shape[1];
  const R = responses.shape[1];
  const ids = batch.tensor('input_ids');
  if (ids.shape[1] !== P + R) throw new Error(`policy: input_ids width ${ids.shape[1]} ≠ P + R = ${P + R}`);
  return { B, P, R };
}
