/**
 * The file a command writes where the user names it (`rollout --out runs/x/demos.jsonl`, `gen world --out`, `model
 * export --format gguf --out`, `serve gateway --record`, `dashboard --screenshot`): its parent folders are made first,
 * as the commands that write into an `--out` folder make that folder.
 */
import { mkdirSync } from 'node:fs';
import { dirname, resolve } from 'node:path';

/** Makes the parent folders of `file` (nothing when they exist) and returns `file`. */
export function outFile(file: string): string {
  mkdirSync(dirname(resolve(file)), { recursive: true });
  return file;
}
