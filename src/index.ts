/**
 * longrun's public API: the one entry of the npm package (`import { defineEnv, tool } from 'longrun'`). What this
 * file exports is supported; every other module under src/ is internal and may change in any release.
 *
 * - The environment API (src/tooluse/api/): define your own tools, tasks, user and reward in one module, which the
 *   CLI loads from a run file (`env: { module: ./env.ts }`) or with `--env ./env.ts`.
 * - Run files: read, parse and build a `longrun train --config` file from a script of your own.
 *
 * The guide: docs/your-own-task.md.
 */

// ---- The environment API (src/tooluse/api/README.md) -------------------------------------------------------------
export * from './tooluse/api/index.ts';
export type { Message } from './tooluse/messages.ts';

// ---- Run files ---------------------------------------------------------------------------------------------------
export { loadRun, loadGrpoRun, type LoadRunOptions, type LoadedRun } from './recipes/load-run.ts';
