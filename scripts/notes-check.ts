/**
 * How well a model writes the expert's notes (src/domains/retail/synth/expert.ts, `ExpertAgentOptions.notes`) in its
 * own episodes: reads the `trajectories.jsonl` of `longrun eval --out` folders (or `episodes.jsonl` of a GRPO run) and,
 * for every line of an agent's chain of thought that has the note's form, checks it against the tool results the
 * episode had read before it.
 *
 *   item notes   {"name": N, "product_id": P, "item_id": I} (and the ` -> {...}` tail of a proposal's note, ignored):
 *                - `verbatim`: the line up to its item id's closing brace is text of an earlier tool result;
 *                - `name`: some item named N was read; `product`: P is the product id of an item named N;
 *                  `item`: I is the item id of an item named N with product id P.
 *   user notes   {"user_id": U}: `user` — U is the id of a user whose details were read.
 * It then follows each note to the next tool call: `used` when that call's product_id (or user_id) is the note's id,
 * and reports the mean reward of episodes whose notes were all right against those with a wrong one.
 *
 *   node --import tsx scripts/notes-check.ts EVAL_DIR [EVAL_DIR …]
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { meanStdErr } from '../src/tooluse/metrics.ts';

interface Msg { role: string; content?: string | null; reasoning?: string; toolCalls?: { name: string; arguments: Record<string, unknown> }[] | null }
interface Row { taskId: string; reward?: number | null; messages?: Msg[] }

interface Tally { notes: number; verbatim: number; name: number; product: number; item: number; users: number; user: number; followed: number; used: number }

const ITEM = /^\{"name": ("(?:[^"\\]|\\.)*"), "product_id": "(\d+)", "item_id": "(\d+)"\}/;
const USER = /^\{"user_id": ("(?:[^"\\]|\\.)*")\}$/;

/** The items (name, product id, item id) that appear in a tool result, as the order and product details print them. */
function itemsIn(text: string): { name: string; product: string; item: string }[] {
  const out: { name: string; product: string; item: string }[] = [];
  for (const m of text.matchAll(/\{"name": ("(?:[^"\\]|\\.)*"), "product_id": "(\d+)", "item_id": "(\d+)"/g)) out.push({ name: JSON.parse(m[1]) as string, product: m[2], item: m[3] });
  return out;
}

function check(rows: readonly Row[]): { tally: Tally; clean: number[]; wrong: number[]; noteless: number[] } {
  const t: Tally = { notes: 0, verbatim: 0, name: 0, product: 0, item: 0, users: 0, user: 0, followed: 0, used: 0 };
  const clean: number[] = [], wrong: number[] = [], noteless: number[] = [];
  for (const r of rows) {
    const msgs = r.messages ?? [];
    let read = '';
    let notes = 0, bad = 0;
    msgs.forEach((m, i) => {
      if (m.role === 'tool') read += `${m.content ?? ''}\n`;
      if (m.role !== 'assistant' || !m.reasoning) return;
      const next = msgs.slice(i).find((x) => x.role === 'assistant' && x.toolCalls?.length)?.toolCalls?.[0];
      const seen = itemsIn(read);
      for (const line of m.reasoning.split('\n')) {
        const it = ITEM.exec(line);
        if (it) {
          notes++;
          t.notes++;
          const [name, product, item] = [JSON.parse(it[1]) as string, it[2], it[3]];
          const head = line.slice(0, line.indexOf('"item_id"')) + `"item_id": "${item}"`;
          if (read.includes(head)) t.verbatim++;
          const named = seen.filter((s) => s.name === name);
          const ok = named.some((s) => s.product === product && s.item === item);
          if (named.length) t.name++;
          if (named.some((s) => s.product === product)) t.product++;
          if (ok) t.item++;
          else bad++;
          if (next && typeof next.arguments.product_id === 'string') {
            t.followed++;
            if (next.arguments.product_id === product) t.used++;
          }
          continue;
        }
        const u = USER.exec(line.trim());
        if (u) {
          notes++;
          t.users++;
          const id = JSON.parse(u[1]) as string;
          if (read.includes(`{"user_id": "${id}", "name": `)) t.user++;
          else bad++;
          if (next && typeof next.arguments.user_id === 'string') {
            t.followed++;
            if (next.arguments.user_id === id) t.used++;
          }
        }
      }
    });
    const reward = r.reward ?? 0;
    (notes === 0 ? noteless : bad === 0 ? clean : wrong).push(reward);
  }
  return { tally: t, clean, wrong, noteless };
}

function readRows(dir: string): Row[] {
  const file = ['trajectories.jsonl', 'episodes.jsonl'].map((f) => join(dir, f)).find((f) => existsSync(f));
  if (!file) throw new Error(`${dir}: no trajectories.jsonl or episodes.jsonl`);
  const rows: Row[] = [];
  readFileSync(file, 'utf8').split('\n').forEach((line, i) => {
    if (line.trim() === '') return;
    let row: unknown;
    try {
      row = JSON.parse(line);
    } catch (e) {
      throw new Error(`${file}:${i + 1}: not JSON (${(e as Error).message})`, { cause: e });
    }
    if (typeof row !== 'object' || row === null || (row as Row).messages !== undefined && !Array.isArray((row as Row).messages)) {
      throw new Error(`${file}:${i + 1}: not an episode record (an object whose messages are a list)`);
    }
    rows.push(row as Row);
  });
  return rows;
}

const dirs = process.argv.slice(2);
if (dirs.length === 0) {
  console.error('usage: node --import tsx scripts/notes-check.ts EVAL_DIR [EVAL_DIR …]');
  process.exit(2);
}
const pct = (a: number, b: number) => (b ? `${a}/${b} (${((100 * a) / b).toFixed(0)} %)` : '0/0');
const fmt = (xs: number[]) => {
  if (xs.length === 0) return 'none';
  const { mean, stdErr } = meanStdErr(xs);
  return `${mean.toFixed(3)} ± ${stdErr.toFixed(3)} (${xs.length})`;
};
for (const dir of dirs) {
  const rows = readRows(dir);
  const { tally: t, clean, wrong, noteless } = check(rows);
  console.log(`${dir}: ${rows.length} episodes`);
  console.log(`  item notes ${t.notes}: verbatim ${pct(t.verbatim, t.notes)}, name read ${pct(t.name, t.notes)}, product id right ${pct(t.product, t.notes)}, item id right ${pct(t.item, t.notes)}`);
  console.log(`  user notes ${t.users}: a user read ${pct(t.user, t.users)}`);
  console.log(`  the next call uses the note's id: ${pct(t.used, t.followed)}`);
  console.log(`  reward: episodes with notes all right ${fmt(clean)}, with a wrong note ${fmt(wrong)}, without notes ${fmt(noteless)}`);
}
