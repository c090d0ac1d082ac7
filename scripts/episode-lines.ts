/**
 * Writes the per-episode lines of a `longrun eval --out` folder (`=== <task> (<family>) reward <r> trial <t>
 * <termination>`, src/tooluse/episode-lines.ts), the form held-out results are committed in under docs/results/ so
 * that `scripts/compare-probes.ts` and `longrun plot --heldout` can pair and draw them without the eval folder. The
 * families come from the tasks file named in the folder's `config.json`.
 *
 *   node --import tsx scripts/episode-lines.ts EVAL_DIR > FILE.heldout.txt
 */
import { formatEpisodeLines } from '../src/tooluse/episode-lines.ts';
import { readEvalFolder } from './eval-folder.ts';

const dir = process.argv[2];
if (!dir || process.argv.length > 3) {
  console.error('usage: node --import tsx scripts/episode-lines.ts EVAL_DIR > FILE');
  process.exit(2);
}
const { tasks, rows } = readEvalFolder<{ id: string; longrun?: { family?: string } }, { taskId: string; trial: number; reward: number; terminationReason?: string }>(dir);
const family = new Map(tasks.map((t) => [t.id, t.longrun?.family ?? 'task']));
process.stdout.write(formatEpisodeLines(rows.map((r) => ({ taskId: r.taskId, family: family.get(r.taskId) ?? 'task', reward: r.reward, trial: r.trial, termination: r.terminationReason ?? 'unknown' }))));
