/**
 * The τ²-bench retail data on disk: the retail env ids, the task file of each τ² release, the data folder, and
 * `loadRetailTaskSet` (the domain and the tasks of one split, loaded once per process).
 */
import { join, resolve } from 'node:path';
import type { Task } from '../../tooluse/tasks.ts';
import type { Splits } from '../../tooluse/tasks.ts';
import { DEFAULT_SPLIT, loadTasks, parseSplits, parseTasks, selectSplit } from '../../tooluse/tasks.ts';
import { createRetailDomain, type RetailDomain } from './domain.ts';
import { loadRetailData, type RetailData } from './load.ts';
import type { RetailToolSet } from './tools.ts';

export const RETAIL_ENV_IDS = { v0: 'longrun/retail-v0', v1: 'longrun/retail-v1' } as const;

/** The task file of each τ² release, relative to the data folder. */
export const RETAIL_TASK_FILES: Record<RetailToolSet, string> = { v0: join('v0.x', 'tasks.json'), v1: 'tasks.json' };

export function resolveRetailDataDir(dataDir?: string): string {
  return resolve(dataDir ?? process.env.LONGRUN_TAU2_RETAIL ?? join('..', 'shared', 'tau2', 'retail'));
}

export interface RetailTaskSet {
  domain: RetailDomain;
  tasks: Task[];
  /** Every task of the file, whatever the split. */
  allTasks: Task[];
}

const dataByDir = new Map<string, RetailData>();
const taskSets = new Map<string, { domain: RetailDomain; allTasks: Task[]; splits: Splits }>();

/**
 * The retail domain and the tasks of one split, for one τ² release. A folder's DB is loaded once per process and
 * shared by both releases (episode DBs are copy-on-write views of it).
 */
export function loadRetailTaskSet(options: { dataDir?: string; version?: RetailToolSet; tasksFile?: string; split?: string } = {}): RetailTaskSet {
  const dir = resolveRetailDataDir(options.dataDir);
  const version = options.version ?? 'v1';
  const tasksPath = options.tasksFile ? resolve(options.tasksFile) : join(dir, RETAIL_TASK_FILES[version]);
  const key = `${dir}\0${tasksPath}\0${version}`;
  let entry = taskSets.get(key);
  if (!entry) {
    let data = dataByDir.get(dir);
    if (!data) {
      data = loadRetailData(dir);
      dataByDir.set(dir, data);
    }
    const allTasks = tasksPath === join(dir, 'tasks.json') ? parseTasks(data.tasks, tasksPath) : loadTasks(tasksPath);
    entry = { domain: createRetailDomain(data, { toolSet: version }), allTasks, splits: parseSplits(data.splits, join(dir, 'split_tasks.json')) };
    taskSets.set(key, entry);
  }
  return { domain: entry.domain, allTasks: entry.allTasks, tasks: selectSplit(entry.allTasks, entry.splits, options.split ?? DEFAULT_SPLIT) };
}
