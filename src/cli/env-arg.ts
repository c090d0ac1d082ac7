/**
 * `--env MODULE_OR_ID`, as `rollout`, `serve env` and `eval` take it: a path to a user's env module (`.ts`, `.mts`,
 * `.js`, `.mjs`; `path.ts:exportName` picks an export, as Gymnasium's `module:Env` ids do), or the id of an env
 * registered with the gym registry (a built-in one, or one a module loaded earlier defined).
 */
import { existsSync } from 'node:fs';
import { extname } from 'node:path';
import { registerBuiltinEnvs } from '../envs.ts';
import { registry, registeredIds } from '../gym/registry/registry.ts';
import { definedEnvIds, getEnvDefinition, loadEnvModule, type AnyEnvDefinition } from '../tooluse/api/index.ts';

const MODULE_EXTENSIONS = new Set(['.ts', '.mts', '.cts', '.js', '.mjs', '.cjs']);

/** `path[:export]` when the argument names a module file, else null (an env id). */
export function moduleArg(arg: string): { path: string; exportName?: string } | null {
  const colon = arg.lastIndexOf(':');
  // `C:\…` or a bare `:` at the start is a path, not path:export.
  const [path, exportName] = colon > 1 && MODULE_EXTENSIONS.has(extname(arg.slice(0, colon))) ? [arg.slice(0, colon), arg.slice(colon + 1)] : [arg, undefined];
  if (MODULE_EXTENSIONS.has(extname(path)) || existsSync(path)) return { path, ...(exportName ? { exportName } : {}) };
  return null;
}

/** Loads the module `arg` names (registering its env), or checks that the id `arg` is registered; returns the env id. */
export async function resolveEnvArg(arg: string, options?: Record<string, unknown>): Promise<string> {
  registerBuiltinEnvs();
  const mod = moduleArg(arg);
  if (mod) return (await loadEnvModule(mod.path, mod.exportName, options)).id;
  if (options !== undefined) throw new Error(`--env ${arg}: env options apply to an env module, not a registered id`);
  if (!registry.has(arg)) throw new Error(`--env ${arg}: neither an env module (a .ts, .mts, .js or .mjs file) nor a registered env id; registered: ${registeredIds().join(', ')}`);
  return arg;
}

/**
 * The defined env (`defineEnv`) that `arg` names: a module, or the id of one loaded before or built in with a
 * definition (the τ² retail envs).
 */
export async function resolveEnvDefinition(arg: string, what: string): Promise<AnyEnvDefinition> {
  const id = await resolveEnvArg(arg);
  if (!definedEnvIds({ all: true }).includes(id)) throw new Error(`${what} needs an env defined with defineEnv (a module of yours); ${id} is a built-in env without one`);
  return getEnvDefinition(id);
}
