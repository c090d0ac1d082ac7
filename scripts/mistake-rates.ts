/**
 * The imperfect demonstrator at several mistake rates: the expert's mean τ² reward and success (reward 1) on generated
 * tasks, overall and per family, with the mistakes it made per decision point.
 *
 *   nice -n 19 node --import tsx scripts/mistake-rates.ts [--rates 0.1,0.2,0.3,0.5] [--count 1000] [--difficulty 1]
 *     [--world-seed 17] [--task-seed 18] [--seed 19] [--kinds a,b]
 *
 * Prints a markdown table (one row per family and rate, then the totals).
 */
import { parseArgs } from 'node:util';
import { createRetailDomain } from '../src/domains/retail/domain.ts';
import { parseMistakeKinds } from '../src/domains/retail/synth/expert-mistakes.ts';
import { makeAgent, runRollouts } from '../src/domains/retail/synth/rollouts.ts';
import { generateTasks } from '../src/domains/retail/synth/task-gen.ts';
import { ScriptedRetailUser } from '../src/domains/retail/synth/user-sim.ts';
import { generateWorld } from '../src/domains/retail/synth/world.ts';

const { values } = parseArgs({
  options: {
    rates: { type: 'string', default: '0.1,0.2,0.3,0.5' },
    count: { type: 'string', default: '1000' },
    difficulty: { type: 'string', default: '1' },
    'world-seed': { type: 'string', default: '17' },
    'task-seed': { type: 'string', default: '18' },
    seed: { type: 'string', default: '19' },
    kinds: { type: 'string' },
  },
});
const rates = values.rates.split(',').map(Number);
const kinds = values.kinds === undefined ? undefined : parseMistakeKinds(values.kinds.split(','));
const difficulty = Number(values.difficulty);

const world = generateWorld(Number(values['world-seed']));
const domain = createRetailDomain({ db: world, policy: 'policy' });
const tasks = generateTasks(world, Number(values['task-seed']), { count: Number(values.count), difficulty }).tasks;

interface Cell {
  episodes: number;
  reward: number;
  successes: number;
}
const add = (c: Cell | undefined, reward: number): Cell => ({ episodes: (c?.episodes ?? 0) + 1, reward: (c?.reward ?? 0) + reward, successes: (c?.successes ?? 0) + (reward === 1 ? 1 : 0) });

const rows: string[] = [];
const totals: string[] = [];
const families = [...new Set(tasks.map((t) => t.longrun.family))];
const byRate = new Map<number, Map<string, Cell>>();
for (const rate of rates) {
  const cells = new Map<string, Cell>();
  const summary = await runRollouts({
    domain,
    tasks,
    agent: makeAgent('expert', { mistakeRate: rate, ...(kinds ? { mistakeKinds: kinds } : {}) }),
    user: new ScriptedRetailUser(),
    seed: Number(values.seed),
    onEpisode: (t, task) => cells.set(task.longrun.family, add(cells.get(task.longrun.family), t.reward)),
  });
  byRate.set(rate, cells);
  const m = summary.mistakes!;
  const byKind = Object.entries(m.byKind)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
  totals.push(
    `| ${rate} | ${summary.metrics.avgReward.toFixed(3)} ± ${summary.metrics.rewardStdErr.toFixed(3)} | ${(100 * summary.metrics.successRate).toFixed(1)} % | ${m.count} / ${m.opportunities} (${((100 * m.count) / m.opportunities).toFixed(1)} %) | ${byKind} |`,
  );
}
for (const family of families) {
  const parts = rates.map((r) => {
    const c = byRate.get(r)!.get(family)!;
    return `${(c.reward / c.episodes).toFixed(3)} / ${((100 * c.successes) / c.episodes).toFixed(1)} %`;
  });
  const n = byRate.get(rates[0]!)!.get(family)!.episodes;
  rows.push(`| ${family} | ${n} | ${parts.join(' | ')} |`);
}
console.log(`${tasks.length} tasks, difficulty ${difficulty}, world seed ${values['world-seed']}, task seed ${values['task-seed']}, episode seed ${values.seed}${kinds ? `, kinds ${kinds.join(',')}` : ''}\n`);
console.log('| rate | mean reward ± s.e. | success | mistakes / decision points | by kind |\n| --- | --- | --- | --- | --- |');
console.log(totals.join('\n'));
console.log(`\nper family, mean reward / success:\n\n| family | tasks | ${rates.map((r) => `rate ${r}`).join(' | ')} |\n| --- | --- | ${rates.map(() => '---').join(' | ')} |`);
console.log(rows.join('\n'));
