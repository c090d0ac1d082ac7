/**
 * Paired comparison of held-out runs on the same tasks. Each argument is either a probe printout of
 * `scripts/probe-heldout.ts` (one line per episode: `=== <task> (<family>) reward <r> …`) or the `--out` folder of
 * `longrun eval` (its `trajectories.jsonl`; families from the `longrun.family` of the tasks file named in its
 * `config.json`). For each run after the first (the baseline) it prints the mean reward, the difference from the
 * baseline with the standard error of the mean per-task difference (tasks as the unit, so the task-to-task spread
 * that both share cancels), and per-family means; for eval folders also pass@k and pass^k at the smallest trial
 * count, tool calls and their errors, and how the episodes ended.
 *
 *   node --import tsx scripts/compare-probes.ts BASE OTHER [OTHER2 …]
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { parseEpisodeLines } from '../src/tooluse/episode-lines.ts';
import { isSuccess, meanStdErr, passAtK, passHatK } from '../src/tooluse/metrics.ts';

interface Probe { name: string; byTask: Map<string, number[]>; family: Map<string, string>; summary?: string }

interface EvalRow {
  taskId: string;
  status: string;
  reward: number;
  terminationReason?: string;
  toolErrors?: number;
  messages?: { role: string; toolCalls?: { name: string }[] | null; error?: boolean }[];
}

/**
 * The episode's first identity lookup (find_user_id_by_email / _by_name_zip): did it find the user? undefined when
 * there was none. On tasks whose user exists this measures whether the agent copied the identity it was given.
 */
function firstLookupFound(messages: NonNullable<EvalRow['messages']>): boolean | undefined {
  for (let i = 0; i < messages.length; i++) {
    const call = messages[i].role === 'assistant' ? messages[i].toolCalls?.[0] : undefined;
    if (call?.name.startsWith('find_user_id_by_')) return messages[i + 1]?.role === 'tool' && messages[i + 1].error !== true;
  }
  return undefined;
}

/** A `longrun eval --out` folder: rewards by task, families from its tasks file, and a line about the episodes. */
function readEval(dir: string): Probe {
  const file = join(dir, 'trajectories.jsonl');
  if (!existsSync(file)) throw new Error(`${dir}: no trajectories.jsonl (not a longrun eval --out folder)`);
  const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as { tasksFile?: string | null };
  const family = new Map<string, string>();
  if (config.tasksFile && existsSync(config.tasksFile)) {
    const tasks = JSON.parse(readFileSync(config.tasksFile, 'utf8')) as { id: string; longrun?: { family?: string } }[];
    for (const t of tasks) family.set(t.id, t.longrun?.family ?? 'task');
  }
  const byTask = new Map<string, number[]>();
  const ends = new Map<string, number>();
  let calls = 0, errors = 0, episodes = 0, lookups = 0, found = 0;
  for (const line of readFileSync(file, 'utf8').split('\n')) {
    if (!line.trim()) continue;
    const r = JSON.parse(line) as EvalRow;
    if (r.status !== 'ok') continue;
    byTask.set(r.taskId, [...(byTask.get(r.taskId) ?? []), r.reward]);
    if (!family.has(r.taskId)) family.set(r.taskId, 'task');
    episodes++;
    ends.set(r.terminationReason ?? '?', (ends.get(r.terminationReason ?? '?') ?? 0) + 1);
    errors += r.toolErrors ?? 0;
    for (const m of r.messages ?? []) if (m.role === 'assistant') calls += m.toolCalls?.length ?? 0;
    const first = family.get(r.taskId) === 'failed_auth' ? undefined : firstLookupFound(r.messages ?? []);
    if (first !== undefined) { lookups++; if (first) found++; }
  }
  if (byTask.size === 0) throw new Error(`${dir}: no finished episodes in trajectories.jsonl`);
  for (const t of [...family.keys()]) if (!byTask.has(t)) family.delete(t);
  const k = Math.min(...[...byTask.values()].map((rs) => rs.length));
  const at = (f: typeof passAtK) => mean([...byTask.values()].map((rs) => f(rs.length, rs.filter(isSuccess).length, k)));
  const endText = [...ends].sort((a, b) => b[1] - a[1]).map(([t, n]) => `${t} ${n}`).join(', ');
  const summary = `${episodes} episodes, ${k}+ a task: pass@${k} ${at(passAtK).toFixed(3)}, pass^${k} ${at(passHatK).toFixed(3)}; ` +
    `${calls} tool calls, ${errors} errors; first identity lookups that found the user (user exists) ${found}/${lookups}; ended: ${endText}`;
  return { name: basename(dir), byTask, family, summary };
}

const read = (path: string): Probe => (statSync(path).isDirectory() ? readEval(path) : readProbe(path));

function readProbe(path: string): Probe {
  const byTask = new Map<string, number[]>();
  const family = new Map<string, string>();
  for (const e of parseEpisodeLines(readFileSync(path, 'utf8'), path)) {
    byTask.set(e.taskId, [...(byTask.get(e.taskId) ?? []), e.reward]);
    family.set(e.taskId, e.family);
  }
  return { name: basename(path), byTask, family };
}

const mean = (xs: readonly number[]) => meanStdErr(xs).mean;
const taskMeans = (p: Probe) => new Map([...p.byTask].map(([t, rs]) => [t, mean(rs)]));

const paths = process.argv.slice(2);
if (paths.length < 2) throw new Error('usage: compare-probes.ts BASE.txt OTHER.txt [OTHER2.txt …]');
const [base, ...others] = paths.map(read);
const baseMeans = taskMeans(base);
const families = [...new Set(base.family.values())].sort();
const familyMeans = (means: Map<string, number>) =>
  families.map((f) => `${f} ${mean([...means].filter(([t]) => base.family.get(t) === f).map(([, v]) => v)).toFixed(2)}`).join(', ');
const { stdErr: baseSe } = meanStdErr([...baseMeans.values()]);
console.log(`${base.name}: mean ${mean([...baseMeans.values()]).toFixed(4)} ± ${baseSe.toFixed(4)} over ${baseMeans.size} tasks | ${familyMeans(baseMeans)}`);
if (base.summary) console.log(`  ${base.summary}`);
for (const o of others) {
  const m = taskMeans(o);
  const missing = [...baseMeans.keys()].filter((t) => !m.has(t));
  if (missing.length || m.size !== baseMeans.size) throw new Error(`${o.name}: not the same tasks as ${base.name} (${missing.length} missing, ${m.size} vs ${baseMeans.size})`);
  const { mean: dm, stdErr: se } = meanStdErr([...baseMeans].map(([t, v]) => m.get(t)! - v));
  const { stdErr: ose } = meanStdErr([...m.values()]);
  console.log(`${o.name}: mean ${mean([...m.values()]).toFixed(4)} ± ${ose.toFixed(4)}, difference ${dm >= 0 ? '+' : ''}${dm.toFixed(4)} ± ${se.toFixed(4)} (paired over tasks) | ${familyMeans(m)}`);
  if (o.summary) console.log(`  ${o.summary}`);
}
