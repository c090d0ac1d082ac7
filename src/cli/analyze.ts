/**
 * `longrun analyze`: reading what runs and evals recorded, without a model.
 *
 * - `compare BASE OTHER…`: paired comparison of held-out runs on the same tasks (eval folders or per-episode files).
 * - `episode-lines EVAL_DIR`: an eval folder's per-episode lines, the form held-out results are committed in.
 * - `failures EVAL_DIR…`: where retail episodes go wrong, per family (first proposal, tool errors, refusals, endings).
 * - `transcripts FILE --task ID…`: recorded conversations as Markdown.
 * - `advantage-weights EPISODES…`: how a GRPO run's gradient divides between its successes and its failures.
 * - `tools EVAL_DIR…`: how the agent used its tools, any env (src/tooluse/tool-usage.ts).
 * - `proposals BASE OTHER`: mean@1 and first-proposal success side by side per family, paired (retail-synth, scripted user).
 * - `sink-kl --checkpoint DIR --episodes EVAL_DIR`: the one analysis that loads a model: per-token KL between the
 *   checkpoint's next-token distributions with exact and with ignored attention sinks, on recorded episodes
 *   (src/recipes/sink-kl.ts).
 *
 * Each analysis is a function that returns its text, so tests call it directly; the commands print it.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { Command } from 'commander';
import { NO_REPLIES } from '../domains/retail/synth/user-phrasing.ts';
import { grpoSequenceAdvantages } from '../rl/advantages.ts';
import { formatEpisodeLines, parseEpisodeLines } from '../tooluse/episode-lines.ts';
import { formatPairedTable, formatProposalRows, pairedProposalTable, proposalRowsOfEvalFolder, readProposalRun } from '../recipes/retail/paired-proposals.ts';
import { isSuccess, meanStdErr, passAtK, passHatK } from '../tooluse/metrics.ts';
import { formatSinkKl, sinkKl } from '../recipes/sink-kl.ts';
import { runSummaryTable, summarizeRunFile } from '../rl/run-summary.ts';
import { formatToolUsage, toolUsageOf } from '../tooluse/tool-usage.ts';

// ---------------------------------------------------------------------------------------------------------------
// Eval folders

/**
 * A `longrun eval --out` folder: its episodes (`trajectories.jsonl`, one JSON object a line) and the tasks of the tasks
 * file its `config.json` names. A folder without either file, or whose config names no readable tasks file, gets an
 * error that says which.
 */
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

type FamilyTask = { id: string; longrun?: { family?: string } };

/**
 * The per-episode lines of a `longrun eval --out` folder (`=== <task> (<family>) reward <r> trial <t> <termination>`,
 * src/tooluse/episode-lines.ts), the form held-out results are committed in under docs/results/, so that
 * `longrun analyze compare` and `longrun plot --heldout` can pair and draw them without the eval folder. The families
 * come from the tasks file named in the folder's `config.json`.
 */
export function episodeLinesOf(dir: string): string {
  const { tasks, rows } = readEvalFolder<FamilyTask, { taskId: string; trial: number; reward: number; terminationReason?: string }>(dir);
  const family = new Map(tasks.map((t) => [t.id, t.longrun?.family ?? 'task']));
  return formatEpisodeLines(rows.map((r) => ({ taskId: r.taskId, family: family.get(r.taskId) ?? 'task', reward: r.reward, trial: r.trial, termination: r.terminationReason ?? 'unknown' })));
}

// ---------------------------------------------------------------------------------------------------------------
// compare

/** One held-out run: rewards by task, each task's family, and a line about its episodes (pass@k, endings, …). */
export interface HeldoutRun { name: string; byTask: Map<string, number[]>; family: Map<string, string>; summary?: string }

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
    const call = messages[i]!.role === 'assistant' ? messages[i]!.toolCalls?.[0] : undefined;
    if (call?.name.startsWith('find_user_id_by_')) return messages[i + 1]?.role === 'tool' && messages[i + 1]!.error !== true;
  }
  return undefined;
}

const mean = (xs: readonly number[]) => meanStdErr(xs).mean;

/** A `longrun eval --out` folder as a held-out run: families from its tasks file when it can be read, else 'task'. */
function readEvalRun(dir: string): HeldoutRun {
  const file = join(dir, 'trajectories.jsonl');
  if (!existsSync(file)) throw new Error(`${dir}: no trajectories.jsonl (not a longrun eval --out folder)`);
  const configFile = join(dir, 'config.json');
  if (!existsSync(configFile)) throw new Error(`${dir}: no config.json (not a longrun eval --out folder)`);
  const config = JSON.parse(readFileSync(configFile, 'utf8')) as { tasksFile?: string | null };
  const family = new Map<string, string>();
  if (config.tasksFile && existsSync(config.tasksFile)) {
    const tasks = JSON.parse(readFileSync(config.tasksFile, 'utf8')) as { id: string; longrun?: { family?: string } }[];
    for (const t of tasks) family.set(t.id, t.longrun?.family ?? 'task');
  }
  const byTask = new Map<string, number[]>();
  const ends = new Map<string, number>();
  let calls = 0, errors = 0, lookups = 0, found = 0;
  readFileSync(file, 'utf8').split('\n').forEach((line, n) => {
    if (!line.trim()) return;
    let r: EvalRow;
    try {
      r = JSON.parse(line) as EvalRow;
    } catch (e) {
      throw new Error(`${file}:${n + 1}: not JSON (${(e as Error).message})`, { cause: e });
    }
    if (r.status !== 'ok') return;
    if (typeof r.taskId !== 'string' || !Number.isFinite(r.reward)) throw new Error(`${file}:${n + 1}: an ok row needs a taskId and a numeric reward`);
    byTask.set(r.taskId, [...(byTask.get(r.taskId) ?? []), r.reward]);
    if (!family.has(r.taskId)) family.set(r.taskId, 'task');
    ends.set(r.terminationReason ?? '?', (ends.get(r.terminationReason ?? '?') ?? 0) + 1);
    errors += r.toolErrors ?? 0;
    for (const m of r.messages ?? []) if (m.role === 'assistant') calls += m.toolCalls?.length ?? 0;
    const first = family.get(r.taskId) === 'failed_auth' ? undefined : firstLookupFound(r.messages ?? []);
    if (first !== undefined) {
      lookups++;
      if (first) found++;
    }
  });
  if (byTask.size === 0) throw new Error(`${dir}: no finished episodes in trajectories.jsonl`);
  for (const t of [...family.keys()]) if (!byTask.has(t)) family.delete(t);
  const endText = [...ends].sort((a, b) => b[1] - a[1]).map(([t, n]) => `${t} ${n}`).join(', ');
  const summary = `${passSummary(byTask)}; ` +
    `${calls} tool calls, ${errors} errors; first identity lookups that found the user (user exists) ${found}/${lookups}; ended: ${endText}`;
  return { name: basename(dir), byTask, family, summary };
}

/** pass@k and pass^k at the smallest trial count of any task (k), averaged over tasks. */
function passSummary(byTask: Map<string, number[]>): string {
  const k = Math.min(...[...byTask.values()].map((rs) => rs.length));
  const at = (f: typeof passAtK) => mean([...byTask.values()].map((rs) => f(rs.length, rs.filter(isSuccess).length, k)));
  const episodes = [...byTask.values()].reduce((a, rs) => a + rs.length, 0);
  return `${episodes} episodes, ${k}+ a task: pass@${k} ${at(passAtK).toFixed(3)}, pass^${k} ${at(passHatK).toFixed(3)}`;
}

/**
 * A per-episode file (`=== <task> (<family>) reward <r> …` lines) as a held-out run; its summary gives pass@k and
 * pass^k, and how the episodes ended when the lines say (`… trial <t> <ending>`, as `episode-lines` writes them).
 */
function readEpisodeFile(path: string): HeldoutRun {
  const byTask = new Map<string, number[]>();
  const family = new Map<string, string>();
  const text = readFileSync(path, 'utf8');
  for (const e of parseEpisodeLines(text, path)) {
    byTask.set(e.taskId, [...(byTask.get(e.taskId) ?? []), e.reward]);
    family.set(e.taskId, e.family);
  }
  const ends = new Map<string, number>();
  for (const m of text.matchAll(/^=== \S+(?: \(\S+\))? reward \S+ trial \d+ (\S+)/gm)) ends.set(m[1]!, (ends.get(m[1]!) ?? 0) + 1);
  const endText = [...ends].sort((a, b) => b[1] - a[1]).map(([t, n]) => `${t} ${n}`).join(', ');
  return { name: basename(path), byTask, family, summary: passSummary(byTask) + (endText ? `; ended: ${endText}` : '') };
}

/** An eval folder or a per-episode file, by what the path is. */
export function readHeldoutRun(path: string): HeldoutRun {
  let isDir: boolean;
  try {
    isDir = statSync(path).isDirectory();
  } catch (e) {
    throw new Error(`cannot read ${path} (${(e as Error).message})`, { cause: e });
  }
  return isDir ? readEvalRun(path) : readEpisodeFile(path);
}

const signed = (x: number, digits: number) => `${x >= 0 ? '+' : ''}${x.toFixed(digits)}`;

/**
 * Paired comparison of held-out runs on the same tasks. The first run is the baseline; for each other it gives the mean
 * reward, the difference from the baseline with the standard error of the mean per-task difference (tasks as the unit,
 * so the task-to-task spread that both share cancels), per-family means (the baseline's families), and pass@k and
 * pass^k at the smallest trial count; how the episodes ended where the lines or folder say, and for eval folders also
 * tool calls and their errors and whether the first identity lookup found the user.
 * Runs that do not cover the same tasks are an error.
 */
export function compareRuns(runs: readonly HeldoutRun[]): string {
  if (runs.length < 2) throw new Error('compare needs a baseline and at least one other run');
  const [base, ...others] = runs as [HeldoutRun, ...HeldoutRun[]];
  const taskMeans = (p: HeldoutRun) => new Map([...p.byTask].map(([t, rs]) => [t, mean(rs)]));
  const baseMeans = taskMeans(base);
  const families = [...new Set(base.family.values())].sort();
  const familyMeans = (means: Map<string, number>) =>
    families.map((f) => `${f} ${mean([...means].filter(([t]) => base.family.get(t) === f).map(([, v]) => v)).toFixed(2)}`).join(', ');
  const { stdErr: baseSe } = meanStdErr([...baseMeans.values()]);
  const out = [`${base.name}: mean ${mean([...baseMeans.values()]).toFixed(4)} ± ${baseSe.toFixed(4)} over ${baseMeans.size} tasks | ${familyMeans(baseMeans)}`];
  if (base.summary) out.push(`  ${base.summary}`);
  for (const o of others) {
    const m = taskMeans(o);
    const missing = [...baseMeans.keys()].filter((t) => !m.has(t));
    if (missing.length || m.size !== baseMeans.size) {
      throw new Error(`${o.name}: not the same tasks as ${base.name} (${missing.length} of the baseline's missing, ${m.size} tasks vs ${baseMeans.size})`);
    }
    const { mean: dm, stdErr: se } = meanStdErr([...baseMeans].map(([t, v]) => m.get(t)! - v));
    const { stdErr: ose } = meanStdErr([...m.values()]);
    out.push(`${o.name}: mean ${mean([...m.values()]).toFixed(4)} ± ${ose.toFixed(4)}, difference ${signed(dm, 4)} ± ${se.toFixed(4)} (paired over tasks) | ${familyMeans(m)}`);
    if (o.summary) out.push(`  ${o.summary}`);
  }
  return out.join('\n') + '\n';
}

// ---------------------------------------------------------------------------------------------------------------
// failures

interface FailureRow {
  taskId: string;
  reward: number;
  terminationReason?: string;
  messages: { role: string; content?: unknown; toolCalls?: { name: string; arguments: unknown }[] | null; error?: boolean }[];
}

interface TaskInfo { family: string; firstKind: string; products: Set<string>; itemIds: string[] }

/** The expert's proposal openings (src/domains/retail/synth/expert.ts), most specific first. */
const PROPOSALS: [string, RegExp][] = [
  ['exchange', /details: exchange in order/i],
  ['modify_items', /details: modify in order/i],
  ['return', /details: return from order/i],
  ['cancel', /details: cancel order/i],
  ['modify_payment', /change: pay for order/i],
  ['modify_address', /change: set the shipping address/i],
  ['modify_user_address', /change: update your default address/i],
];

/** The action a proposal asks the customer to confirm, by the expert's wording ('unrecognised' for other text). */
export function proposalKind(text: string): string {
  return PROPOSALS.find(([, re]) => re.test(text))?.[0] ?? 'unrecognised';
}

type RetailTaskJson = {
  id: string;
  longrun?: { family?: string; requests?: { kind?: string }[] };
  evaluation_criteria?: { actions?: { name?: string; arguments?: { product_id?: unknown; item_ids?: unknown; new_item_ids?: unknown } }[] | null };
};

function taskInfo(tasks: readonly RetailTaskJson[]): Map<string, TaskInfo> {
  /** The item ids of the first gold write that names items (empty when none does). */
  const itemIds = (t: RetailTaskJson) => {
    const write = (t.evaluation_criteria?.actions ?? []).find((a) => Array.isArray(a.arguments?.item_ids));
    return write ? [...(write.arguments!.item_ids as unknown[]), ...((write.arguments!.new_item_ids as unknown[] | undefined) ?? [])].map(String) : [];
  };
  const products = (t: RetailTaskJson) =>
    new Set((t.evaluation_criteria?.actions ?? []).filter((a) => a.name === 'get_product_details').map((a) => String(a.arguments?.product_id)));
  return new Map(tasks.map((t) => [t.id, { family: t.longrun?.family ?? '?', firstKind: t.longrun?.requests?.[0]?.kind ?? '?', products: products(t), itemIds: itemIds(t) }]));
}

/** How many of the agent's proposals the customer turned down: user messages that open with a scripted refusal. */
export const proposalsRefused = (r: Pick<FailureRow, 'messages'>): number =>
  r.messages.filter((m) => m.role === 'user' && typeof m.content === 'string' && NO_REPLIES.some((no) => (m.content as string).startsWith(no))).length;

const count = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
const top = (m: Map<string, number>, n: number) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `${k} ${v}`).join(', ');

/**
 * Where retail episodes go wrong, as two Markdown tables. Per family:
 *
 * - the action the agent first proposed (its first message that asks for a yes/no confirmation), classified by the
 *   expert's proposal wording ("Here are the details: cancel order …", "Here is the change: pay for order …", …), set
 *   against the kind of the task's first request: does the agent pick the right action?
 * - the first tool error of each episode: which tool, which error;
 * - whether the first product the agent looks up (`get_product_details`) is one the task's gold actions look up: on
 *   item tasks, did it find the item asked for by its name among the order's items?
 * - whether the first proposal names every item id of the task's gold item write (`item_ids`, and `new_item_ids` for
 *   exchanges and modifications): on item tasks, were the right items (and variants) chosen?
 * - how the episodes ended.
 *
 * Then, over all families, the episodes by how many of the agent's proposals the customer turned down (its reply to a
 * confirmation question is one of the scripted user's refusals, `NO_REPLIES` in src/domains/retail/synth/user-phrasing.ts):
 * the customer, like τ²'s, never tires of turning proposals down, so an agent can keep proposing until one is accepted.
 */
export function failureTables(name: string, taskList: readonly RetailTaskJson[], rows: readonly FailureRow[]): string {
  const tasks = taskInfo(taskList);
  const byFamily = new Map<string, FailureRow[]>();
  for (const r of rows) {
    const fam = tasks.get(r.taskId)?.family ?? '?';
    byFamily.set(fam, [...(byFamily.get(fam) ?? []), r]);
  }
  const out = [
    `${name}: ${rows.length} episodes`,
    '| family | episodes | mean reward | first proposal = the request | first product looked up = a gold one | first proposal names the gold items | 3 or more proposals turned down | first proposals | first tool errors | ended |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |',
  ];
  let right = 0;
  let proposed = 0;
  for (const [fam, rs] of [...byFamily].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0))) {
    const kinds = new Map<string, number>();
    const errors = new Map<string, number>();
    const ends = new Map<string, number>();
    let ok = 0, n = 0, goldProduct = 0, lookedUp = 0, goldItems = 0, itemProposals = 0;
    const looping = rs.filter((r) => proposalsRefused(r) >= 3).length;
    for (const r of rs) {
      const first = r.messages.flatMap((m) => (m.role === 'assistant' ? m.toolCalls ?? [] : [])).find((c) => c.name === 'get_product_details');
      const gold = tasks.get(r.taskId)?.products ?? new Set<string>();
      if (first && gold.size > 0) {
        lookedUp++;
        if (gold.has(String((first.arguments as { product_id?: unknown } | null)?.product_id))) goldProduct++;
      }
      count(ends, r.terminationReason ?? '?');
      const text = r.messages.find((m) => m.role === 'assistant' && typeof m.content === 'string' && /\(yes\/no\)/.test(m.content));
      const goldIds = tasks.get(r.taskId)?.itemIds ?? [];
      if (text && goldIds.length > 0) {
        itemProposals++;
        if (goldIds.every((id) => String(text.content).includes(id))) goldItems++;
      }
      if (text) {
        const k = proposalKind(String(text.content));
        count(kinds, k);
        n++;
        if (k === tasks.get(r.taskId)?.firstKind) ok++;
      }
      for (let i = 0; i < r.messages.length; i++) {
        const m = r.messages[i]!;
        if (m.role !== 'tool' || m.error !== true) continue;
        const call = [...r.messages.slice(0, i)].reverse().find((x) => x.role === 'assistant' && x.toolCalls?.length)?.toolCalls?.[0];
        count(errors, `${call?.name ?? '?'}: ${String(m.content).slice(0, 28)}`);
        break;
      }
    }
    // The right action is the first request's only in single-request write families: failed_auth, forbidden and info
    // tasks call for no write, multi tasks for several, so their proposals are listed but not scored.
    const scored = !['failed_auth', 'forbidden', 'info', 'multi'].includes(fam);
    if (scored) {
      right += ok;
      proposed += n;
    }
    const meanReward = rs.reduce((a, r) => a + r.reward, 0) / rs.length;
    out.push(`| ${fam} | ${rs.length} | ${meanReward.toFixed(3)} | ${scored && n > 0 ? `${ok}/${n}` : '—'} | ${lookedUp > 0 ? `${goldProduct}/${lookedUp}` : '—'} | ${itemProposals > 0 ? `${goldItems}/${itemProposals}` : '—'} | ${looping} | ${top(kinds, 4) || '—'} | ${top(errors, 3) || '—'} | ${top(ends, 3)} |`);
  }
  out.push(`first proposals that name the task's action (write families): ${right}/${proposed}`);
  const buckets = new Map<string, { n: number; reward: number; turnLimit: number }>();
  for (const r of rows) {
    const k = proposalsRefused(r);
    const key = k >= 3 ? '3 or more' : String(k);
    const b = buckets.get(key) ?? { n: 0, reward: 0, turnLimit: 0 };
    b.n++;
    b.reward += r.reward;
    if (r.terminationReason === 'max_turns') b.turnLimit++;
    buckets.set(key, b);
  }
  out.push('', '| proposals turned down | episodes | mean reward | ended at the turn limit |', '| --- | ---: | ---: | ---: |');
  for (const key of ['0', '1', '2', '3 or more']) {
    const b = buckets.get(key);
    if (b) out.push(`| ${key} | ${b.n} | ${(b.reward / b.n).toFixed(3)} | ${b.turnLimit} |`);
  }
  return out.join('\n') + '\n';
}

/** `failureTables` of a `longrun eval --out` folder of retail episodes. */
export function episodeFailures(dir: string): string {
  const { tasks, rows } = readEvalFolder<RetailTaskJson, FailureRow>(dir);
  rows.forEach((r, i) => {
    if (typeof r?.taskId !== 'string' || !Number.isFinite(r.reward) || !Array.isArray(r.messages)) {
      throw new Error(`${dir}/trajectories.jsonl line ${i + 1}: needs a taskId, a numeric reward and messages (write the folder with longrun eval --out)`);
    }
  });
  return failureTables(dir, tasks, rows);
}

// ---------------------------------------------------------------------------------------------------------------
// transcripts

interface Message { role: string; content?: unknown; toolCalls?: { name: string; arguments: unknown }[] | null; name?: string }
export interface EpisodeRow {
  kind?: string;
  step?: number;
  taskId: string;
  sample?: number;
  trial?: number;
  family?: string;
  reward: number;
  termination?: string;
  terminationReason?: string;
  messages?: Message[];
}

const text = (c: unknown): string => (typeof c === 'string' ? c : c == null ? '' : JSON.stringify(c));

/** One episode as Markdown: a heading with its reward and ending, then one line a message; tool results are cut to `toolChars`. */
export function episodeMarkdown(r: EpisodeRow, toolChars: number): string {
  const where = [r.kind, r.step !== undefined ? `step ${r.step}` : undefined, `sample ${r.sample ?? r.trial ?? 0}`].filter(Boolean).join(', ');
  const lines = [`#### ${r.taskId}${r.family ? ` (${r.family})` : ''}, ${where}: reward ${r.reward}, ended by ${r.termination ?? r.terminationReason ?? '?'}`, ''];
  for (const m of r.messages ?? []) {
    if (m.toolCalls?.length) {
      for (const call of m.toolCalls) lines.push(`- **agent** calls \`${call.name}(${JSON.stringify(call.arguments)})\``);
      const said = text(m.content).trim();
      if (said) lines.push(`- **agent**: ${said}`);
    } else if (m.role === 'tool') {
      const out = text(m.content);
      lines.push(`- *tool${m.name ? ` ${m.name}` : ''}*: \`${out.length > toolChars ? `${out.slice(0, toolChars)}…` : out}\``);
    } else {
      lines.push(`- **${m.role === 'assistant' ? 'agent' : m.role}**: ${text(m.content).trim()}`);
    }
  }
  return lines.join('\n') + '\n';
}

/** The rows with messages of the given tasks (and steps and kind, when given), in task, step, sample order. */
export function selectEpisodes(rows: EpisodeRow[], o: { tasks: string[]; steps: number[]; kind?: string }): EpisodeRow[] {
  return rows
    .filter((r) => r.messages?.length && o.tasks.includes(r.taskId) && (o.steps.length === 0 || o.steps.includes(r.step ?? -1)) && (!o.kind || r.kind === o.kind))
    .sort((a, b) => o.tasks.indexOf(a.taskId) - o.tasks.indexOf(b.taskId) || (a.step ?? 0) - (b.step ?? 0) || (a.sample ?? a.trial ?? 0) - (b.sample ?? b.trial ?? 0));
}

export interface TranscriptOptions { task: string[]; step: string[]; kind?: string; toolChars: string }

/** The transcripts of a GRPO `episodes.jsonl` or an eval folder's `trajectories.jsonl`, as Markdown. */
export function transcripts(file: string, o: TranscriptOptions): string {
  if (o.task.length === 0) throw new Error('give at least one --task');
  const toolChars = Number(o.toolChars);
  if (!Number.isInteger(toolChars) || toolChars < 0) throw new Error(`--tool-chars must be a non-negative integer, got ${o.toolChars}`);
  const steps = o.step.map((s) => {
    const n = Number(s);
    if (!Number.isInteger(n) || n < 0) throw new Error(`--step must be a non-negative integer, got ${s}`);
    return n;
  });
  const path = existsSync(file) && statSync(file).isDirectory() ? join(file, 'trajectories.jsonl') : file;
  if (!existsSync(path)) throw new Error(`${path}: no such file`);
  const rows = readFileSync(path, 'utf8').split('\n').filter((l) => l.trim()).map((l, i) => {
    try {
      return JSON.parse(l) as EpisodeRow;
    } catch {
      throw new Error(`${path}:${i + 1}: not a JSON line`);
    }
  });
  const picked = selectEpisodes(rows, { tasks: o.task, steps, kind: o.kind });
  if (picked.length === 0) throw new Error(`${path}: no recorded conversation of ${o.task.join(', ')}${steps.length ? ` at steps ${steps.join(', ')}` : ''}`);
  return picked.map((r) => episodeMarkdown(r, toolChars)).join('\n');
}

// ---------------------------------------------------------------------------------------------------------------
// advantage-weights

interface Episode { kind: string; step: number; taskId: string; family?: string; reward: number; modelTokens: number }

interface Side { episodes: number; tokens: number; tokenWeight: number; seqWeight: number }
export interface Tally { pos: Side; neg: Side; groups: number; drawn: number; rewardSum: number }

const side = (): Side => ({ episodes: 0, tokens: 0, tokenWeight: 0, seqWeight: 0 });
const tally = (): Tally => ({ pos: side(), neg: side(), groups: 0, drawn: 0, rewardSum: 0 });

/**
 * The rows of an `episodes.jsonl`. A line that is not JSON, or a training row without the fields the tally reads (a file
 * of another kind, or cut short), stops with its file and line number rather than turning into NaN in the table.
 */
export function parseEpisodes(text: string, file: string): Episode[] {
  const out: Episode[] = [];
  text.split('\n').forEach((line, n) => {
    if (!line.trim()) return;
    let e: Partial<Episode>;
    try {
      e = JSON.parse(line) as Partial<Episode>;
    } catch (err) {
      throw new Error(`${file}:${n + 1}: not JSON (${(err as Error).message})`, { cause: err });
    }
    if (e === null || typeof e !== 'object') throw new Error(`${file}:${n + 1}: not an episode row`);
    if (e.kind === 'train' && !(Number.isFinite(e.step) && typeof e.taskId === 'string' && Number.isFinite(e.reward) && Number.isFinite(e.modelTokens))) {
      throw new Error(`${file}:${n + 1}: a training episode needs a numeric step, reward and modelTokens and a taskId (the rows trainer.episodesFile writes)`);
    }
    out.push(e as Episode);
  });
  return out;
}

/**
 * Each training group (the samples of one task at one step) gets GRPO's advantages again from the episodes' rewards
 * (`grpoSequenceAdvantages`, the trainer's formula: unbiased group std, ε 1e-6); groups whose rewards are all equal are
 * counted as drawn and carry nothing. Per family and over the run ('all'): the groups drawn, their reward sum, the
 * informative groups, and per side (positive, negative advantage) the episodes, their sampled tokens, Σ|A|·n (the
 * side's weight under token-mean) and Σ|A| (its weight under seq-mean-token-mean).
 */
export function advantageWeights(episodes: readonly Episode[]): Map<string, Tally> {
  const groups = new Map<string, Episode[]>();
  for (const e of episodes) {
    if (e.kind !== 'train') continue;
    const key = `${e.step}\u0000${e.taskId}`;
    const g = groups.get(key);
    if (g) g.push(e);
    else groups.set(key, [e]);
  }
  const out = new Map<string, Tally>([['all', tally()]]);
  for (const g of groups.values()) {
    const family = g[0]!.family ?? 'unknown';
    if (!out.has(family)) out.set(family, tally());
    for (const t of [out.get('all')!, out.get(family)!]) {
      t.drawn++;
      t.rewardSum += g.reduce((a, e) => a + e.reward, 0) / g.length;
    }
    if (g.length < 2 || g.every((e) => e.reward === g[0]!.reward)) continue;
    const adv = grpoSequenceAdvantages(g.map((e) => e.reward), g.map(() => 'g'));
    for (const t of [out.get('all')!, out.get(family)!]) {
      t.groups++;
      g.forEach((e, i) => {
        if (adv[i] === 0) return;
        const s = adv[i]! > 0 ? t.pos : t.neg;
        s.episodes++;
        s.tokens += e.modelTokens;
        s.tokenWeight += Math.abs(adv[i]!) * e.modelTokens;
        s.seqWeight += Math.abs(adv[i]!);
      });
    }
  }
  return out;
}

/** The table `longrun analyze advantage-weights` prints for one run. */
export function advantageWeightsTable(file: string, t: Map<string, Tally>): string {
  const out = [
    `${file}: groups drawn ${t.get('all')!.drawn}, informative ${t.get('all')!.groups}`,
    '| family | groups drawn | training reward | informative groups | episodes + / − | mean sampled tokens + / − | token-mean weight − : + | seq-mean weight − : + |',
    '| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ];
  const names = [...t.keys()].filter((k) => k !== 'all').sort();
  for (const name of [...names, 'all']) {
    const { pos, neg, groups, drawn, rewardSum } = t.get(name)!;
    const meanTokens = (s: Side) => (s.episodes ? Math.round(s.tokens / s.episodes) : 0);
    const ratio = (a: number, b: number) => (b > 0 ? (a / b).toFixed(2) : '—');
    const reward = drawn > 0 ? (rewardSum / drawn).toFixed(2) : '—';
    out.push(`| ${name} | ${drawn} | ${reward} | ${groups} | ${pos.episodes} / ${neg.episodes} | ${meanTokens(pos)} / ${meanTokens(neg)} | ${ratio(neg.tokenWeight, pos.tokenWeight)} | ${ratio(neg.seqWeight, pos.seqWeight)} |`);
  }
  return out.join('\n') + '\n';
}

// ---------------------------------------------------------------------------------------------------------------
// The commands

export function register(program: Command): void {
  const analyze = program
    .command('analyze')
    .description('read what runs and evals recorded: paired comparisons, failure breakdowns, transcripts, advantage weights');

  analyze
    .command('compare')
    .description('paired comparison of held-out runs on the same tasks: mean reward, difference from the first run ± its standard error over tasks, per-family means, pass@k and pass^k')
    .argument('<base>', 'the baseline: a longrun eval --out folder or a per-episode file (=== <task> (<family>) reward <r> lines)')
    .argument('<others...>', 'runs to compare with it, of the same tasks (folders or per-episode files)')
    .addHelpText('after', '\nExample:\n  longrun analyze compare docs/results/retail-grpo/base.heldout.txt docs/results/retail-grpo/grpo/seqmean-cost1.heldout.txt')
    .action((base: string, others: string[]) => {
      process.stdout.write(compareRuns([base, ...others].map(readHeldoutRun)));
    });

  analyze
    .command('episode-lines')
    .description('print the per-episode lines of an eval folder (=== <task> (<family>) reward <r> trial <t> <ending>), the form held-out results are committed in')
    .argument('<eval-dir>', 'a longrun eval --out folder')
    .addHelpText('after', '\nExample:\n  longrun analyze episode-lines runs/eval-base-t4 > base.heldout.txt')
    .action((dir: string) => {
      process.stdout.write(episodeLinesOf(dir));
    });

  analyze
    .command('failures')
    .description('where retail episodes go wrong, per family: first proposal against the request, products and items chosen, first tool errors, proposals turned down, endings')
    .argument('<eval-dirs...>', 'longrun eval --out folders of retail tasks (their config.json names the tasks file)')
    .addHelpText('after', '\nExample:\n  longrun analyze failures runs/eval-base-t4 runs/eval-grpo-t4')
    .action((dirs: string[]) => {
      process.stdout.write(dirs.map(episodeFailures).join('\n'));
    });

  const collect = (v: string, prev: string[]) => [...prev, v];
  analyze
    .command('transcripts')
    .description('recorded conversations as Markdown, from a GRPO episodes.jsonl or an eval folder (only the first samples of a GRPO group carry messages)')
    .argument('<file>', 'episodes.jsonl of a GRPO run, or a longrun eval --out folder or its trajectories.jsonl')
    .option('--task <id>', 'a task id to show (repeatable; at least one)', collect, [] as string[])
    .option('--step <n>', 'a training step to show (repeatable; default all)', collect, [] as string[])
    .option('--kind <kind>', 'only rows of this kind (val or train)')
    .option('--tool-chars <n>', 'characters kept of each tool result', '120')
    .addHelpText('after', '\nExample:\n  longrun analyze transcripts runs/demo/grpo/episodes.jsonl --kind val --task validation_23 --step 0 --step 4')
    .action((file: string, o: TranscriptOptions) => {
      process.stdout.write(transcripts(file, o));
    });

  analyze
    .command('runs')
    .description('training runs side by side from their metrics.jsonl: steps, seconds a step by phase, peak memory, training reward, the spread of the gradient norm')
    .argument('<files...>', 'metrics.jsonl files of GRPO/PPO runs (trainer.metricsFile); NAME=FILE labels a row')
    .addHelpText('after', '\nExample:\n  longrun analyze runs grpo=runs/ablations/value-model/grpo/metrics.jsonl head=runs/ablations/value-model/head/metrics.jsonl')
    .action((files: string[]) => {
      process.stdout.write(runSummaryTable(files.map((a) => {
        const eq = a.indexOf('=');
        return eq > 0 ? summarizeRunFile(a.slice(eq + 1), a.slice(0, eq)) : summarizeRunFile(a);
      })));
    });

  analyze
    .command('advantage-weights')
    .description("how a GRPO run's gradient divides between successes and failures, per family: groups drawn and informative, sampled tokens, the weight of each side under token-mean and seq-mean")
    .argument('<files...>', 'episodes.jsonl files of GRPO runs (trainer.episodesFile)')
    .addHelpText('after', '\nA ratio above 1 under token-mean means the failures outweigh the successes on the tokens they sample.\n\nExample:\n  longrun analyze advantage-weights runs/retail-grpo-seqmean/grpo/episodes.jsonl')
    .action((files: string[]) => {
      process.stdout.write(files.map((f) => advantageWeightsTable(f, advantageWeights(parseEpisodes(readFileSync(f, 'utf8'), f)))).join('\n'));
    });

  analyze
    .command('tools')
    .description('how the agent used its tools, any env: tool calls and failed calls per episode, the final-state match where the reward records one, and per tool its calls, failed share and how often it came first')
    .argument('<eval-dirs...>', 'longrun eval --out folders (or their trajectories.jsonl)')
    .addHelpText('after', '\nExample:\n  longrun analyze tools runs/costly/eval/sft300-test runs/costly/eval/grpo300-test')
    .action((dirs: string[]) => {
      process.stdout.write(formatToolUsage(dirs.map(toolUsageOf)));
    });

  analyze
    .command('proposals')
    .description('retail-synth with the scripted user, per family: mean@1 and first-proposal success (a success with no proposal turned down) of two runs, their paired differences ± the standard error over tasks, pass@k, pass^k, turn-limit endings')
    .argument('<base>', 'a longrun eval --out folder, or its per-episode proposal rows (a .jsonl file written with --jsonl)')
    .argument('[other]', 'the run to compare with it, of the same tasks (folder or rows)')
    .option('--jsonl', "with one eval folder: print its per-episode proposal rows (task, family, trial, reward, ending, proposals, turned down), the form they are committed in")
    .addHelpText('after', '\nExamples:\n  longrun analyze proposals runs/test-world-retail-base --jsonl > base.proposals.jsonl\n  longrun analyze proposals base.proposals.jsonl grpo.proposals.jsonl')
    .action((base: string, other: string | undefined, o: { jsonl?: boolean }) => {
      if (o.jsonl) {
        if (other !== undefined) throw new Error('--jsonl takes one eval folder');
        process.stdout.write(formatProposalRows(proposalRowsOfEvalFolder(base)));
        return;
      }
      if (other === undefined) throw new Error('proposals needs two runs to compare (or one eval folder with --jsonl)');
      process.stdout.write(formatPairedTable(pairedProposalTable(readProposalRun(base), readProposalRun(other))));
    });

  analyze
    .command('sink-kl')
    .description("the sinks ablation: per-token KL between a checkpoint's next-token distributions with exact attention sinks and with the sinks ignored (as an engine that drops them), teacher-forced on recorded episodes")
    .requiredOption('--checkpoint <dir>', 'a gpt-oss checkpoint folder')
    .requiredOption('--episodes <path>', 'a longrun eval --out folder run with --save-tokens (or its trajectories.jsonl)')
    .option('--max-episodes <n>', 'episodes used: trial 0 of each task first, in task order', '16')
    .option('--json', 'print the result as JSON')
    .addHelpText('after', '\nExample:\n  longrun eval --agent checkpoint --checkpoint models/retail-base --tasks val/tasks.json --num-tasks 16 --save-tokens --out runs/eval-tokens\n  longrun analyze sink-kl --checkpoint models/retail-base --episodes runs/eval-tokens')
    .action((o: { checkpoint: string; episodes: string; maxEpisodes: string; json?: boolean }) => {
      const r = sinkKl({ checkpoint: o.checkpoint, episodes: o.episodes, maxEpisodes: Number(o.maxEpisodes) });
      process.stdout.write(o.json ? JSON.stringify(r, null, 2) + '\n' : formatSinkKl(r));
    });
}
