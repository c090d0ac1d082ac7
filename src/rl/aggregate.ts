/**
 * `loss_agg_mode` (verl.md §4.4, legacy worker, per micro-batch): turns a per-token loss matrix L `[B,R]` and the
 * response mask m into a scalar, and returns the weights w with ∂scalar/∂L[i,t] = w[i,t] (the chain rule then gives
 * ∂scalar/∂logπ = w ⊙ ∂L/∂logπ). The trainer multiplies by 1/grad_accum on top.
 */
import { checkShape } from './advantages.ts';

export type LossAggMode = 'token-mean' | 'seq-mean-token-sum' | 'seq-mean-token-mean' | 'seq-mean-token-sum-norm';
export const LOSS_AGG_MODES: readonly LossAggMode[] = ['token-mean', 'seq-mean-token-sum', 'seq-mean-token-mean', 'seq-mean-token-sum-norm'];

/** The 1e-8 verl adds to a sequence's token count in seq-mean-token-mean. */
export const SEQ_MEAN_EPS = 1e-8;

export interface AggregateOptions {
  /** `loss_scale_factor` for seq-mean-token-sum-norm; defaults to the padded width R. */
  lossScaleFactor?: number;
}

export interface Aggregated {
  value: number;
  /** ∂value/∂L, `[B,R]` (0 where the mask is 0). */
  weights: Float32Array;
}

/**
 * - token-mean: Σ L·m / Σ m
 * - seq-mean-token-sum: mean over sequences with ≥ 1 valid token of Σ_t L·m
 * - seq-mean-token-mean: mean over those sequences of Σ_t L·m / (Σ_t m + 1e-8)
 * - seq-mean-token-sum-norm (Dr.GRPO): Σ L·m / loss_scale_factor (default R), not divided by the number of sequences
 * An empty mask gives 0 with zero weights.
 */
export function aggregateLoss(losses: ArrayLike<number>, mask: ArrayLike<number>, rows: number, cols: number, mode: LossAggMode, options: AggregateOptions = {}): Aggregated {
  checkShape('losses', losses, rows, cols);
  checkShape('mask', mask, rows, cols);
  const weights = new Float32Array(rows * cols);
  const tokenCounts = new Float64Array(rows);
  let totalTokens = 0;
  for (let i = 0; i < rows; i++) {
    let c = 0;
    for (let t = 0; t < cols; t++) c += mask[i * cols + t];
    tokenCounts[i] = c;
    totalTokens += c;
  }
  const validSeqs = tokenCounts.reduce((a, c) => a + (c > 0 ? 1 : 0), 0);
  let value = 0;
  const assign = (rowWeight: (i: number) => number) => {
    for (let i = 0; i < rows; i++) {
      const w = rowWeight(i);
      if (w === 0) continue;
      for (let t = 0; t < cols; t++) {
        const k = i * cols + t;
        const wk = w * mask[k];
        weights[k] = wk;
        value += wk * losses[k];
      }
    }
  };
  switch (mode) {
    case 'token-mean':
      if (totalTokens > 0) assign(() => 1 / totalTokens);
      break;
    case 'seq-mean-token-sum':
      if (validSeqs > 0) assign((i) => (tokenCounts[i] > 0 ? 1 / validSeqs : 0));
      break;
    case 'seq-mean-token-mean':
      if (validSeqs > 0) assign((i) => (tokenCounts[i] > 0 ? 1 / (validSeqs * (tokenCounts[i] + SEQ_MEAN_EPS)) : 0));
      break;
    case 'seq-mean-token-sum-norm': {
      const factor = options.lossScaleFactor ?? cols;
      if (!(factor > 0)) throw new RangeError(`loss_scale_factor must be > 0, got ${factor}`);
      assign(() => 1 / factor);
      break;
    }
    default:
      throw new Error(`unknown loss_agg_mode "${String(mode)}" (use one of ${LOSS_AGG_MODES.join(', ')})`);
  }
  return { value, weights };
}
