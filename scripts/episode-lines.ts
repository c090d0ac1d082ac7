/**
 * Writes the per-episode lines of a `longrun eval --out` folder (`=== <task> (<family>) reward <r> trial <t>
 * <termination>`, src/tooluse/episode-lines.ts), the form held-out results are committed in under docs/results/ so
 * that `scripts/compare-probes.ts` and `longrun plot --heldout` can pair and draw them without the eval folder. The
 * families come from the tasks file named in the folder's `config.json`.
 *
 *   node --import tsx scripts/episode-lines.ts EVAL_DIR > FILE.heldout.txt
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { formatEpisodeLines } from '../src/tooluse/episode-lines.ts';

const dir = process.argv[2];
if (!dir || process.argv.length > 3) {
  console.error('usage: node --import tsx scripts/episode-lines.ts EVAL_DIR > FILE');
  process.exit(2);
}
for (const f of ['config.json', 'trajectories.jsonl']) if (!existsSync(join(dir, f))) throw new Error(`${dir} is not a \`longrun eval --out\` folder: it has no ${f}`);
const tasksFile = (JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as { tasksFile?: unknown }).tasksFile;
if (typeof tasksFile !== 'string' || !existsSync(tasksFile)) throw new Error(`${dir}/config.json names no readable tasks file (got ${String(tasksFile)})`);
const family = new Map((JSON.parse(readFileSync(tasksFile, 'utf8')) as { id: string; longrun?: { family?: string } }[]).map((t) => [t.id, t.longrun?.family ?? 'task']));
const rows = readFileSync(join(dir, 'trajectories.jsonl'), 'utf8').split('\n').filter((l) => l.trim())
  .map((l) => JSON.parse(l) as { taskId: string; trial: number; reward: number; terminationReason?: string });
process.stdout.write(formatEpisodeLines(rows.map((r) => ({ taskId: r.taskId, family: family.get(r.taskId) ?? 'task', reward: r.reward, trial: r.trial, termination: r.terminationReason ?? 'unknown' }))));
