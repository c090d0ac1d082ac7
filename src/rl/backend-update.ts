/**
 * The GRPO actor update and an SFT step expressed through the training-backend seam (backend.ts), i.e. through
 * nothing but Tinker-style `forward_backward` + `optim_step` calls. Same epochs × mini-batches × micro-batches as
 * `updateActor` (actor-update.ts), and the same verl aggregation: each response token's aggregation weight w (with
 * the MINI-BATCH's denominators, aggregate.ts) multiplies its advantage, so the backend's summed `ppo` loss
 * Σ −min(r·wA, clip(r)·wA) = Σ w · L_ppo is verl's aggregated clipped surrogate and its gradient is verl's.
 *
 * What the seam does not carry: the KL loss and the entropy bonus (Tinker's built-in losses have neither; put a KL
 * penalty into the reward, `algorithm.useKlInReward`, instead), verl's dual clip (`clipRatioC`, which only changes
 * tokens with A < 0 and r > c) and GSPO's sequence ratio. They are refused here with a message rather than dropped.
 */
import type { Batch } from '../rollout/batch.ts';
import { aggregateLoss, aggregationDenominators } from './aggregate.ts';
import { microBatches, miniBatchIndices, type ActorUpdateOptions } from './actor-update.ts';
import type { AdamParams, Datum, LossFn, TrainingBackend } from './backend.ts';
import { computePolicyLoss, resolveClip } from './policy-loss.ts';

/** One datum per batch row: the row's real tokens, each position's next token as target, `slot` = response index. */
export function rowDatums(batch: Batch): { datums: { tokens: number[]; targets: number[]; slots: number[] }[]; R: number } {
  const prompts = batch.tensor('prompts');
  const P = prompts.shape[1];
  const R = batch.tensor('responses').shape[1];
  const W = P + R;
  const ids = batch.tensor('input_ids').data;
  const att = batch.tensor('attention_mask').data;
  const datums = [];
  for (let i = 0; i < batch.size; i++) {
    const cols: number[] = [];
    for (let j = 0; j < W; j++) if (att[i * W + j]) cols.push(j);
    const tokens: number[] = [], targets: number[] = [], slots: number[] = [];
    for (let k = 0; k + 1 < cols.length; k++) {
      tokens.push(ids[i * W + cols[k]]);
      targets.push(ids[i * W + cols[k + 1]]);
      slots.push(cols[k + 1] >= P ? i * R + (cols[k + 1] - P) : -1);
    }
    datums.push({ tokens, targets, slots });
  }
  return { datums, R };
}

export interface BackendActorUpdateOptions extends ActorUpdateOptions {
  /** Adam's parameters for every optimizer step; the clip comes from `actor.gradClip`. */
  adam: Omit<AdamParams, 'gradClipNorm'>;
}

/**
 * `updateActor` through the seam. Returns `actor/pg_loss` (from the backend's `loss:sum`), the optimizer-step and
 * micro-batch counts, the PPO statistics `actor/pg_clipfrac`, `actor/pg_clipfrac_lower` and `actor/ppo_kl` (computed
 * here, as `updateActor` does, from the log-probs each forward_backward returns: the weights before that mini-batch's
 * step), and `actor/grad_norm` and `actor/skipped_steps` when the backend's optim_step reports `grad_norm`/`skipped`.
 */
export async function updateActorViaBackend(backend: TrainingBackend, batch: Batch, o: BackendActorUpdateOptions): Promise<Record<string, number>> {
  const a = o.actor;
  if (a.useKlLoss) throw new Error('actor update through a training backend: the KL loss (actor.useKlLoss) is not a Tinker loss; use algorithm.useKlInReward');
  if (a.entropyCoeff !== 0) throw new Error('actor update through a training backend: the entropy bonus (actor.entropyCoeff) is not a Tinker loss; set it to 0');
  if (o.temperature !== 1) throw new Error(`actor update through a training backend: the backend scores at temperature 1, the rollout used ${o.temperature}`);
  const lossFn: LossFn = a.policyLoss === 'vanilla' ? 'ppo' : a.policyLoss === 'sft' ? 'cross_entropy' : (() => {
    throw new Error(`actor update through a training backend: policy loss '${a.policyLoss}' has no Tinker counterpart (vanilla → ppo, sft → cross_entropy)`);
  })();
  const clip = resolveClip({ clipRatio: a.clipRatio, clipRatioLow: a.clipRatioLow, clipRatioHigh: a.clipRatioHigh, clipRatioC: a.clipRatioC });
  const config = lossFn === 'ppo' ? { clip_low_threshold: 1 - clip.low, clip_high_threshold: 1 + clip.high } : undefined;
  const losses: number[] = [];
  const stats: { clipFrac: number; clipFracLower: number; ppoKl: number }[] = [];
  const gradNorms: number[] = [];
  let skipped = 0;
  let micros = 0;
  const minis = miniBatchIndices(batch.size, o.miniBatchRows, o.keep).filter((rows) => rows.length > 0);
  for (let epoch = 0; epoch < a.ppoEpochs; epoch++) {
    for (const rows of minis) {
      const mini = batch.select({ indices: rows });
      const R = mini.tensor('responses').shape[1];
      const denominators = aggregationDenominators(mini.tensor('response_mask').data, mini.size, R);
      let loss = 0;
      const st = { clipFrac: 0, clipFracLower: 0, ppoKl: 0 };
      for (const micro of microBatches(mini, a)) {
        const B = micro.size;
        const mask = micro.tensor('response_mask').data;
        const mode = a.lossAggMode;
        // The weights do not depend on the losses: aggregate a zero matrix to read them off.
        const w = aggregateLoss(new Float32Array(B * R), mask, B, R, mode, { lossScaleFactor: o.lossScaleFactor, denominators }).weights;
        const adv = micro.tensor('advantages').data;
        const old = micro.tensor('old_log_probs').data;
        const isw = micro.hasTensor('rollout_is_weights') ? micro.tensor('rollout_is_weights').data : undefined;
        // A row without two real tokens has nothing to score.
        const scored = rowDatums(micro).datums.filter((d) => d.tokens.length > 0);
        const data: Datum[] = scored.map((d) => {
          const weights = d.slots.map((s) => (s >= 0 ? w[s] : 0));
          if (lossFn === 'cross_entropy') return { tokens: d.tokens, lossInputs: { target_tokens: d.targets, weights } };
          return {
            tokens: d.tokens,
            lossInputs: {
              target_tokens: d.targets,
              logprobs: d.slots.map((s) => (s >= 0 ? old[s] : 0)),
              advantages: d.slots.map((s) => (s >= 0 ? w[s] * adv[s] * (isw ? isw[s] : 1) : 0)),
            },
          };
        });
        micros++;
        if (data.length === 0) continue;
        const r = await backend.forwardBackward(data, lossFn, config);
        loss += r.metrics['loss:sum'];
        // The PPO statistics of the returned log-probs, token-weighted over the mini-batch as in updateActor.
        const cur = new Float32Array(B * R);
        scored.forEach((d, j) => d.slots.forEach((s, k) => {
          if (s >= 0) cur[s] = r.logprobs[j][k];
        }));
        const pg = computePolicyLoss(a.policyLoss, { logprobs: cur, oldLogprobs: old, advantages: adv, responseMask: mask, rows: B, cols: R, isWeights: isw },
          { clipRatio: a.clipRatio, clipRatioLow: a.clipRatioLow, clipRatioHigh: a.clipRatioHigh, clipRatioC: a.clipRatioC });
        let tokens = 0;
        for (let k = 0; k < B * R; k++) tokens += mask[k];
        const share = denominators.tokens > 0 ? tokens / denominators.tokens : 0;
        st.clipFrac += share * pg.stats.clipFrac;
        st.clipFracLower += share * pg.stats.clipFracLower;
        st.ppoKl += share * pg.stats.approxKl;
      }
      const step = await backend.optimStep({ ...o.adam, gradClipNorm: a.gradClip > 0 ? a.gradClip : 0 });
      if (typeof step.metrics.grad_norm === 'number') gradNorms.push(step.metrics.grad_norm);
      if (step.metrics.skipped) skipped++;
      losses.push(loss);
      stats.push(st);
    }
  }
  const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((x, y) => x + y, 0) / xs.length : 0);
  const out: Record<string, number> = {
    'actor/pg_loss': mean(losses),
    'actor/pg_clipfrac': mean(stats.map((s) => s.clipFrac)),
    'actor/pg_clipfrac_lower': mean(stats.map((s) => s.clipFracLower)),
    'actor/ppo_kl': mean(stats.map((s) => s.ppoKl)),
    'actor/optimizer_steps': losses.length,
    'actor/micro_batches': micros,
    'actor/skipped_steps': skipped,
  };
  if (gradNorms.length === losses.length && gradNorms.length > 0) out['actor/grad_norm'] = mean(gradNorms);
  return out;
}
