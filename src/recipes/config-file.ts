/**
 * The one reader of YAML config files (run files, SFT settings; JSON files read the same, YAML being a superset of
 * JSON): the parsed value, or an error that names the file and what is wrong with it.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';

/** Reads and parses `path`; `label` names the file in errors (`cannot read <label> <path>: …`). */
export function readConfigFile(path: string, label = 'config file'): unknown {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`cannot read ${label} ${path}: ${(e as Error).message}`, { cause: e });
  }
  try {
    return parseYaml(text);
  } catch (e) {
    throw new Error(`${label} ${path} is not valid YAML: ${(e as Error).message}`, { cause: e });
  }
}

/**
 * Applies `path=value` overrides to a parsed run file, as `longrun train --set` takes them (verl's Hydra-style
 * `trainer.total_steps=…`): the path is dotted keys (`policy.modelConfig.sliding_window`), the value is read as YAML
 * (`32`, `true`, `ignore`, `{ a: 1 }`). Missing objects on the path are created; a path through a value that is not an
 * object, an empty key or a malformed pair is an error that names it. Returns a new object; the input is not changed.
 */
export function applyOverrides(raw: unknown, overrides: readonly string[]): unknown {
  if (overrides.length === 0) return raw;
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error('--set needs a run file whose top level is a mapping');
  const root = structuredClone(raw) as Record<string, unknown>;
  for (const pair of overrides) {
    const eq = pair.indexOf('=');
    if (eq <= 0) throw new Error(`--set ${JSON.stringify(pair)}: expected key.path=value`);
    const path = pair.slice(0, eq).split('.');
    if (path.some((k) => k.trim() === '')) throw new Error(`--set ${JSON.stringify(pair)}: empty key in ${JSON.stringify(pair.slice(0, eq))}`);
    let value: unknown;
    try {
      value = parseYaml(pair.slice(eq + 1));
    } catch (e) {
      throw new Error(`--set ${JSON.stringify(pair)}: the value is not valid YAML: ${(e as Error).message}`, { cause: e });
    }
    let node = root;
    for (let i = 0; i < path.length - 1; i++) {
      const next = node[path[i]];
      if (next === undefined || next === null) node = (node[path[i]] = {}) as Record<string, unknown>;
      else if (typeof next === 'object' && !Array.isArray(next)) node = next as Record<string, unknown>;
      else throw new Error(`--set ${JSON.stringify(pair)}: ${path.slice(0, i + 1).join('.')} is ${JSON.stringify(next)}, not a mapping`);
    }
    node[path[path.length - 1]] = value;
  }
  return root;
}
