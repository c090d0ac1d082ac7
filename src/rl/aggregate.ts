/**
 * `loss_agg_mode`: turns a per-token loss matrix L `[B,R]` and the response mask m into a scalar, and returns the
 * weights w with ∂scalar/∂L[i,t] = w[i,t] (the chain rule then gives ∂scalar/∂logπ = w ⊙ ∂L/∂logπ).
 *
 * The denominators belong to the whole mini-batch (one optimizer step), not to the micro-batch the losses come from:
 * the trainer computes them once with `aggregationDenominators` and passes them to every micro-batch, so the summed
 * micro-batch aggregates are the mini-batch aggregate and the gradient does not depend on how the mini-batch is
 * split (Hugging Face, "Fixing Gradient Accumulation", https://huggingface.co/blog/gradient_accumulation; verl
 * pull request 906, https://github.com/verl-project/verl/pull/906). Called without them, a batch is its own
 * mini-batch.
 */
import { checkShape } from './advantages.ts';
import { namesOf } from './registry.ts';

/** The 1e-8 verl adds to a sequence's token count in seq-mean-token-mean. */
export const SEQ_MEAN_EPS = 1e-8;

/** What a mini-batch's aggregate is divided by. */
export interface AggregationDenominators {
  /** Σ m over the mini-batch (token-mean). */
  tokens: number;
  /** Sequences of the mini-batch with at least one valid token (the seq-mean-* modes). */
  sequences: number;
}

export interface AggregateOptions {
  /** `loss_scale_factor` for seq-mean-token-sum-norm; defaults to the padded width R. */
  lossScaleFactor?: number;
  /** The whole mini-batch's denominators when `losses` is one micro-batch of it (default: this batch's own). */
  denominators?: AggregationDenominators;
}

export interface Aggregated {
  value: number;
  /** ∂value/∂L, `[B,R]` (0 where the mask is 0). */
  weights: Float32Array;
}

function rowTokenCounts(mask: ArrayLike<number>, rows: number, cols: number): Float64Array {
  const counts = new Float64Array(rows);
  for (let i = 0; i < rows; i++) for (let t = 0; t < cols; t++) counts[i] += mask[i * cols + t];
  return counts;
}

/** Token and sequence counts of a (mini-)batch's mask `[rows, cols]`. */
export function aggregationDenominators(mask: ArrayLike<number>, rows: number, cols: number): AggregationDenominators {
  checkShape('mask', mask, rows, cols);
  const counts = rowTokenCounts(mask, rows, cols);
  return { tokens: counts.reduce((a, c) => a + c, 0), sequences: counts.reduce((a, c) => a + (c > 0 ? 1 : 0), 0) };
}

/** What a mode's row weight is computed from: the mini-batch's denominators and this batch's rows. */
interface AggregationInput {
  tokens: number;
  sequences: number;
  /** n_i, the valid tokens of each row. */
  tokenCounts: Float64Array;
  /** `loss_scale_factor` (seq-mean-token-sum-norm). */
  factor: number;
}

/**
 * The aggregation modes by `actor.lossAggMode` name. Each gives the weight w_i of row i's valid tokens (∂value/∂L[i,t]
 * = w_i·m[i,t]), or null when the mini-batch has nothing to divide by (the value is then 0).
 * With N = Σ m and S = the number of sequences with ≥ 1 valid token, both over the mini-batch, and n_i = Σ_t m[i,t]:
 * - token-mean: Σ L·m / N — DAPO's token-level loss (arXiv 2503.14476, §3.3: 1/Σ_i|o_i| · Σ_i Σ_t)
 * - seq-mean-token-sum: Σ_i (Σ_t L·m) / S
 * - seq-mean-token-mean: Σ_i (Σ_t L·m / (n_i + 1e-8)) / S — GRPO's 1/G · Σ_i 1/|o_i| · Σ_t (DeepSeekMath, arXiv
 *   2402.03300, §4.1)
 * - seq-mean-token-sum-norm: Σ_i (Σ_t L·m) / (S · loss_scale_factor) — Dr.GRPO (arXiv 2503.20783): GRPO without the
 *   1/|o_i| length term, 1/G · Σ_i Σ_t, with a constant in place of the length (the paper's code divides by the
 *   generation budget; the default here is R). verl's legacy actor divides Σ L·m by the constant only and then by
 *   the number of micro-batches, which made the value depend on the split; dividing by S keeps the paper's 1/G.
 * The verl config page names the modes (https://verl.readthedocs.io/en/latest/examples/config.html, `loss_agg_mode`);
 * docs/grpo.md, "Aggregation".
 */
export const LOSS_AGGREGATIONS = {
  'token-mean': ({ tokens }) => (tokens > 0 ? () => 1 / tokens : null),
  'seq-mean-token-sum': ({ sequences }) => (sequences > 0 ? () => 1 / sequences : null),
  'seq-mean-token-mean': ({ sequences, tokenCounts }) => (sequences > 0 ? (i) => 1 / (sequences * (tokenCounts[i] + SEQ_MEAN_EPS)) : null),
  'seq-mean-token-sum-norm': ({ sequences, factor }) => {
    if (!(factor > 0)) throw new RangeError(`loss_scale_factor must be > 0, got ${factor}`);
    return sequences > 0 ? () => 1 / (sequences * factor) : null;
  },
} as const satisfies Record<string, (x: AggregationInput) => ((row: number) => number) | null>;

export type LossAggMode = keyof typeof LOSS_AGGREGATIONS;
export const LOSS_AGG_MODES = namesOf(LOSS_AGGREGATIONS);

/** The aggregate of per-token losses `[rows, cols]` under `mode` (`LOSS_AGGREGATIONS`); an empty mask gives 0 with zero weights. */
export function aggregateLoss(losses: ArrayLike<number>, mask: ArrayLike<number>, rows: number, cols: number, mode: LossAggMode, options: AggregateOptions = {}): Aggregated {
  checkShape('losses', losses, rows, cols);
  checkShape('mask', mask, rows, cols);
  if (!Object.hasOwn(LOSS_AGGREGATIONS, mode)) throw new Error(`unknown loss_agg_mode "${String(mode)}" (use one of ${LOSS_AGG_MODES.join(', ')})`);
  const tokenCounts = rowTokenCounts(mask, rows, cols);
  const { tokens, sequences } = options.denominators ?? aggregationDenominators(mask, rows, cols);
  const weights = new Float32Array(rows * cols);
  let value = 0;
  const rowWeight = LOSS_AGGREGATIONS[mode]({ tokens, sequences, tokenCounts, factor: options.lossScaleFactor ?? cols });
  if (rowWeight) {
    for (let i = 0; i < rows; i++) {
      if (tokenCounts[i] === 0) continue;
      const w = rowWeight(i);
      for (let t = 0; t < cols; t++) {
        const k = i * cols + t;
        const wk = w * mask[k];
        weights[k] = wk;
        value += wk * losses[k];
      }
    }
  }
  return { value, weights };
}
