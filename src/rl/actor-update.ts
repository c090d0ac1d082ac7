/**
 * The actor update of one GRPO step: `ppoEpochs` passes over the batch, each split into mini-batches of
 * `ppoMiniBatchSize` groups (one optimizer step each), each mini-batch run as micro-batches (forward, loss, backward;
 * the gradients accumulate). This is PPO's K epochs of minibatch SGD on one batch of samples (Schulman et al.,
 * arXiv 1707.06347, Algorithm 1), with verl's batch-size names
 * (https://verl.readthedocs.io/en/latest/examples/config.html: `ppo_mini_batch_size`, `ppo_micro_batch_size_per_gpu`,
 * `use_dynamic_bsz` + `ppo_max_token_len_per_gpu`, `ppo_epochs`).
 *
 * π_old is the batch's `old_log_probs`, fixed for the whole update: after the first optimizer step the later
 * mini-batches and epochs are off-policy, so their ratio π/π_old moves away from 1 and the clip engages. In bypass
 * mode (`rolloutCorrection.bypassMode`) π_old is the rollout's log-probs, which is the same policy.
 *
 * The loss of a mini-batch: the clipped surrogate with an entropy bonus (PPO, arXiv 1707.06347, Eq. 9, without the
 * value term) and GRPO's KL loss to the reference (DeepSeekMath, arXiv 2402.03300, §4.1):
 *   agg(pg_loss) + kl_loss_coef · agg(kl(π, π_ref)) − entropy_coeff · agg(H)
 * where agg divides by the MINI-BATCH's token or sequence count (aggregate.ts), so each micro-batch contributes its
 * share and the summed gradient is the mini-batch gradient however the rows are split.
 *
 * Row selection (`keep`, rejection-sampling fine-tuning): each mini-batch covers the same rows as without it, and the
 * rows not kept are dropped from it before any forward, so the denominators count only kept rows and the policy never
 * scores the others. A mini-batch with no kept row takes no optimizer step at all (not a zero-gradient step, which
 * AdamW's momentum and weight decay would still turn into a move).
 *
 * Zero-advantage rows (`actor.skipZeroAdvantageRows`): when a row's gradient is exactly zero (advantage 0 on every
 * token, a loss proportional to the advantage, no KL loss or entropy bonus) it is not scored at all, but it stays in
 * the mini-batch's denominators, so the optimizer step is the one the whole mini-batch would take.
 *
 * A value head on the trunk (`value`, critic.type 'head', src/rl/critic.ts): every micro-batch's forward also returns
 * the head's values, the loss gains `valueCoef` × the value loss (value-loss.ts, token-mean over the mini-batch's
 * sampled tokens; PPO's L^CLIP − c1·L^VF, arXiv 1707.06347, Eq. 9), every row is scored, and each optimizer step
 * steps the head's own AdamW after the policy's.
 */
import type { Batch } from '../rollout/batch.ts';
import type { Critic } from './critic.ts';
import { aggregateLoss, aggregationDenominators, type AggregationDenominators } from './aggregate.ts';
import type { TrainerConfig } from './config.ts';
import { klPenalty } from './kl.ts';
import type { Policy } from './policy.ts';
import { computePolicyLoss, policyLossAggregation } from './policy-loss.ts';
import { computeValueLoss, type ValueLossOptions } from './value-loss.ts';

export interface ActorUpdateOptions {
  actor: TrainerConfig['actor'];
  /** Rows (trajectories) per mini-batch: `ppoMiniBatchSize` groups × n. */
  miniBatchRows: number;
  /** The rollout temperature (log-probs are scored at it). */
  temperature: number;
  /** `loss_scale_factor` of seq-mean-token-sum-norm. */
  lossScaleFactor: number;
  /** Per row of the batch: train on it (≠ 0) or drop it (0). Default: every row. */
  keep?: ArrayLike<number>;
  /** The value head trained jointly (critic.type 'head'); the batch then holds `values` and `returns`. */
  value?: { critic: Critic; loss: ValueLossOptions; coef: number; gradClip: number };
}

/** One mini-batch's loss terms (its aggregates, summed over its micro-batches) and the token-weighted PPO statistics. */
interface MiniBatchStats {
  /** Rows scored (forward and backward) of the mini-batch's rows. */
  scoredRows: number;
  rows: number;
  pgLoss: number;
  klLoss: number;
  entropy: number;
  clipFrac: number;
  clipFracLower: number;
  ppoKl: number;
  micro: number;
  valueLoss: number;
  vfClipFrac: number;
}

const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

/** Runs the update; returns the `actor/*` metrics (means over the optimizer steps). */
export async function updateActor(policy: Policy, batch: Batch, o: ActorUpdateOptions): Promise<Record<string, number>> {
  const a = o.actor;
  const perStep: MiniBatchStats[] = [];
  const gradNorms: number[] = [];
  const criticNorms: number[] = [];
  let skipped = 0;
  const minis = miniBatchIndices(batch.size, o.miniBatchRows, o.keep).filter((rows) => rows.length > 0);
  for (let epoch = 0; epoch < a.ppoEpochs; epoch++) {
    for (const rows of minis) {
      const mini = batch.select({ indices: rows });
      policy.zeroGrad();
      o.value?.critic.zeroGrad();
      perStep.push(await accumulateMiniBatch(policy, mini, o));
      const r = await policy.optimizerStep({ gradClip: a.gradClip });
      gradNorms.push(r.gradNorm);
      if (r.skipped) skipped++;
      if (o.value) criticNorms.push((await o.value.critic.optimizerStep({ gradClip: o.value.gradClip })).gradNorm);
    }
  }
  const avg = (f: (s: MiniBatchStats) => number) => mean(perStep.map(f));
  const out: Record<string, number> = {
    'actor/pg_loss': avg((s) => s.pgLoss),
    'actor/pg_clipfrac': avg((s) => s.clipFrac),
    'actor/pg_clipfrac_lower': avg((s) => s.clipFracLower),
    'actor/ppo_kl': avg((s) => s.ppoKl),
    'actor/grad_norm': mean(gradNorms),
    'actor/optimizer_steps': perStep.length,
    'actor/micro_batches': perStep.reduce((x, s) => x + s.micro, 0),
    'actor/skipped_steps': skipped,
    'actor/scored_rows_share': perStep.reduce((x, s) => x + s.scoredRows, 0) / Math.max(1, perStep.reduce((x, s) => x + s.rows, 0)),
  };
  if (a.useKlLoss) out['actor/kl_loss'] = avg((s) => s.klLoss);
  if (a.entropyCoeff !== 0) out['actor/entropy_loss'] = avg((s) => s.entropy);
  if (o.value) {
    out['critic/value_loss'] = avg((s) => s.valueLoss);
    out['critic/vf_clipfrac'] = avg((s) => s.vfClipFrac);
    out['critic/grad_norm'] = mean(criticNorms);
  }
  return out;
}

/**
 * The rows of each mini-batch: consecutive runs of `miniBatchRows` rows (the last may be shorter), without the rows
 * `keep` drops; a mini-batch may come out empty.
 */
export function miniBatchIndices(rows: number, miniBatchRows: number, keep?: ArrayLike<number>): number[][] {
  if (!(Number.isInteger(miniBatchRows) && miniBatchRows >= 1)) throw new RangeError(`actor update: miniBatchRows must be a positive integer, got ${miniBatchRows}`);
  if (keep && keep.length !== rows) throw new Error(`actor update: keep has ${keep.length} entries for ${rows} rows`);
  const out: number[][] = [];
  for (let start = 0; start < rows; start += miniBatchRows) {
    const mini: number[] = [];
    for (let i = start; i < Math.min(start + miniBatchRows, rows); i++) if (!keep || keep[i]) mini.push(i);
    out.push(mini);
  }
  return out;
}

/** Forward + backward of every micro-batch of one mini-batch, with the mini-batch's aggregation denominators. */
async function accumulateMiniBatch(policy: Policy, mini: Batch, o: ActorUpdateOptions): Promise<MiniBatchStats> {
  const R = mini.tensor('responses').shape[1];
  const denominators = aggregationDenominators(mini.tensor('response_mask').data, mini.size, R);
  const scored = o.value ? Array.from({ length: mini.size }, (_, i) => i) : scoredRows(mini, o.actor);
  const s: MiniBatchStats = { scoredRows: scored.length, rows: mini.size, pgLoss: 0, klLoss: 0, entropy: 0, clipFrac: 0, clipFracLower: 0, ppoKl: 0, micro: 0, valueLoss: 0, vfClipFrac: 0 };
  if (scored.length === 0) return s;
  const work = scored.length === mini.size ? mini : mini.select({ indices: scored });
  let scoredTokens = 0;
  for (const x of work.tensor('response_mask').data) scoredTokens += x;
  for (const micro of microBatches(work, o.actor)) {
    const m = await microBatchBackward(policy, micro, denominators, o);
    s.pgLoss += m.pgLoss;
    s.klLoss += m.klLoss;
    s.entropy += m.entropy;
    // PPO statistics are token means over the scored rows: each micro-batch weighs in by its share of their tokens.
    const share = scoredTokens > 0 ? m.tokens / scoredTokens : 0;
    s.clipFrac += share * m.clipFrac;
    s.clipFracLower += share * m.clipFracLower;
    s.ppoKl += share * m.ppoKl;
    s.valueLoss += m.valueLoss;
    s.vfClipFrac += share * m.vfClipFrac;
    s.micro++;
  }
  return s;
}

/**
 * The rows of a mini-batch to score: all of them, unless `skipZeroAdvantageRows` applies (a policy loss proportional
 * to the advantage, no KL loss, no entropy bonus), in which case the rows with a non-zero advantage on some response
 * token.
 */
export function scoredRows(mini: Batch, a: TrainerConfig['actor']): number[] {
  const all = Array.from({ length: mini.size }, (_, i) => i);
  if (!a.skipZeroAdvantageRows || a.useKlLoss || a.entropyCoeff !== 0 || !ADVANTAGE_LINEAR.has(a.policyLoss)) return all;
  const adv = mini.tensor('advantages').data, mask = mini.tensor('response_mask').data;
  const R = mini.tensor('responses').shape[1];
  return all.filter((i) => {
    for (let t = 0; t < R; t++) if (mask[i * R + t] && adv[i * R + t] !== 0) return true;
    return false;
  });
}

/** Policy losses whose gradient is the advantage times something finite: a row with advantage 0 adds exactly 0. */
const ADVANTAGE_LINEAR: ReadonlySet<string> = new Set(['vanilla', 'gspo']);

async function microBatchBackward(policy: Policy, micro: Batch, denominators: AggregationDenominators, o: ActorUpdateOptions) {
  const a = o.actor;
  const B = micro.size;
  const R = micro.tensor('responses').shape[1];
  const mask = micro.tensor('response_mask').data;
  const agg = { lossScaleFactor: o.lossScaleFactor, denominators };
  const wantEntropy = a.entropyCoeff !== 0;
  const cur = await policy.logprobs(micro, { temperature: o.temperature, grad: true, entropy: wantEntropy, ...(o.value ? { values: true } : {}) });
  const pg = computePolicyLoss(a.policyLoss, {
    logprobs: cur.logprobs,
    oldLogprobs: micro.tensor('old_log_probs').data,
    advantages: micro.tensor('advantages').data,
    responseMask: mask,
    rows: B,
    cols: R,
    isWeights: micro.hasTensor('rollout_is_weights') ? micro.tensor('rollout_is_weights').data : undefined,
  }, { clipRatio: a.clipRatio, clipRatioLow: a.clipRatioLow, clipRatioHigh: a.clipRatioHigh, clipRatioC: a.clipRatioC });
  const pgAgg = aggregateLoss(pg.losses, mask, B, R, policyLossAggregation(a.policyLoss, a.lossAggMode), agg);
  const dLogprobs = new Float32Array(B * R);
  for (let k = 0; k < B * R; k++) dLogprobs[k] = pgAgg.weights[k] * pg.dLogprob[k];
  let klLoss = 0;
  if (a.useKlLoss) {
    const kl = klPenalty(cur.logprobs, micro.tensor('ref_log_prob').data, mask, B, R, a.klLossType);
    const klAgg = aggregateLoss(kl.values, mask, B, R, a.lossAggMode, agg);
    for (let k = 0; k < B * R; k++) dLogprobs[k] += a.klLossCoef * klAgg.weights[k] * kl.dLogprob[k];
    klLoss = klAgg.value;
  }
  let dEntropy: Float32Array | undefined;
  let entropy = 0;
  if (wantEntropy) {
    const ent = aggregateLoss(cur.entropy!, mask, B, R, a.lossAggMode, agg);
    dEntropy = new Float32Array(B * R);
    for (let k = 0; k < B * R; k++) dEntropy[k] = -a.entropyCoeff * ent.weights[k];
    entropy = ent.value;
  }
  let dValues: Float32Array | undefined;
  let valueLoss = 0, vfClipFrac = 0;
  if (o.value) {
    if (!cur.values) throw new Error('actor update: the policy returned no values for the value head (critic.type head)');
    const vl = computeValueLoss(cur.values, micro.tensor('values').data, micro.tensor('returns').data, mask, o.value.loss);
    const vAgg = aggregateLoss(vl.losses, mask, B, R, 'token-mean', agg);
    dValues = new Float32Array(B * R);
    for (let k = 0; k < B * R; k++) dValues[k] = o.value.coef * vAgg.weights[k] * vl.dValues[k];
    valueLoss = vAgg.value;
    vfClipFrac = vl.clipFrac;
  }
  await (dValues ? policy.backward(dLogprobs, dEntropy, dValues) : policy.backward(dLogprobs, dEntropy));
  let tokens = 0;
  for (let k = 0; k < B * R; k++) tokens += mask[k];
  return { pgLoss: pgAgg.value, klLoss, entropy, tokens, clipFrac: pg.stats.clipFrac, clipFracLower: pg.stats.clipFracLower, ppoKl: pg.stats.approxKl, valueLoss, vfClipFrac };
}

/**
 * Fixed-size micro-batches (`ppoMicroBatchSize`), or with `ppoMaxTokenLenPerMicro` (verl's dynamic batch size): k =
 * min(rows, ceil(total tokens / budget)) groups balanced by tokens (longest row first onto the lightest group), each
 * kept in the original row order.
 */
export function microBatches(mini: Batch, a: TrainerConfig['actor']): Batch[] {
  if (a.ppoMaxTokenLenPerMicro === undefined) return mini.split(Math.min(a.ppoMicroBatchSize ?? mini.size, mini.size));
  return microBatchRows(mini, a).map((rows) => mini.select({ indices: rows }));
}

/**
 * A forward that only scores (π_old, the sampler-vs-trainer check, the reference, the critic's values) run micro-batch
 * by micro-batch under the actor's budget (`ppoMaxTokenLenPerMicro` or `ppoMicroBatchSize`), as verl's
 * `log_prob_max_token_len_per_gpu` does: a whole step's batch in one forward (64 retail episodes, over 300k tokens)
 * does not fit the 4 GiB Wasm memory. Each result is `[rows, R]` per micro-batch, stitched back in the batch's row order.
 */
export async function scoreInMicroBatches<T extends { [K in keyof T]: Float32Array | undefined }>(batch: Batch, a: TrainerConfig['actor'], score: (micro: Batch) => Promise<T>): Promise<T> {
  const chunks = microBatchRows(batch, a);
  if (chunks.length === 1) return score(batch);
  const R = batch.tensor('responses').shape[1];
  const out: Record<string, Float32Array | undefined> = {};
  for (const rows of chunks) {
    const part = await score(batch.select({ indices: rows }));
    for (const [key, values] of Object.entries(part) as [string, Float32Array | undefined][]) {
      if (values === undefined) continue;
      if (values.length !== rows.length * R) throw new Error(`scoreInMicroBatches: '${key}' has ${values.length} values for ${rows.length} rows of ${R}`);
      const dst = (out[key] ??= new Float32Array(batch.size * R));
      rows.forEach((row, i) => dst.set(values.subarray(i * R, (i + 1) * R), row * R));
    }
  }
  return out as unknown as T;
}

/** The row indices of `microBatches`: consecutive runs of `ppoMicroBatchSize`, or token-balanced groups (ascending within each). */
function microBatchRows(mini: Batch, a: TrainerConfig['actor']): number[][] {
  const budget = a.ppoMaxTokenLenPerMicro;
  if (budget === undefined) {
    const k = Math.min(a.ppoMicroBatchSize ?? mini.size, mini.size);
    return Array.from({ length: Math.ceil(mini.size / k) }, (_, c) => Array.from({ length: Math.min(k, mini.size - c * k) }, (_, i) => c * k + i));
  }
  const att = mini.tensor('attention_mask');
  const W = att.shape[1];
  const lengths = Array.from({ length: mini.size }, (_, i) => {
    let n = 0;
    for (let j = 0; j < W; j++) n += att.data[i * W + j];
    return n;
  });
  const total = lengths.reduce((x, y) => x + y, 0);
  const k = Math.min(mini.size, Math.ceil(total / budget));
  const groups = Array.from({ length: k }, () => ({ load: 0, rows: [] as number[] }));
  const order = lengths.map((_, i) => i).sort((x, y) => lengths[y] - lengths[x] || x - y);
  for (const i of order) {
    const g = groups.reduce((best, cur) => (cur.load < best.load ? cur : best));
    g.load += lengths[i];
    g.rows.push(i);
  }
  return groups.filter((g) => g.rows.length > 0).map((g) => g.rows.sort((x, y) => x - y));
}
