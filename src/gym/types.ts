/** Types shared by envs, wrappers and vector envs. */

/** The `info` object returned by `reset` and `step` (a Python dict). */
export type Info = Record<string, unknown>;

/** `step`'s result: `[obs, reward, terminated, truncated, info]`. */
export type StepResult<Obs> = [obs: Obs, reward: number, terminated: boolean, truncated: boolean, info: Info];

/** `reset`'s result: `[obs, info]`. */
export type ResetResult<Obs> = [obs: Obs, info: Info];

/** Keyword arguments of `reset` (keyword-only in Gymnasium). */
export interface ResetOptions {
  /** Re-seeds `npRandom` when a non-negative integer; `null`/absent keeps the current generator. */
  seed?: number | null;
  /** Env-specific reset options. */
  options?: Record<string, unknown> | null;
}

/** How a vector env resets finished sub-envs (Gymnasium's `AutoresetMode`, stored in `metadata.autoresetMode`). */
export type AutoresetMode = 'next-step' | 'same-step' | 'disabled';
export const AutoresetMode = {
  NEXT_STEP: 'next-step',
  SAME_STEP: 'same-step',
  DISABLED: 'disabled',
} as const satisfies Record<string, AutoresetMode>;

/** Env metadata (Gymnasium's `metadata` dict, camelCased). */
export interface EnvMetadata {
  /** Render modes the env supports; `renderMode` must be one of them (or null). */
  renderModes: readonly string[];
  renderFps?: number | null;
  autoresetMode?: AutoresetMode;
  [key: string]: unknown;
}
