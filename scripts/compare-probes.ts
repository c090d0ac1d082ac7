/**
 * Paired comparison of held-out probes: reads the episode headers that `scripts/probe-heldout.ts` prints (one line per
 * episode: `=== <task> (<family>) reward <r> …`) for a baseline and one or more other checkpoints, run on the same
 * tasks, and prints each one's mean reward, its difference from the baseline with the standard error of the mean
 * per-task difference (tasks as the unit, so the task-to-task spread that both share cancels), and per-family means.
 *
 *   node --import tsx scripts/compare-probes.ts BASE.txt OTHER.txt [OTHER2.txt …]
 */
import { readFileSync } from 'node:fs';
import { basename } from 'node:path';
import { meanStdErr } from '../src/tooluse/metrics.ts';

interface Probe { name: string; byTask: Map<string, number[]>; family: Map<string, string> }

function readProbe(path: string): Probe {
  const byTask = new Map<string, number[]>();
  const family = new Map<string, string>();
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const m = /^=== (\S+) \((\S+)\) reward (\S+)/.exec(line);
    if (!m) continue;
    const r = Number(m[3]);
    if (!Number.isFinite(r)) throw new Error(`${path}: bad reward in '${line.slice(0, 120)}'`);
    byTask.set(m[1], [...(byTask.get(m[1]) ?? []), r]);
    family.set(m[1], m[2]);
  }
  if (byTask.size === 0) throw new Error(`${path}: no episode headers (=== <task> (<family>) reward <r>) found`);
  return { name: basename(path), byTask, family };
}

const mean = (xs: readonly number[]) => meanStdErr(xs).mean;
const taskMeans = (p: Probe) => new Map([...p.byTask].map(([t, rs]) => [t, mean(rs)]));

const paths = process.argv.slice(2);
if (paths.length < 2) throw new Error('usage: compare-probes.ts BASE.txt OTHER.txt [OTHER2.txt …]');
const [base, ...others] = paths.map(readProbe);
const baseMeans = taskMeans(base);
const families = [...new Set(base.family.values())].sort();
const familyMeans = (means: Map<string, number>) =>
  families.map((f) => `${f} ${mean([...means].filter(([t]) => base.family.get(t) === f).map(([, v]) => v)).toFixed(2)}`).join(', ');
console.log(`${base.name}: mean ${mean([...baseMeans.values()]).toFixed(4)} over ${baseMeans.size} tasks | ${familyMeans(baseMeans)}`);
for (const o of others) {
  const m = taskMeans(o);
  const missing = [...baseMeans.keys()].filter((t) => !m.has(t));
  if (missing.length || m.size !== baseMeans.size) throw new Error(`${o.name}: not the same tasks as ${base.name} (${missing.length} missing, ${m.size} vs ${baseMeans.size})`);
  const { mean: dm, stdErr: se } = meanStdErr([...baseMeans].map(([t, v]) => m.get(t)! - v));
  console.log(`${o.name}: mean ${mean([...m.values()]).toFixed(4)}, difference ${dm >= 0 ? '+' : ''}${dm.toFixed(4)} ± ${se.toFixed(4)} (paired over tasks) | ${familyMeans(m)}`);
}
