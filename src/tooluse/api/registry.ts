/**
 * Defined envs by id, and user modules that define them. `registerEnv(def)` also registers the env with the gym
 * registry (src/gym/registry), so `make(id)`, `longrun env` and the env server build it like any built-in env (kwargs:
 * `split`, `tasks`, `renderMode`). `loadEnvModule(path)` imports a user's `.ts`, `.mts`, `.js` or `.mjs` module (a
 * `.ts` one through tsx, with no build step of the user's) and registers the env it exports.
 */
import { existsSync } from 'node:fs';
import { extname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { register as gymRegister, registry as gymRegistry, unregister as gymUnregister } from '../../gym/registry/registry.ts';
import { defineEnv, EnvDefinition, isEnvDefinition, type AnyEnvDefinition } from './define.ts';
import type { DefinedEnvOptions } from './env.ts';
import { errorMessage } from './errors.ts';
import type { DefineEnvSpec, Task } from './types.ts';

const definitions = new Map<string, AnyEnvDefinition>();

/**
 * Registers a defined env under its id (here and in the gym registry). Registering the same id again replaces the
 * definition (a reloaded module); an id that a built-in env holds is refused.
 */
export function registerEnv<S, T extends Task>(def: EnvDefinition<S, T>): EnvDefinition<S, T> {
  const own = ownDefinition(def, 'registerEnv');
  if (gymRegistry.has(own.id) && !definitions.has(own.id)) throw new Error(`registerEnv: the id ${own.id} is taken by a built-in env; give your env another id`);
  if (definitions.has(own.id)) gymUnregister(own.id);
  definitions.set(own.id, own);
  gymRegister({ id: own.id, entryPoint: (kw) => own.makeEnv(kw as DefinedEnvOptions<T>), nondeterministic: false });
  return own;
}

/** The defined env registered under `id`; the error lists the ids there are. */
export function getEnvDefinition(id: string): AnyEnvDefinition {
  const def = definitions.get(id);
  if (def) return def;
  const builtin = gymRegistry.has(id) ? ` (${id} is a built-in gym env, not one defined with defineEnv: run files name it with task:)` : '';
  throw new Error(`no env defined with id ${id}${builtin}; defined envs: ${[...definitions.keys()].sort().join(', ') || '(none: load a module with env: { module: ./my-env.ts })'}`);
}

/** The ids of the registered defined envs, sorted. */
export function definedEnvIds(): string[] {
  return [...definitions.keys()].sort();
}

/** Removes a defined env (here and from the gym registry). */
export function unregisterEnv(id: string): boolean {
  if (!definitions.delete(id)) return false;
  gymUnregister(id);
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
