import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Repository root (two levels above this file). */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');

/**
 * τ²-bench retail data folder used by tests and benchmarks. The data is never copied into the project: by default
 * it is read from the `shared/` checkout beside the repository; `LONGRUN_TAU2_RETAIL` points elsewhere.
 */
export const TAU2_RETAIL_DIR = process.env.LONGRUN_TAU2_RETAIL ?? join(REPO_ROOT, '..', 'shared', 'tau2', 'retail');
