/** Error classes mirroring `gymnasium.error`. All derive from `GymError` so callers can catch the family. */

export class GymError extends Error {
  constructor(message: string) {
    super(message);
    this.name = new.target.name;
  }
}

/** An id that does not parse as `[namespace/]name[-vN]`, or other registry misuse. */
export class RegistrationError extends GymError {}
/** No registered env with the requested id. */
export class UnregisteredEnv extends GymError {}
export class NamespaceNotFound extends UnregisteredEnv {}
export class NameNotFound extends UnregisteredEnv {}
export class VersionNotFound extends UnregisteredEnv {}
/** A newer version of the env exists (or only the default version does). */
export class DeprecatedEnv extends GymError {}
/** `step` (or `render`) called before `reset`. */
export class ResetNeeded extends GymError {}
/** An action outside the action space (raised by envs that check). */
export class InvalidAction extends GymError {}
/** A method called on a closed vector environment. */
export class ClosedEnvironmentError extends GymError {}
/** `*Async` called while another async call is pending. */
export class AlreadyPendingCallError extends GymError {}
/** `*Wait` called without a matching `*Async`. */
export class NoAsyncCallError extends GymError {}
/** Raised by `checkEnv` when the environment fails a check; carries the full report. */
export class EnvCheckError extends GymError {}
