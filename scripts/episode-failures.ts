/**
 * Where held-out episodes go wrong, read from a `longrun eval --out` folder (its `trajectories.jsonl`, and the tasks
 * file named in its `config.json` for each task's family and requests). Per family:
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
 *
 *   node --import tsx scripts/episode-failures.ts EVAL_DIR [EVAL_DIR …]
 */
import { NO_REPLIES } from '../src/domains/retail/synth/user-phrasing.ts';
import { readEvalFolder } from './eval-folder.ts';

interface Row {
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

export function proposalKind(text: string): string {
  return PROPOSALS.find(([, re]) => re.test(text))?.[0] ?? 'unrecognised';
}

type TaskJson = {
  id: string;
  longrun?: { family?: string; requests?: { kind?: string }[] };
  evaluation_criteria?: { actions?: { name?: string; arguments?: { product_id?: unknown; item_ids?: unknown; new_item_ids?: unknown } }[] | null };
};

function taskInfo(tasks: readonly TaskJson[]): Map<string, TaskInfo> {
  /** The item ids of the first gold write that names items (empty when none does). */
  const itemIds = (t: TaskJson) => {
    const write = (t.evaluation_criteria?.actions ?? []).find((a) => Array.isArray(a.arguments?.item_ids));
    return write ? [...(write.arguments!.item_ids as unknown[]), ...((write.arguments!.new_item_ids as unknown[] | undefined) ?? [])].map(String) : [];
  };
  const products = (t: TaskJson) =>
    new Set((t.evaluation_criteria?.actions ?? []).filter((a) => a.name === 'get_product_details').map((a) => String(a.arguments?.product_id)));
  return new Map(tasks.map((t) => [t.id, { family: t.longrun?.family ?? '?', firstKind: t.longrun?.requests?.[0]?.kind ?? '?', products: products(t), itemIds: itemIds(t) }]));
}

/** How many of the agent's proposals the customer turned down: user messages that open with a scripted refusal. */
const refused = (r: Row) => r.messages.filter((m) => m.role === 'user' && typeof m.content === 'string' && NO_REPLIES.some((no) => (m.content as string).startsWith(no))).length;

const count = (m: Map<string, number>, k: string) => m.set(k, (m.get(k) ?? 0) + 1);
const top = (m: Map<string, number>, n: number) => [...m].sort((a, b) => b[1] - a[1]).slice(0, n).map(([k, v]) => `${k} ${v}`).join(', ');

function report(dir: string): void {
  const folder = readEvalFolder<TaskJson, Row>(dir);
  const tasks = taskInfo(folder.tasks);
  const rows = folder.rows;
  const byFamily = new Map<string, Row[]>();
  for (const r of rows) {
    const fam = tasks.get(r.taskId)?.family ?? '?';
    const list = byFamily.get(fam) ?? [];
    list.push(r);
    byFamily.set(fam, list);
  }
  console.log(`\n${dir}: ${rows.length} episodes`);
  console.log('| family | episodes | mean reward | first proposal = the request | first product looked up = a gold one | first proposal names the gold items | 3 or more proposals turned down | first proposals | first tool errors | ended |');
  console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | --- | --- | --- |');
  let right = 0;
  let proposed = 0;
  for (const [fam, rs] of [...byFamily].sort()) {
    const kinds = new Map<string, number>();
    const errors = new Map<string, number>();
    const ends = new Map<string, number>();
    let ok = 0;
    let n = 0;
    let goldProduct = 0;
    let lookedUp = 0;
    const looping = rs.filter((r) => refused(r) >= 3).length;
    let goldItems = 0;
    let itemProposals = 0;
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
    const mean = rs.reduce((a, r) => a + r.reward, 0) / rs.length;
    console.log(`| ${fam} | ${rs.length} | ${mean.toFixed(3)} | ${scored && n > 0 ? `${ok}/${n}` : '—'} | ${lookedUp > 0 ? `${goldProduct}/${lookedUp}` : '—'} | ${itemProposals > 0 ? `${goldItems}/${itemProposals}` : '—'} | ${looping} | ${top(kinds, 4) || '—'} | ${top(errors, 3) || '—'} | ${top(ends, 3)} |`);
  }
  console.log(`first proposals that name the task's action (write families): ${right}/${proposed}`);
  const buckets = new Map<string, { n: number; reward: number; turnLimit: number }>();
  for (const r of rows) {
    const k = refused(r);
    const key = k >= 3 ? '3 or more' : String(k);
    const b = buckets.get(key) ?? { n: 0, reward: 0, turnLimit: 0 };
    b.n++;
    b.reward += r.reward;
    if (r.terminationReason === 'max_turns') b.turnLimit++;
    buckets.set(key, b);
  }
  console.log('\n| proposals turned down | episodes | mean reward | ended at the turn limit |');
  console.log('| --- | ---: | ---: | ---: |');
  for (const key of ['0', '1', '2', '3 or more']) {
    const b = buckets.get(key);
    if (b) console.log(`| ${key} | ${b.n} | ${(b.reward / b.n).toFixed(3)} | ${b.turnLimit} |`);
  }
}

const dirs = process.argv.slice(2);
if (dirs.length === 0) {
  console.error('usage: node --import tsx scripts/episode-failures.ts EVAL_DIR [EVAL_DIR …]');
  process.exit(2);
}
for (const d of dirs) report(d);
