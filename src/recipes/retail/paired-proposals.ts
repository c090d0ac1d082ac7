/**
 * Two retail-synth evaluations of the same tasks side by side, family by family (issue 50: numbers on an untouched test
 * world): mean@1 and first-proposal success (a success with no proposal turned down, src/recipes/retail/proposals.ts)
 * of each, their paired differences with the standard error over tasks, pass@k and pass^k, and the episodes that end at
 * the turn limit. `longrun analyze proposals` prints it.
 *
 * Each side is a `longrun eval --out` folder played with the scripted user, or its per-episode proposal rows (one JSON
 * object a line: task, family, trial, reward, ending, proposals, proposals turned down), the small form such results are
 * committed in: `longrun analyze proposals EVAL_DIR --jsonl` writes it. Tasks are paired by id; when the two sides do
 * not hold the same tasks with all their trials (an evaluation still running) only the tasks complete in both are
 * paired, and the table says how many.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import { isSuccess, meanStdErr, passAtK, passHatK } from '../../tooluse/metrics.ts';
import { firstProposalSuccess, proposalCounts } from './proposals.ts';

/** One episode, as committed. */
export interface ProposalRow {
  taskId: string;
  family: string;
  trial: number;
  reward: number;
  /** The episode's terminationReason (`max_turns` is the turn limit). */
  ending: string;
  /** Confirmation questions the agent asked. */
  proposals: number;
  /** Of those, the ones the customer turned down. */
  turnedDown: number;
}

export interface ProposalRun { name: string; rows: ProposalRow[] }

/** The ending that is the turn limit. */
export const TURN_LIMIT = 'max_turns';

/** The finished episodes of a `longrun eval --out` folder, with the family of each task from the tasks file its config names. */
export function proposalRowsOfEvalFolder(dir: string): ProposalRow[] {
  for (const f of ['config.json', 'trajectories.jsonl']) if (!existsSync(join(dir, f))) throw new Error(`${dir} is not a \`longrun eval --out\` folder: it has no ${f}`);
  const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as { tasksFile?: unknown; user?: unknown };
  if (config.user !== undefined && config.user !== 'scripted') throw new Error(`${dir}: proposals are read from the scripted customer's replies; this eval used --user ${String(config.user)}`);
  const tasksFile = config.tasksFile;
  if (typeof tasksFile !== 'string' || !existsSync(tasksFile)) throw new Error(`${dir}/config.json names no readable tasks file (got ${String(tasksFile)})`);
  const tasks = JSON.parse(readFileSync(tasksFile, 'utf8')) as { id: string; longrun?: { family?: string } }[];
  const family = new Map(tasks.map((t) => [t.id, t.longrun?.family ?? 'task']));
  const rows: ProposalRow[] = [];
  readFileSync(join(dir, 'trajectories.jsonl'), 'utf8').split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    let r: { taskId?: unknown; trial?: unknown; status?: unknown; reward?: unknown; terminationReason?: unknown; messages?: unknown };
    try {
      r = JSON.parse(line);
    } catch (e) {
      throw new Error(`${dir}/trajectories.jsonl line ${i + 1} is not JSON (${(e as Error).message})`, { cause: e });
    }
    if (r.status !== 'ok') return;
    if (typeof r.taskId !== 'string' || typeof r.reward !== 'number' || typeof r.trial !== 'number' || !Array.isArray(r.messages)) {
      throw new Error(`${dir}/trajectories.jsonl line ${i + 1}: an episode needs taskId, trial, reward and messages`);
    }
    const c = proposalCounts(r.messages as { role: 'user'; content: string }[]);
    rows.push({ taskId: r.taskId, family: family.get(r.taskId) ?? 'task', trial: r.trial, reward: r.reward, ending: typeof r.terminationReason === 'string' ? r.terminationReason : 'unknown', proposals: c.proposals, turnedDown: c.turnedDown });
  });
  return rows.sort((a, b) => (a.taskId === b.taskId ? a.trial - b.trial : a.taskId < b.taskId ? -1 : 1));
}

/** Rows as JSONL, the committed form. */
export function formatProposalRows(rows: readonly ProposalRow[]): string {
  return rows.map((r) => JSON.stringify({ taskId: r.taskId, family: r.family, trial: r.trial, reward: r.reward, ending: r.ending, proposals: r.proposals, turnedDown: r.turnedDown })).join('\n') + '\n';
}

/** Reads rows written by formatProposalRows; a line that is not such a row stops it with the file and line. */
export function parseProposalRows(text: string, file: string): ProposalRow[] {
  const rows: ProposalRow[] = [];
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    let r: Partial<ProposalRow>;
    try {
      r = JSON.parse(line) as Partial<ProposalRow>;
    } catch (e) {
      throw new Error(`${file}:${i + 1}: not JSON (${(e as Error).message})`, { cause: e });
    }
    const ok = typeof r.taskId === 'string' && typeof r.family === 'string' && Number.isInteger(r.trial) && typeof r.reward === 'number' && Number.isFinite(r.reward) &&
      typeof r.ending === 'string' && Number.isInteger(r.proposals) && Number.isInteger(r.turnedDown);
    if (!ok) throw new Error(`${file}:${i + 1}: a proposal row needs taskId, family, trial, reward, ending, proposals and turnedDown`);
    rows.push(r as ProposalRow);
  });
  if (rows.length === 0) throw new Error(`${file}: no episodes`);
  return rows;
}

/** An eval folder or a file of proposal rows, by what the path is. */
export function readProposalRun(path: string): ProposalRun {
  let dir: boolean;
  try {
    dir = statSync(path).isDirectory();
  } catch (e) {
    throw new Error(`cannot read ${path} (${(e as Error).message})`, { cause: e });
  }
  const rows = dir ? proposalRowsOfEvalFolder(path) : parseProposalRows(readFileSync(path, 'utf8'), path);
  if (rows.length === 0) throw new Error(`${path}: no finished episodes`);
  return { name: basename(path).replace(/(\.proposals)?\.jsonl$/, ''), rows };
}

interface TaskStats { family: string; rewards: number[]; first: number[]; turnLimit: number; turnedDown: number }

function byTask(rows: readonly ProposalRow[]): Map<string, TaskStats> {
  const out = new Map<string, TaskStats>();
  for (const r of rows) {
    const t = out.get(r.taskId) ?? { family: r.family, rewards: [], first: [], turnLimit: 0, turnedDown: 0 };
    t.rewards.push(r.reward);
    t.first.push(firstProposalSuccess(r.reward, { proposals: r.proposals, accepted: 0, turnedDown: r.turnedDown, changesOfMind: 0, turnedDownBeforeAccepted: 0 }) ? 1 : 0);
    if (r.ending === TURN_LIMIT) t.turnLimit++;
    t.turnedDown += r.turnedDown;
    out.set(r.taskId, t);
  }
  return out;
}

const avg = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

export interface SideStats {
  meanAt1: { mean: number; stdErr: number };
  firstProposal: { mean: number; stdErr: number };
  passAtK: number;
  passHatK: number;
  episodes: number;
  turnLimit: number;
  turnedDownPerEpisode: number;
}

export interface PairedFamilyRow {
  family: string;
  tasks: number;
  base: SideStats;
  other: SideStats;
  /** other − base, the mean of the per-task differences and its standard error over tasks. */
  meanDiff: { mean: number; stdErr: number };
  firstProposalDiff: { mean: number; stdErr: number };
}

export interface PairedTable { base: string; other: string; k: number; rows: PairedFamilyRow[]; baseTasks: number; otherTasks: number }

/**
 * Per family (by name, then `all`): both sides' statistics over the tasks both hold with all their trials (k, the most
 * trials any task has on either side), and the paired differences; pass@k and pass^k at that k.
 */
export function pairedProposalTable(base: ProposalRun, other: ProposalRun): PairedTable {
  const a = byTask(base.rows);
  const b = byTask(other.rows);
  const common = [...a.keys()].filter((t) => b.has(t)).sort();
  if (common.length === 0) throw new Error(`${base.name} and ${other.name} have no task in common`);
  for (const t of common) if (a.get(t)!.family !== b.get(t)!.family) throw new Error(`task ${t} is ${a.get(t)!.family} in ${base.name} but ${b.get(t)!.family} in ${other.name}: not the same task set`);
  // Every trial of a task or none: a task an evaluation has not finished (fewer trials than the most any task has) is left out.
  const k = Math.max(...[...a.values(), ...b.values()].map((t) => t.rewards.length));
  const ids = common.filter((t) => a.get(t)!.rewards.length === k && b.get(t)!.rewards.length === k);
  if (ids.length === 0) throw new Error(`${base.name} and ${other.name} have no task with all ${k} trials in both`);
  const side = (m: Map<string, TaskStats>, tasks: readonly string[]): SideStats => {
    const ts = tasks.map((t) => m.get(t)!);
    const episodes = ts.reduce((n, t) => n + t.rewards.length, 0);
    return {
      meanAt1: meanStdErr(ts.map((t) => avg(t.rewards))),
      firstProposal: meanStdErr(ts.map((t) => avg(t.first))),
      passAtK: avg(ts.map((t) => passAtK(t.rewards.length, t.rewards.filter(isSuccess).length, k))),
      passHatK: avg(ts.map((t) => passHatK(t.rewards.length, t.rewards.filter(isSuccess).length, k))),
      episodes,
      turnLimit: ts.reduce((n, t) => n + t.turnLimit, 0),
      turnedDownPerEpisode: ts.reduce((n, t) => n + t.turnedDown, 0) / episodes,
    };
  };
  const row = (family: string, tasks: readonly string[]): PairedFamilyRow => ({
    family,
    tasks: tasks.length,
    base: side(a, tasks),
    other: side(b, tasks),
    meanDiff: meanStdErr(tasks.map((t) => avg(b.get(t)!.rewards) - avg(a.get(t)!.rewards))),
    firstProposalDiff: meanStdErr(tasks.map((t) => avg(b.get(t)!.first) - avg(a.get(t)!.first))),
  });
  const families = [...new Set(ids.map((t) => a.get(t)!.family))].sort();
  return {
    base: base.name, other: other.name, k, baseTasks: a.size, otherTasks: b.size,
    rows: [...families.map((f) => row(f, ids.filter((t) => a.get(t)!.family === f))), row('all', ids)],
  };
}

const f3 = (x: number) => x.toFixed(3);
const pm = (x: { mean: number; stdErr: number }) => `${f3(x.mean)} ± ${f3(x.stdErr)}`;
const signedPm = (x: { mean: number; stdErr: number }) => `${x.mean >= 0 ? '+' : '−'}${f3(Math.abs(x.mean))} ± ${f3(x.stdErr)}`;

/** The table as Markdown, `base → other` in the two-sided columns; ± is the standard error over tasks. */
export function formatPairedTable(t: PairedTable): string {
  const paired = t.rows[t.rows.length - 1]!.tasks;
  const partial = t.baseTasks !== paired || t.otherTasks !== paired;
  const head = `${t.base} → ${t.other}: ${paired} tasks paired, ${t.k} trials each${partial ? ` (of ${t.baseTasks} and ${t.otherTasks} tasks: only those with all ${t.k} trials in both)` : ''}; ` +
    `± is the standard error over tasks (differences paired by task); turn limit: episodes ending at it`;
  return [
    head,
    '',
    `| family | tasks | mean@1 ${t.base} | mean@1 ${t.other} | Δ mean@1 | first-proposal ${t.base} | first-proposal ${t.other} | Δ first-proposal | pass@${t.k} | pass^${t.k} | turn limit | turned down / episode |`,
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...t.rows.map((r) =>
      `| ${r.family} | ${r.tasks} | ${pm(r.base.meanAt1)} | ${pm(r.other.meanAt1)} | ${signedPm(r.meanDiff)} | ${pm(r.base.firstProposal)} | ${pm(r.other.firstProposal)} | ${signedPm(r.firstProposalDiff)} | ` +
      `${f3(r.base.passAtK)} → ${f3(r.other.passAtK)} | ${f3(r.base.passHatK)} → ${f3(r.other.passHatK)} | ${r.base.turnLimit}/${r.base.episodes} → ${r.other.turnLimit}/${r.other.episodes} | ` +
      `${r.base.turnedDownPerEpisode.toFixed(2)} → ${r.other.turnedDownPerEpisode.toFixed(2)} |`),
  ].join('\n') + '\n';
}
