/**
 * `GET /envs/{id}/tasks`: the task ids of each split of an env, so a client can plan episodes (`reset` with
 * `options.taskId`) without reading the env's files. Envs defined with `defineEnv` list their splits (a tasks function
 * answers for the splits asked for with `?split=`, default `train`); the retail envs list the splits of the server's
 * data folder (`split_tasks.json`, or `base` = every task without one). Other envs have no task list: 404.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { loadRetailTaskSet, RETAIL_ENV_IDS, resolveRetailDataDir } from '../domains/retail/register.ts';
import { definedEnvIds, getEnvDefinition } from '../tooluse/api/index.ts';
import { DEFAULT_SPLIT, loadSplits } from '../tooluse/tasks.ts';
import { badRequest, notFound } from './http-errors.ts';

export type TaskLister = (envId: string, split: string | null) => Promise<Record<string, string[]>>;

const RETAIL_VERSIONS: Record<string, 'v0' | 'v1'> = { [RETAIL_ENV_IDS.v0]: 'v0', [RETAIL_ENV_IDS.v1]: 'v1' };

/** The default lister over the gym registry's envs; `dataDir` is the server's retail data folder. */
export function defaultTaskLister(options: { dataDir?: string } = {}): TaskLister {
  return async (envId, split) => {
    if (definedEnvIds().includes(envId)) {
      const def = getEnvDefinition(envId);
      const known = def.splits();
      if (split !== null && known !== null && !known.includes(split)) throw notFound('unknown_split', `env ${envId} has no split ${JSON.stringify(split)}; its splits: ${known.join(', ')}`);
      const names = split !== null ? [split] : (known ?? ['train']);
      const out: Record<string, string[]> = {};
      for (const name of names) {
        try {
          out[name] = (await def.tasks(name)).map((t) => t.id);
        } catch (e) {
          throw badRequest('tasks_failed', (e as Error).message);
        }
      }
      return out;
    }
    const version = RETAIL_VERSIONS[envId];
    if (version) {
      const dir = resolveRetailDataDir(options.dataDir);
      const splitFile = join(dir, 'split_tasks.json');
      const known = existsSync(splitFile) ? Object.keys(loadSplits(splitFile)) : [DEFAULT_SPLIT];
      if (split !== null && !known.includes(split)) throw notFound('unknown_split', `env ${envId} has no split ${JSON.stringify(split)}; its splits: ${known.join(', ')}`);
      const out: Record<string, string[]> = {};
      for (const name of split !== null ? [split] : known) {
        try {
          out[name] = loadRetailTaskSet({ dataDir: dir, version, split: name }).tasks.map((t) => t.id);
        } catch (e) {
          throw badRequest('tasks_failed', `env ${envId}: ${(e as Error).message}`);
        }
      }
      return out;
    }
    throw notFound('no_tasks', `env ${envId} has no task list (only envs defined with defineEnv and the retail envs have one)`);
  };
}
