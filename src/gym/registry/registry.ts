/**
 * The env registry and `make` (Gymnasium's `gymnasium.envs.registration`): ids follow `[namespace/]name[-vN]`,
 * unknown ids get close-match suggestions, and `make` wraps the env innermost-first in
 * PassiveEnvChecker → OrderEnforcing → TimeLimit → additional wrappers (→ RecordEpisodeStatistics if asked).
 */
import { Env } from '../env.ts';
import { DeprecatedEnv, GymError, NameNotFound, NamespaceNotFound, RegistrationError, VersionNotFound } from '../errors.ts';
import { warn } from '../logger.ts';
import { Autoreset } from '../wrappers/autoreset.ts';
import { OrderEnforcing } from '../wrappers/order-enforcing.ts';
import { PassiveEnvChecker } from '../wrappers/passive-env-checker.ts';
import { RecordEpisodeStatistics } from '../wrappers/record-episode-statistics.ts';
import { TimeLimit } from '../wrappers/time-limit.ts';
import { closeMatches, getEnvId, parseEnvId } from './env-id.ts';
import { EnvSpec, registerEntryPoint, registerWrapperEntryPoint, resolveWrapperEntryPoint, type EnvSpecInit } from './spec.ts';

/** All registered specs by id (Gymnasium's `registry`). */
export const registry = new Map<string, EnvSpec>();

registerWrapperEntryPoint('TimeLimit', (env, kw) => new TimeLimit(env, kw.maxEpisodeSteps as number));
registerWrapperEntryPoint('OrderEnforcing', (env, kw) => new OrderEnforcing(env, kw));
registerWrapperEntryPoint('PassiveEnvChecker', (env) => new PassiveEnvChecker(env));
registerWrapperEntryPoint('RecordEpisodeStatistics', (env, kw) => new RecordEpisodeStatistics(env, kw));
registerWrapperEntryPoint('Autoreset', (env) => new Autoreset(env));

function checkNamespaceExists(ns: string | null): void {
  if (ns === null) return;
  const namespaces = new Set([...registry.values()].map((s) => s.namespace).filter((n): n is string => n !== null));
  if (namespaces.has(ns)) return;
  const suggestion = closeMatches(ns, namespaces)[0];
  const hint = suggestion ? `Did you mean: \`${suggestion}\`?` : `Have you registered the environments of ${ns}?`;
  throw new NamespaceNotFound(`Namespace ${ns} not found. ${hint}`);
}

function checkNameExists(ns: string | null, name: string): void {
  checkNamespaceExists(ns);
  const names = new Set([...registry.values()].filter((s) => s.namespace === ns).map((s) => s.name));
  if (names.has(name)) return;
  const suggestion = closeMatches(name, names)[0];
  throw new NameNotFound(`Environment \`${name}\` doesn't exist${ns ? ` in namespace ${ns}` : ''}.${suggestion ? ` Did you mean: \`${suggestion}\`?` : ''}`);
}

/** Throws the most helpful error when `[ns/]name[-vN]` is not registered (Gymnasium's `_check_version_exists`). */
function checkVersionExists(ns: string | null, name: string, version: number | null): void {
  if (registry.has(getEnvId(ns, name, version))) return;
  checkNameExists(ns, name);
  if (version === null) return;
  let message = `Environment version \`v${version}\` for environment \`${getEnvId(ns, name, null)}\` doesn't exist.`;
  const specs = [...registry.values()].filter((s) => s.namespace === ns && s.name === name).sort((a, b) => (a.version ?? -1) - (b.version ?? -1));
  const dflt = specs.find((s) => s.version === null);
  if (dflt) {
    message += ` It provides the default version \`${dflt.id}\`.`;
    if (specs.length === 1) throw new DeprecatedEnv(message);
  }
  const versioned = specs.filter((s) => s.version !== null);
  const latest = versioned[versioned.length - 1];
  if (latest && version > latest.version!) {
    message += ` It provides versioned environments: [ ${versioned.map((s) => `\`v${s.version}\``).join(', ')} ].`;
    throw new VersionNotFound(message);
  }
  if (latest && version < latest.version!) {
    throw new DeprecatedEnv(`Environment version v${version} for \`${getEnvId(ns, name, null)}\` is deprecated. Please use \`${latest.id}\` instead.`);
  }
}

function highestVersion(ns: string | null, name: string): number | null {
  const versions = [...registry.values()].filter((s) => s.namespace === ns && s.name === name && s.version !== null).map((s) => s.version!);
  return versions.length ? Math.max(...versions) : null;
}

/** Registers an env (Gymnasium's `register`); re-registering an id warns and overrides, as in Gymnasium. */
export function register(init: EnvSpecInit): EnvSpec {
  const spec = new EnvSpec(init);
  const { namespace: ns, name, version } = spec;
  if (version !== null) {
    if (registry.has(getEnvId(ns, name, null))) {
      throw new RegistrationError(
        `Can't register the versioned environment \`${spec.id}\` when the unversioned environment \`${getEnvId(ns, name, null)}\` of the same name already exists.`,
      );
    }
  } else {
    const latest = highestVersion(ns, name);
    if (latest !== null) {
      throw new RegistrationError(
        `Can't register the unversioned environment \`${spec.id}\` when the versioned environment \`${getEnvId(ns, name, latest)}\` of the same name already exists. Note: the default behavior is that \`make\` with the unversioned environment will return the latest versioned environment`,
      );
    }
  }
  if (typeof spec.entryPoint === 'function') registerEntryPoint(spec.id, spec.entryPoint);
  if (registry.has(spec.id)) warn(`Overriding environment ${spec.id} already in registry.`);
  registry.set(spec.id, spec);
  return spec;
}

/** The spec registered under `id`, with Gymnasium's errors and latest-version fallback for unversioned ids. */
export function spec(id: string): EnvSpec {
  if (typeof id !== 'string') throw new TypeError(`Expected an env id string, got ${typeof id}`);
  let found = registry.get(id);
  const parsed = parseEnvId(id);
  const { namespace: ns, name } = parsed;
  let version = parsed.version;
  const latest = highestVersion(ns, name);
  if (version !== null && latest !== null && latest > version && found) {
    warn(`The environment ${id} is out of date. You should consider upgrading to version \`v${latest}\`.`);
  }
  if (version === null && latest !== null) {
    version = latest;
    const newId = getEnvId(ns, name, version);
    found = registry.get(newId);
    warn(`Using the latest versioned environment \`${newId}\` instead of the unversioned environment \`${id}\`.`);
  }
  if (!found) {
    checkVersionExists(ns, name, version);
    throw new GymError(`No registered env with id: ${id}`);
  }
  return found;
}

/** Options of `make`; every other key is passed to the env factory as a kwarg (overriding the spec's kwargs). */
export interface MakeOptions {
  /** Overrides the spec's step limit; -1 disables TimeLimit. */
  maxEpisodeSteps?: number | null;
  renderMode?: string | null;
  /** Skips PassiveEnvChecker (default: the spec's `disableEnvChecker`). */
  disableEnvChecker?: boolean | null;
  /** Adds RecordEpisodeStatistics as the outermost wrapper. */
  recordEpisodeStatistics?: boolean;
  [kwarg: string]: unknown;
}

/** Builds an env from an id or spec and applies the default wrapper stack (Gymnasium's `make`). */
export function make<Obs = unknown, Act = unknown>(id: string | EnvSpec, options: MakeOptions = {}): Env<Obs, Act> {
  const envSpec = typeof id === 'string' ? spec(id) : id;
  if (!(envSpec instanceof EnvSpec)) throw new TypeError('make: expected an env id or an EnvSpec');
  const { maxEpisodeSteps, disableEnvChecker, recordEpisodeStatistics, ...rest } = options;
  const kwargs: Record<string, unknown> = { ...envSpec.kwargs, ...rest };
  if (kwargs.renderMode === undefined) delete kwargs.renderMode;

  const creator = envSpec.resolveEntryPoint();
  let env: Env;
  try {
    env = creator({ ...kwargs });
  } catch (e) {
    if (e instanceof Error) e.message = `make(${envSpec.id}): ${e.message}`;
    throw e;
  }
  if (!(env instanceof Env)) throw new GymError(`The entry point of ${envSpec.id} must return an Env, got ${String(env)}`);

  const limit = maxEpisodeSteps ?? envSpec.maxEpisodeSteps;
  const applied = envSpec.copy({ kwargs, maxEpisodeSteps: limit === -1 ? null : limit });
  env.unwrapped.spec = applied;

  if (!(disableEnvChecker ?? envSpec.disableEnvChecker)) env = new PassiveEnvChecker(env);
  if (envSpec.orderEnforce) env = new OrderEnforcing(env);
  if (limit !== null && limit !== undefined && limit !== -1) env = new TimeLimit(env, limit);
  for (const w of envSpec.additionalWrappers) env = resolveWrapperEntryPoint(w.entryPoint)(env, w.kwargs ?? {});
  if (recordEpisodeStatistics) env = new RecordEpisodeStatistics(env);
  return env as Env<Obs, Act>;
}

/** Registered ids, sorted. */
export function registeredIds(): string[] {
  return [...registry.keys()].sort();
}

/** Removes a registration (for tests and reloads). */
export function unregister(id: string): boolean {
  return registry.delete(id);
}

/** The registry grouped by namespace (Gymnasium's `pprint_registry`); printed unless `disablePrint`. */
export function pprintRegistry(options: { numCols?: number; excludeNamespaces?: string[]; disablePrint?: boolean } = {}): string {
  const numCols = options.numCols ?? 3;
  const groups = new Map<string, string[]>();
  for (const s of registry.values()) {
    const ns = s.namespace ?? 'default';
    if (options.excludeNamespaces?.includes(ns)) continue;
    if (!groups.has(ns)) groups.set(ns, []);
    groups.get(ns)!.push(s.id);
  }
  const width = Math.max(0, ...[...groups.values()].flat().map((id) => id.length)) + 2;
  const blocks = [...groups.keys()].sort().map((ns) => {
    const ids = groups.get(ns)!.sort();
    const rows: string[] = [];
    for (let i = 0; i < ids.length; i += numCols) rows.push(ids.slice(i, i + numCols).map((id) => id.padEnd(width)).join('').trimEnd());
    return `===== ${ns} =====\n${rows.join('\n')}`;
  });
  const text = blocks.join('\n\n');
  if (!options.disablePrint) console.log(text);
  return text;
}
