/**
 * Learning-rate schedule for SFT: linear warmup, then cosine decay to `minLrRatio · lr`.
 *
 *   step < warmup:  lr · (step + 1) / warmup                 (the first update already moves; none runs at lr 0)
 *   afterwards:     lrMin + (lr − lrMin) · ½ (1 + cos(π · p)),  p = (step − warmup) / max(1, total − warmup − 1)
 *
 * `step` is the 0-based index of the optimizer update, so the last update (step = total − 1) runs at exactly lrMin
 * and the first post-warmup update at exactly lr. Steps past the end stay at lrMin.
 */

export type LrScheduleKind = 'cosine' | 'linear' | 'constant';

export interface LrSchedule {
  /** Peak learning rate. */
  lr: number;
  /** Warmup updates (0 = none). */
  warmupSteps: number;
  /** Total optimizer updates the schedule spans. */
  totalSteps: number;
  /** Final lr as a fraction of the peak, in [0, 1]. */
  minLrRatio: number;
  /** Decay shape after warmup (default cosine). */
  kind?: LrScheduleKind;
}

export function validateSchedule(s: LrSchedule): void {
  if (!(Number.isFinite(s.lr) && s.lr > 0)) throw new RangeError(`lr schedule: lr must be a positive number, got ${s.lr}`);
  if (!(Number.isInteger(s.warmupSteps) && s.warmupSteps >= 0)) throw new RangeError(`lr schedule: warmupSteps must be an integer ≥ 0, got ${s.warmupSteps}`);
  if (!(Number.isInteger(s.totalSteps) && s.totalSteps >= 1)) throw new RangeError(`lr schedule: totalSteps must be an integer ≥ 1, got ${s.totalSteps}`);
  if (!(s.minLrRatio >= 0 && s.minLrRatio <= 1)) throw new RangeError(`lr schedule: minLrRatio must be in [0, 1], got ${s.minLrRatio}`);
}

/** The learning rate of optimizer update `step` (0-based). */
export function lrAt(step: number, s: LrSchedule): number {
  if (!(Number.isInteger(step) && step >= 0)) throw new RangeError(`lr schedule: step must be an integer ≥ 0, got ${step}`);
  validateSchedule(s);
  if (step < s.warmupSteps) return (s.lr * (step + 1)) / s.warmupSteps;
  const kind = s.kind ?? 'cosine';
  if (kind === 'constant') return s.lr;
  const lrMin = s.lr * s.minLrRatio;
  const span = Math.max(1, s.totalSteps - s.warmupSteps - 1);
  const p = Math.min(1, (step - s.warmupSteps) / span);
  if (kind === 'linear') return s.lr - (s.lr - lrMin) * p;
  return lrMin + (s.lr - lrMin) * 0.5 * (1 + Math.cos(Math.PI * p));
}
