/**
 * A `longrun eval --out` folder as the diagnostic scripts read it: its episodes (`trajectories.jsonl`, one JSON object a
 * line) and the tasks of the tasks file its `config.json` names. A folder without either file, or whose config names no
 * readable tasks file, gets an error that says which.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

export function readEvalFolder<Task extends { id: string }, Row>(dir: string): { tasks: Task[]; rows: Row[] } {
  for (const f of ['config.json', 'trajectories.jsonl']) if (!existsSync(join(dir, f))) throw new Error(`${dir} is not a \`longrun eval --out\` folder: it has no ${f}`);
  const tasksFile = (JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as { tasksFile?: unknown }).tasksFile;
  if (typeof tasksFile !== 'string' || !existsSync(tasksFile)) throw new Error(`${dir}/config.json names no readable tasks file (got ${String(tasksFile)})`);
  const tasks = JSON.parse(readFileSync(tasksFile, 'utf8')) as Task[];
  const rows = readFileSync(join(dir, 'trajectories.jsonl'), 'utf8').split('\n').filter((l) => l.trim()).map((l, i) => {
    try {
      return JSON.parse(l) as Row;
    } catch (e) {
      throw new Error(`${dir}/trajectories.jsonl line ${i + 1} is not JSON (${(e as Error).message})`, { cause: e });
    }
  });
  return { tasks, rows };
}
