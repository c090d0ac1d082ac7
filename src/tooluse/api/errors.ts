/**
 * `EpisodeError`: a failure that is not the agent's fault (a tool server died, the reward threw, a task file is bad).
 * The agent loop records the episode as `terminationReason: 'env_error'` with the message, and the GRPO trainer
 * leaves it out of its groups and counts it (`rollout/env_errors`).
 *
 * `instanceof EpisodeError` also holds for an EpisodeError made by another copy of longrun (a user's env module may
 * import its own), through a brand registered with `Symbol.for`.
 */
const BRAND = Symbol.for('longrun.EpisodeError');

export class EpisodeError extends Error {
  /** The id of the env the failure happened in, when known. */
  readonly env: string | undefined;

  constructor(message: string, options: { cause?: unknown; env?: string } = {}) {
    super(message, options.cause !== undefined ? { cause: options.cause } : undefined);
    this.name = 'EpisodeError';
    this.env = options.env;
    Object.defineProperty(this, BRAND, { value: true, enumerable: false });
  }

  static override [Symbol.hasInstance](x: unknown): boolean {
    return typeof x === 'object' && x !== null && (x as Record<symbol, unknown>)[BRAND] === true;
  }
}

/** The message of any thrown value. */
export function errorMessage(e: unknown): string {
  if (e instanceof Error) return e.message;
  if (typeof e === 'string') return e;
  try {
    return JSON.stringify(e) ?? String(e);
  } catch {
    return String(e);
  }
}

/**
 * `e` as an EpisodeError that names env `env`: an EpisodeError of that env is kept; any other error (an EpisodeError
 * without the env, e.g. a source's or a reward helper's, included) is wrapped, `what` saying what failed.
 */
export function asEpisodeError(e: unknown, env: string, what: string): EpisodeError {
  if (e instanceof EpisodeError) return e.env === env ? e : new EpisodeError(`env ${env}: ${what}: ${e.message}`, { cause: e, env });
  return new EpisodeError(`env ${env}: ${what}: ${errorMessage(e)}`, { cause: e, env });
}
