/**
 * The sampler-vs-trainer log-prob check (config: `algorithm.rolloutCorrection.checkEvery`, `.alarm`; docs/grpo.md,
 * "Rollout correction"). The engine reports the log-prob of each token it sampled; the trainer's forward over the same
 * tokens, at the same temperature and with the weights the engine sampled from, should give the same numbers. A gap
 * means the two disagree (weights not synced, another temperature or chat template, different numerics), and the
 * importance ratio of every update is then off by it. With π_old recomputed by the trainer (the default) the check
 * costs nothing; in bypass mode and RFT π_old is the engine's, so the trainer runs a scoring-only forward for it on
 * the steps it checks.
 */

export interface LogprobDrift {
  /** max |trainer − engine| over the response tokens the model wrote (nats). */
  max: number;
  /** mean |trainer − engine| over those tokens. */
  mean: number;
  /** Tokens compared. */
  tokens: number;
}

/** |Δ log-prob| between the engine's (`rollout`) and the trainer's (`recomputed`) over the tokens where `mask` is set. */
export function logprobDrift(rollout: ArrayLike<number>, recomputed: ArrayLike<number>, mask: ArrayLike<number>): LogprobDrift {
  if (rollout.length !== mask.length || recomputed.length !== mask.length) {
    throw new Error(`logprob check: ${rollout.length} engine and ${recomputed.length} trainer log-probs for a mask of ${mask.length}`);
  }
  let max = 0, sum = 0, tokens = 0;
  for (let k = 0; k < mask.length; k++) {
    if (!mask[k]) continue;
    const d = Math.abs(recomputed[k] - rollout[k]);
    if (!(d <= max)) max = d; // NaN wins, so a broken forward shows
    sum += d;
    tokens++;
  }
  return { max, mean: tokens > 0 ? sum / tokens : 0, tokens };
}

/** Whether step `step` (1-based) runs the extra forward: step 1 and every `every` steps; never for `every` 0. */
export function isCheckStep(step: number, every: number): boolean {
  return every > 0 && (step === 1 || step % every === 0);
}

/** The log line of an alarm. */
export function logprobAlarmLine(step: number, drift: LogprobDrift, alarm: number): string {
  return `step ${step}: LOG-PROB ALARM: the trainer's log-probs of the ${drift.tokens} sampled tokens differ from the engine's by up to ${drift.max.toFixed(4)} nats (mean ${drift.mean.toFixed(4)}), above algorithm.rolloutCorrection.alarm ${alarm}; the sampler and the trainer disagree (weights not synced, another temperature or template, numerics)`;
}
