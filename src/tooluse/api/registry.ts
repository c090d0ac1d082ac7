/**
 * Defined envs by id, and user modules that define them. `registerEnv(def)` also registers the env with the gym
 * registry (src/gym/registry), so `make(id)`, `longrun env` and the env server build it like any built-in env (kwargs:
 * `split`, `tasks`, `renderMode`). `registerEnv(def, { entryPoint: 'keep' })` registers a definition for
 * `getEnvDefinition(id)` lookups only, leaving the id's own gym entry point (a built-in env whose kwargs are its own,
 * as the τ² retail envs'). A registered definition may be lazy (`{ id, load(options) }`): made when first looked up,
 * from the options a run file gives (`env: { id, options }`). `loadEnvModule(path)` imports a user's `.ts`, `.mts`,
 * `.js` or `.mjs` module (a `.ts` one through tsx, with no build step of the user's) and registers the env it exports.
 */
import { existsSync } from 'node:fs';
import { extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { register as gymRegister, registry as gymRegistry, unregister as gymUnregister } from '../../gym/registry/registry.ts';
import { defineEnv, EnvDefinition, isEnvDefinition, type AnyEnvDefinition } from './define.ts';
import type { DefinedEnvOptions } from './env.ts';
import { errorMessage } from './errors.ts';
import type { DefineEnvSpec, Task } from './types.ts';

/** A definition made when it is first looked up (e.g. one whose tasks are read from a data folder that may be absent). */
export interface LazyEnvDefinition {
  id: string;
  /**
   * Makes the definition from `options` (a run file's `env.options`, `{}` when none); it should check them and name
   * the ones it does not know. Called once per distinct options; its definition's id must be `id`.
   */
  load(options: Record<string, unknown>): AnyEnvDefinition;
}

export interface RegisterEnvOptions {
  /**
   * The id's gym entry point. `'definition'` (default): one that makes the definition's env (kwargs `split`, `tasks`,
   * `renderMode`); an id a built-in env holds is refused. `'keep'`: the id's own gym registration stays (it must be
   * registered there already), and the definition serves `getEnvDefinition(id)` (run files, `eval --config`) only.
   */
  entryPoint?: 'definition' | 'keep';
}

interface Entry {
  def?: AnyEnvDefinition;
  lazy?: LazyEnvDefinition;
  /** The definitions a lazy entry made, by their options (canonical JSON). */
  made: Map<string, AnyEnvDefinition>;
  /** Whether the gym entry point of the id is this definition's (registered here). */
  ownEntryPoint: boolean;
}

const definitions = new Map<string, Entry>();

const isLazy = (x: unknown): x is LazyEnvDefinition => !isEnvDefinition(x) && typeof x === 'object' && x !== null && typeof (x as LazyEnvDefinition).id === 'string' && typeof (x as LazyEnvDefinition).load === 'function';

/**
 * Registers a defined env under its id (here and, unless `entryPoint: 'keep'`, in the gym registry). Registering the
 * same id again replaces the definition (a reloaded module); an id that a built-in env holds is refused, unless the
 * definition keeps the built-in entry point.
 */
export function registerEnv<S, T extends Task>(def: EnvDefinition<S, T>, options?: RegisterEnvOptions): EnvDefinition<S, T>;
export function registerEnv(def: LazyEnvDefinition, options?: RegisterEnvOptions): LazyEnvDefinition;
export function registerEnv(def: AnyEnvDefinition | LazyEnvDefinition, options: RegisterEnvOptions = {}): AnyEnvDefinition | LazyEnvDefinition {
  const entryPoint = options.entryPoint ?? 'definition';
  if (entryPoint !== 'definition' && entryPoint !== 'keep') throw new Error(`registerEnv: entryPoint must be 'definition' or 'keep', got ${JSON.stringify(entryPoint)}`);
  const own = isLazy(def) ? def : ownDefinition(def, 'registerEnv');
  const id = own.id;
  const before = definitions.get(id);
  if (entryPoint === 'definition' && gymRegistry.has(id) && !before?.ownEntryPoint) throw new Error(`registerEnv: the id ${id} is taken by a built-in env; give your env another id`);
  if (entryPoint === 'keep' && (!gymRegistry.has(id) || before?.ownEntryPoint)) throw new Error(`registerEnv ${id}: entryPoint 'keep' needs the id registered with the gym registry first, with an entry point of its own; register it there, or leave entryPoint out`);
  if (before?.ownEntryPoint) gymUnregister(id);
  const entry: Entry = { ...(isLazy(own) ? { lazy: own } : { def: own }), made: new Map(), ownEntryPoint: entryPoint === 'definition' };
  definitions.set(id, entry);
  if (entry.ownEntryPoint) gymRegister({ id, entryPoint: (kw) => definitionOf(id, entry).makeEnv(kw as DefinedEnvOptions<Task>), nondeterministic: false });
  return own;
}

/** JSON with object keys sorted, so options given in another order are the same options. */
function canonical(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) => (v !== null && typeof v === 'object' && !Array.isArray(v) ? Object.fromEntries(Object.entries(v as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) : v));
}

function definitionOf(id: string, entry: Entry, options?: Record<string, unknown>): AnyEnvDefinition {
  const given = options !== undefined && Object.keys(options).length > 0;
  if (entry.def) {
    if (given) throw new Error(`env ${id}: options were given (${Object.keys(options).join(', ')}) but it is registered as a definition, not as one made from options; options go to an env module's export (env: { module, options })`);
    return entry.def;
  }
  const key = canonical(options ?? {});
  let def = entry.made.get(key);
  if (!def) {
    try {
      def = entry.lazy!.load(options ?? {});
    } catch (e) {
      throw new Error(`env ${id}: ${errorMessage(e)}`, { cause: e });
    }
    if (!isEnvDefinition(def)) throw new TypeError(`env ${id}: its load(options) returned ${describe(def)}, not an env made by defineEnv(...)`);
    if (def.id !== id) throw new Error(`env ${id}: its load(options) returned the env ${def.id}`);
    entry.made.set(key, def);
  }
  return def;
}

/**
 * The defined env registered under `id`; the error lists the ids there are. `options` go to a lazy definition's
 * `load` (a run file's `env.options`); a definition registered as it is takes none.
 */
export function getEnvDefinition(id: string, options?: Record<string, unknown>): AnyEnvDefinition {
  const entry = definitions.get(id);
  if (entry) return definitionOf(id, entry, options);
  const builtin = gymRegistry.has(id) ? ` (${id} is a built-in gym env, not one defined with defineEnv: run files name it with task:)` : '';
  throw new Error(`no env defined with id ${id}${builtin}; defined envs: ${[...definitions.keys()].sort().join(', ') || '(none: load a module with env: { module: ./my-env.ts })'}`);
}

/**
 * The ids of the registered defined envs whose gym entry point is their definition's (kwargs `split`, `tasks`,
 * `renderMode`), sorted; `{ all: true }`: also those registered with `entryPoint: 'keep'` (every id
 * `getEnvDefinition` answers for).
 */
export function definedEnvIds(options: { all?: boolean } = {}): string[] {
  return [...definitions].filter(([, e]) => options.all || e.ownEntryPoint).map(([id]) => id).sort();
}

/** Removes a defined env (here, and from the gym registry when its entry point there is the definition's). */
export function unregisterEnv(id: string): boolean {
  const entry = definitions.get(id);
  if (!entry) return false;
  definitions.delete(id);
  if (entry.ownEntryPoint) gymUnregister(id);
  return true;
}

/** `def` as this copy's EnvDefinition: one made by another copy of longrun (a user module's own import) is re-defined from its spec. */
function ownDefinition<S, T extends Task>(def: EnvDefinition<S, T>, where: string): EnvDefinition<S, T> {
  if (!isEnvDefinition(def)) throw new TypeError(`${where}: expected an env made by defineEnv(...), got ${describe(def)}`);
  return Object.getPrototypeOf(def) === EnvDefinition.prototype ? def : defineEnv<S, T>(def.spec);
}

function describe(x: unknown): string {
  if (x === null) return 'null';
  if (Array.isArray(x)) return 'an array';
  if (typeof x === 'function') return 'a function';
  if (typeof x === 'object') return `an object with keys ${Object.keys(x).slice(0, 8).join(', ') || '(none)'}`;
  return typeof x;
}

/** A spec object not passed through defineEnv (`export default { id, instructions, tasks, reward, ... }`). */
function looksLikeSpec(x: unknown): x is DefineEnvSpec {
  return typeof x === 'object' && x !== null && typeof (x as { id?: unknown }).id === 'string' && typeof (x as { instructions?: unknown }).instructions === 'string' && typeof (x as { reward?: unknown }).reward === 'function' && 'tasks' in x;
}

const TS_EXTENSIONS = new Set(['.ts', '.mts', '.cts', '.tsx']);
const JS_EXTENSIONS = new Set(['.js', '.mjs', '.cjs']);

/** Whether this module runs from TypeScript source, so a TS loader (tsx) is already active in the process. */
const RUNNING_FROM_SOURCE = import.meta.url.endsWith('.ts');

async function importModule(file: string): Promise<Record<string, unknown>> {
  const url = pathToFileURL(file).href;
  if (TS_EXTENSIONS.has(extname(file)) && !RUNNING_FROM_SOURCE) {
    const { tsImport } = await import('tsx/esm/api');
    return (await tsImport(url, import.meta.url)) as Record<string, unknown>;
  }
  return (await import(url)) as Record<string, unknown>;
}

/**
 * Imports an env module and registers its env. The env is the export `exportName`, else the default export, else the
 * one named export that is an env. An export may be an env (`defineEnv(...)`), a spec object, or a function of
 * `options` returning either (awaited). A module that exports no env is an error naming the file and its exports.
 * Relative paths resolve against the working directory.
 */
export async function loadEnvModule(path: string, exportName?: string, options?: Record<string, unknown>): Promise<AnyEnvDefinition> {
  const file = resolve(path);
  const ext = extname(file);
  if (!TS_EXTENSIONS.has(ext) && !JS_EXTENSIONS.has(ext)) throw new Error(`env module ${path}: expected a .ts, .mts, .js or .mjs file, got ${ext || 'no extension'}`);
  if (!existsSync(file)) throw new Error(`env module ${path} does not exist (resolved to ${file})`);
  let mod: Record<string, unknown>;
  try {
    mod = await importModule(file);
  } catch (e) {
    throw new Error(`env module ${path} did not load: ${errorMessage(e)}`, { cause: e });
  }
  const names = Object.keys(mod);
  const found = names.length ? names.join(', ') : '(none)';
  let name: string;
  if (exportName !== undefined) {
    if (!Object.hasOwn(mod, exportName)) throw new Error(`env module ${path} has no export ${exportName}; its exports: ${found}`);
    name = exportName;
  } else if (mod.default !== undefined) {
    name = 'default';
  } else {
    const envs = names.filter((n) => isEnvDefinition(mod[n]) || looksLikeSpec(mod[n]));
    if (envs.length > 1) throw new Error(`env module ${path} exports several envs (${envs.join(', ')}); name one with export:`);
    if (envs.length === 0) throw new Error(`env module ${path} exports no env: export default defineEnv({...}) (or name the export with export:); its exports: ${found}`);
    name = envs[0]!;
  }
  let value = mod[name];
  if (typeof value === 'function' && !isEnvDefinition(value)) {
    try {
      value = await (value as (o: Record<string, unknown>) => unknown)(options ?? {});
    } catch (e) {
      throw new Error(`env module ${path}: export ${name}(options) threw: ${errorMessage(e)}`, { cause: e });
    }
  } else if (options !== undefined && Object.keys(options).length > 0) {
    throw new Error(`env module ${path}: options were given but export ${name} is not a function of them`);
  }
  if (looksLikeSpec(value) && !isEnvDefinition(value)) value = defineEnv(value);
  if (!isEnvDefinition(value)) throw new Error(`env module ${path}: export ${name} is not an env (defineEnv(...)) but ${describe(value)}; its exports: ${found}`);
  return registerEnv(value);
}
