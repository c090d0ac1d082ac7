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
