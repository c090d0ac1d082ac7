/**
 * What a retail stream's steps train on: tokens generated and tokens kept in the step's rows, by kind of document
 * (conversation, identity drill, write drill, copy drill), for the stream of an SFT run file, and the requests the
 * conversations make (the kind of each one's first user message, as the expert reads it), summed over the steps, and the
 * noted items each step trains on (lines of the expert's notes that name an item, `{"name": …`; src/domains/retail/
 * synth/expert.ts, `notes`, and the lookup drills' recall turns).
 *
 *   node --import tsx scripts/stream-composition.ts --config RUN.yaml [--steps 5,77]
 *
 * Kinds are read from the documents: the step's first `conversationTokens` are its conversations (they come first),
 * a copy drill has no harmony header, a write drill ends in a write call, the other drills are identity drills.
 */
import { parseArgs } from 'node:util';
import { loadRun } from '../src/recipes/load-run.ts';
import { parseRetailStream, RetailStream } from '../src/recipes/retail/stream.ts';
import { detectKind } from '../src/domains/retail/synth/expert-parse.ts';

const { values: a } = parseArgs({ options: { config: { type: 'string' }, steps: { type: 'string', default: '5,77' } } });
if (!a.config) throw new Error('usage: --config RUN.yaml [--steps 5,77]');
const steps = a.steps!.split(',').map(Number);
if (!steps.every((s) => Number.isInteger(s) && s >= 0)) throw new Error(`--steps must be non-negative integers, got ${a.steps}`);
const { run, built } = await loadRun(a.config, { keepSft: true });
if (run.sft?.stream === undefined || !built.conversation) throw new Error(`${a.config} has no sft.stream section on task retail-synth`);
const seqLen = Number((run.sft.config as { seqLen?: number } | undefined)?.seqLen ?? 6144);
const rowsPerStep = Number((run.sft.config as { rowsPerStep?: number } | undefined)?.rowsPerStep ?? 3);
const stream = new RetailStream(parseRetailStream(run.sft.stream), { format: built.deps.format, tokenizer: built.tokenizer, conversation: built.conversation, seqLen, rowsPerStep });
const requests = new Map<string, number>();
const WRITE = /to=functions\.(cancel_pending_order|modify_pending_order_\w+|modify_user_address|return_delivered_order_items|exchange_delivered_order_items)/;
for (const step of steps) {
  const d = await stream.stepData(step);
  const conv = stream.lastStats!.conversationTokens;
  let seen = 0;
  const kinds = d.docs.map((doc) => {
    const before = seen;
    seen += doc.tokens.length;
    const text = built.tokenizer.decode([...doc.tokens]);
    if (before < conv) {
      const first = /<\|start\|>user<\|message\|>([^]*?)<\|end\|>/.exec(text)?.[1] ?? '';
      const kind = detectKind(first);
      const name = kind === null ? 'none' : typeof kind === 'object' ? `info ${kind.info}` : kind;
      requests.set(name, (requests.get(name) ?? 0) + 1);
      return 'conversation';
    }
    if (!text.startsWith('<|start|>')) return 'copy';
    return WRITE.test(text) ? 'write' : /to=functions\.get_order_details/.test(text) ? 'lookup' : 'identity';
  });
  const kept = new Set(d.rows.flatMap((r) => r.docs));
  let notedItems = 0;
  for (const i of kept) {
    const text = built.tokenizer.decode([...d.docs[i].tokens]);
    for (const part of text.split('<|channel|>analysis<|message|>').slice(1)) notedItems += part.slice(0, part.indexOf('<|end|>')).split('\n').filter((l) => l.startsWith('{"name": ')).length;
  }
  const table: Record<string, { generated: number; kept: number; docs: string }> = {};
  const keptTotal = d.rows.reduce((s, r) => s + r.length, 0);
  const counts: Record<string, [number, number]> = {};
  d.docs.forEach((doc, i) => {
    const t = (table[kinds[i]] ??= { generated: 0, kept: 0, docs: '' });
    const c = (counts[kinds[i]] ??= [0, 0]);
    t.generated += doc.tokens.length;
    c[1]++;
    if (kept.has(i)) { t.kept += doc.tokens.length; c[0]++; }
  });
  for (const [k, t] of Object.entries(table)) t.docs = `${counts[k][0]}/${counts[k][1]} kept`;
  console.log(`step ${step}: ${keptTotal} of ${seqLen * rowsPerStep} row tokens filled, ${notedItems} noted items`);
  if (stream.lastStats!.drillKept) console.log(`  drill tokens kept, as the stream counts them: ${JSON.stringify(stream.lastStats!.drillKept)}`);
  for (const [k, t] of Object.entries(table)) console.log(`  ${k.padEnd(12)} generated ${String(t.generated).padStart(6)}  kept ${String(t.kept).padStart(6)} (${(100 * t.kept / keptTotal).toFixed(1)} % of kept)  ${t.docs}`);
}
const total = [...requests.values()].reduce((a, b) => a + b, 0);
console.log(`conversations of the ${steps.length} steps by first request (${total}): ${[...requests].sort((a, b) => b[1] - a[1]).map(([k, v]) => `${k} ${v}`).join(', ')}`);
