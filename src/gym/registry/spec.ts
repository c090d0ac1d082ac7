/** `EnvSpec` and `WrapperSpec` (Gymnasium's registration dataclasses) with JSON round-trip and `pprint`. */
import type { Env } from '../env.ts';
import { RegistrationError } from '../errors.ts';
import { parseEnvId } from './env-id.ts';

/** Builds an env from the spec's kwargs merged with `make`'s (including `renderMode`). */
export type EnvCreator = (kwargs: Record<string, unknown>) => Env;
/** Builds a wrapper around `env` from its kwargs. */
export type WrapperCreator = (env: Env, kwargs: Record<string, unknown>) => Env;

const entryPoints = new Map<string, EnvCreator>();
const wrapperEntryPoints = new Map<string, WrapperCreator>();

/**
 * Names a factory so specs can refer to it by string (and so survive JSON). `register` names function entry
 * points after the env id automatically.
 */
export function registerEntryPoint(name: string, creator: EnvCreator): void {
  if (typeof creator !== 'function') throw new TypeError(`registerEntryPoint: "${name}" must be a function`);
  entryPoints.set(name, creator);
}

/** Names a wrapper factory so `WrapperSpec.entryPoint` can refer to it. Built-in wrappers are pre-registered. */
export function registerWrapperEntryPoint(name: string, creator: WrapperCreator): void {
  wrapperEntryPoints.set(name, creator);
}

export function resolveWrapperEntryPoint(name: string): WrapperCreator {
  const w = wrapperEntryPoints.get(name);
  if (!w) throw new RegistrationError(`Unknown wrapper entry point "${name}"; known: ${[...wrapperEntryPoints.keys()].join(', ') || 'none'}`);
  return w;
}

/** The name `creator` was registered under, preferring `preferred` (the spec's own id). */
function entryPointName(creator: EnvCreator, preferred?: string): string | null {
  if (preferred !== undefined && entryPoints.get(preferred) === creator) return preferred;
  for (const [name, fn] of entryPoints) if (fn === creator) return name;
  return null;
}

/** A wrapper applied by `make` after the default ones (Gymnasium's `WrapperSpec`). */
export interface WrapperSpec {
  name: string;
  entryPoint: string;
  kwargs: Record<string, unknown> | null;
}

export interface EnvSpecInit {
  id: string;
  /** A factory, or the name of one given to `registerEntryPoint`. */
  entryPoint: EnvCreator | string | null;
  rewardThreshold?: number | null;
  nondeterministic?: boolean;
  maxEpisodeSteps?: number | null;
  orderEnforce?: boolean;
  disableEnvChecker?: boolean;
  kwargs?: Record<string, unknown>;
  additionalWrappers?: readonly WrapperSpec[];
  vectorEntryPoint?: string | null;
}

export class EnvSpec {
  readonly id: string;
  entryPoint: EnvCreator | string | null;
  rewardThreshold: number | null;
  nondeterministic: boolean;
  maxEpisodeSteps: number | null;
  orderEnforce: boolean;
  disableEnvChecker: boolean;
  kwargs: Record<string, unknown>;
  additionalWrappers: WrapperSpec[];
  vectorEntryPoint: string | null;
  readonly namespace: string | null;
  readonly name: string;
  readonly version: number | null;

  constructor(init: EnvSpecInit) {
    const { namespace, name, version } = parseEnvId(init.id);
    this.id = init.id;
    this.entryPoint = init.entryPoint;
    this.rewardThreshold = init.rewardThreshold ?? null;
    this.nondeterministic = init.nondeterministic ?? false;
    this.maxEpisodeSteps = init.maxEpisodeSteps ?? null;
    this.orderEnforce = init.orderEnforce ?? true;
    this.disableEnvChecker = init.disableEnvChecker ?? false;
    this.kwargs = { ...(init.kwargs ?? {}) };
    this.additionalWrappers = [...(init.additionalWrappers ?? [])];
    this.vectorEntryPoint = init.vectorEntryPoint ?? null;
    this.namespace = namespace;
    this.name = name;
    this.version = version;
    if (this.maxEpisodeSteps !== null && !(Number.isSafeInteger(this.maxEpisodeSteps) && (this.maxEpisodeSteps > 0 || this.maxEpisodeSteps === -1))) {
      throw new RegistrationError(`maxEpisodeSteps must be a positive integer (or -1 to disable), got ${this.maxEpisodeSteps}`);
    }
  }

  /** The factory this spec builds with. */
  resolveEntryPoint(): EnvCreator {
    if (typeof this.entryPoint === 'function') return this.entryPoint;
    if (typeof this.entryPoint === 'string') {
      const fn = entryPoints.get(this.entryPoint);
      if (!fn) throw new RegistrationError(`Entry point "${this.entryPoint}" of ${this.id} is not known; register it with registerEntryPoint() first`);
      return fn;
    }
    throw new RegistrationError(`${this.id} registered without an entry point`);
  }

  /** A copy with some fields replaced. */
  copy(changes: Partial<EnvSpecInit> = {}): EnvSpec {
    return new EnvSpec({ ...this.toInit(), ...changes });
  }

  private toInit(): EnvSpecInit {
    return {
      id: this.id,
      entryPoint: this.entryPoint,
      rewardThreshold: this.rewardThreshold,
      nondeterministic: this.nondeterministic,
      maxEpisodeSteps: this.maxEpisodeSteps,
      orderEnforce: this.orderEnforce,
      disableEnvChecker: this.disableEnvChecker,
      kwargs: { ...this.kwargs },
      additionalWrappers: this.additionalWrappers.map((w) => ({ ...w })),
      vectorEntryPoint: this.vectorEntryPoint,
    };
  }

  /**
   * JSON form. A function entry point is written as the name it was registered under (`register` uses the env
   * id), so the spec can be rebuilt in a process that registered the same envs. Kwargs must be JSON-safe.
   */
  toJSON(): Record<string, unknown> {
    let entryPoint: string | null;
    if (typeof this.entryPoint === 'function') {
      entryPoint = entryPointName(this.entryPoint, this.id);
      if (entryPoint === null) throw new RegistrationError(`EnvSpec ${this.id}: its entry point is an unnamed function; name it with registerEntryPoint() to serialize the spec`);
    } else {
      entryPoint = this.entryPoint;
    }
    for (const [k, v] of Object.entries(this.kwargs)) {
      if (typeof v === 'function' || typeof v === 'bigint' || typeof v === 'symbol') throw new RegistrationError(`EnvSpec ${this.id}: kwarg "${k}" is not JSON-serializable`);
    }
    return {
      id: this.id,
      entryPoint,
      rewardThreshold: this.rewardThreshold,
      nondeterministic: this.nondeterministic,
      maxEpisodeSteps: this.maxEpisodeSteps,
      orderEnforce: this.orderEnforce,
      disableEnvChecker: this.disableEnvChecker,
      kwargs: this.kwargs,
      additionalWrappers: this.additionalWrappers,
      vectorEntryPoint: this.vectorEntryPoint,
    };
  }

  /** Serialized JSON string (Gymnasium's `to_json`). */
  toJSONString(): string {
    return JSON.stringify(this.toJSON());
  }

  static fromJSON(json: string | Record<string, unknown>): EnvSpec {
    const j = (typeof json === 'string' ? JSON.parse(json) : json) as Record<string, unknown>;
    if (typeof j.id !== 'string') throw new RegistrationError('EnvSpec.fromJSON: missing "id"');
    return new EnvSpec({
      id: j.id,
      entryPoint: (j.entryPoint as string | null) ?? null,
      rewardThreshold: (j.rewardThreshold as number | null) ?? null,
      nondeterministic: j.nondeterministic === true,
      maxEpisodeSteps: (j.maxEpisodeSteps as number | null) ?? null,
      orderEnforce: j.orderEnforce !== false,
      disableEnvChecker: j.disableEnvChecker === true,
      kwargs: (j.kwargs as Record<string, unknown>) ?? {},
      additionalWrappers: (j.additionalWrappers as WrapperSpec[]) ?? [],
      vectorEntryPoint: (j.vectorEntryPoint as string | null) ?? null,
    });
  }

  /** A readable description (Gymnasium's `EnvSpec.pprint`); printed unless `disablePrint`. */
  pprint(options: { disablePrint?: boolean; includeEntryPoints?: boolean; printAll?: boolean } = {}): string {
    const lines = [`id=${this.id}`];
    if (options.includeEntryPoints) {
      lines.push(`entryPoint=${typeof this.entryPoint === 'function' ? (entryPointName(this.entryPoint, this.id) ?? '<function>') : String(this.entryPoint)}`);
    }
    const show = (key: string, value: unknown, dflt: unknown): void => {
      if (options.printAll || value !== dflt) lines.push(`${key}=${typeof value === 'object' ? JSON.stringify(value) : String(value)}`);
    };
    show('rewardThreshold', this.rewardThreshold, null);
    show('nondeterministic', this.nondeterministic, false);
    show('maxEpisodeSteps', this.maxEpisodeSteps, null);
    show('orderEnforce', this.orderEnforce, true);
    show('disableEnvChecker', this.disableEnvChecker, false);
    if (options.printAll || Object.keys(this.kwargs).length > 0) lines.push(`kwargs=${JSON.stringify(this.kwargs)}`);
    if (options.printAll || this.additionalWrappers.length > 0) {
      lines.push(`additionalWrappers=[${this.additionalWrappers.map((w) => `name=${w.name}, entryPoint=${w.entryPoint}, kwargs=${JSON.stringify(w.kwargs)}`).join('; ')}]`);
    }
    show('vectorEntryPoint', this.vectorEntryPoint, null);
    const text = lines.join('\n');
    if (!options.disablePrint) console.log(text);
    return text;
  }
}
