/**
 * Copy diagnostic for an SFT checkpoint: the mean NLL of the assistant's digit tokens (the ids it copies from its
 * context) and of its name tokens (the letters of `first_name`, `last_name`, `email` and `user_id` arguments: the
 * names it copies), next to the mean NLL of its other tokens, on the last N expert documents of a run config.
 * `nameNllByPlace` splits the name tokens by argument and by place: the first token of a name must be found by
 * meaning (the email the user gave), the later ones follow it.
 * An agent that does not copy sits near ln(10) = 2.30 nats per digit with single-digit tokens (more with digit
 * groups); one that copies goes towards 0. `p>0.5` is the share of digit tokens the model gives more than half its
 * probability. `digitNllFirst` / `digitNllRest`: the first digit of a number and the digits after it (copied once the
 * number is found). `digitNllByPlace`: every digit the agent writes by its place in its number;
 * `orderIdDigitNll`: the digits of the order ids, by place (1st … 7th). Per-token figures depend on the tokenizer (a
 * group of three digits is one token); `numberNll` / `orderIdNll` (summed NLL per number and per order id) and
 * `numberSure` / `orderIdSure` (the share written with every token at p > 0.5) do not.
 *
 * `callP50` is the share of the assistant's tool calls (function name and JSON arguments) whose every token gets more than
 * half the model's probability under teacher forcing, so greedy decoding would write the call exactly; `callP50ByTool`
 * splits it by tool.
 * A config with `sft.stream` is scored on the stream's held-out conversations (the eval loss's).
 *
 * `decisionNll` / `decisionSure`: the NLL of the action word of each proposal ("Here is the change: pay …", "Here are the
 * details: return …"), the token where the agent decides what to do, and the share of them at p > 0.5 (`--show
 * decisions` prints each).
 * `--show FIELD:PLACE` (e.g. `first_name:first`) prints each such token with its probability, the model's three likeliest
 * tokens there, and the `--show-chars` characters of text before it (default 60); `--show digits` prints the digit
 * tokens that get at most half the probability.
 *
 * `noteIds`, `noteIdSure`, `noteIdFirstP`: the ids the agent writes in its notes (expert.ts, `notes`: the tool text an id
 * follows, as its chain of thought), the product and the item ids of `{"name": …, "product_id": …, "item_id": …}` up
 * to a proposal's ` -> ` (which names a new variant), each kind apart: how many, the share written with every token at
 * p > 0.5, and the median probability of their first digit group. The product id is found by the item's name alone;
 * the item id then follows the product id as in the order details. `variant`: the new variant's id after a proposal
 * note's ` -> {"options": {…}, "item_id": "`, found by its options (the product details print it before them), or after
 * ` -> {"item_id": "` at the end of a variant walk (`expert.walk`), copied from the walk's last entry. `walk`: the ids of
 * the variant entries a walk repeats from the product details.
 *
 * `lookupNotes`: the notes right before a `get_product_details` call, where the item is chosen by the name the customer
 * gave (`itemNote`, or with `expert.itemWalk` the order's items walked up to it): how many, `sure` the share written
 * with every token at p > 0.5 (the note's end included), `stopP` the median probability of the token after each entry
 * (a top-level JSON object; after it a newline, or the `,` of `, ` in a walk joined as printed: the walk goes on; the
 * note's end: it stops at this item), and `stopSure` the share of those at p > 0.5. A single-entry note has one.
 *
 * `--address` scores the last N documents that write an address instead, and splits out the address tokens of the write
 * call (`address1`, `address2`, `city`, `state`, `zip`: copied from the customer's sentence) as `addressNll`.
 *
 *   node --import tsx scripts/copy-nll.ts --config RUN.yaml --checkpoint SFT_CHECKPOINT [--docs 8] [--address] [--show first_name:first]
 */
import { parseArgs } from 'node:util';
import { sftDocuments } from '../src/recipes/sft-documents.ts';
import { microBatchInput } from '../src/rl/packing.ts';
import type { SftDocument } from '../src/rl/packing.ts';
import { heldOutWorldSeeds, parseRetailStream, streamEvalDocuments } from '../src/recipes/retail/stream.ts';
import { loadRun } from '../src/recipes/load-run.ts';
import { closingBrace, noteIdKind } from '../src/domains/retail/synth/expert.ts';

const { values: a } = parseArgs({ options: { config: { type: 'string' }, checkpoint: { type: 'string' }, docs: { type: 'string', default: '8' }, address: { type: 'boolean', default: false }, show: { type: 'string' }, 'show-chars': { type: 'string', default: '60' } } });
const showChars = Number(a['show-chars']);
if (!(Number.isInteger(showChars) && showChars >= 0)) throw new Error(`--show-chars must be a non-negative integer, got ${a['show-chars']}`);
if (!a.config || !a.checkpoint) throw new Error('usage: --config RUN.yaml --checkpoint DIR [--docs N] [--address] [--show FIELD:PLACE|digits] [--show-chars N]');
const n = Number(a.docs);
if (!(Number.isInteger(n) && n > 0)) throw new Error(`--docs must be a positive integer, got ${a.docs}`);
const { run, built } = await loadRun(a.config, {
  checkpoint: a.checkpoint,
  keepSft: true,
  edit: (raw) => {
    if (!raw.sft) throw new Error(`${a.config} has no sft section (copy-nll scores its expert documents)`);
    const sft = { ...(raw.sft as Record<string, unknown>) };
    for (const k of ['copyDrill', 'identityDrill', 'addressDrill', 'writeDrill']) delete sft[k]; // expert documents only
    raw.sft = sft;
  },
});
if (!built.model) throw new Error('the config has no gpt-oss policy');
/** A streamed stage is scored on its held-out conversations (fresh worlds under another seed, no drills). */
async function documents(): Promise<SftDocument[]> {
  if (run.sft?.stream === undefined) return (await sftDocuments(run, built)).docs;
  if (!built.conversation) throw new Error('sft.stream needs task retail-synth');
  const spec = parseRetailStream(run.sft.stream);
  const held = heldOutWorldSeeds([run.taskOptions.dataDir, run.taskOptions.valDir]);
  const seqLen = Number((run.sft.config as { seqLen?: number } | undefined)?.seqLen ?? 6144);
  return streamEvalDocuments({ ...spec, excludeWorldSeeds: [...spec.excludeWorldSeeds, ...held] },
    { format: built.deps.format, tokenizer: built.tokenizer, conversation: built.conversation, seqLen, rowsPerStep: 3 }, Math.ceil(n / 6) + 1);
}
const docs = await documents();
const digit = new Map<number, boolean>();
const isDigit = (id: number) => {
  let v = digit.get(id);
  if (v === undefined) digit.set(id, (v = /^\s?\d+$/.test(built.tokenizer.decode([id]))));
  return v;
};
/** Character spans of the name parts of tool-call arguments (first/last names, the letters of emails and user ids), with their argument. */
function nameSpans(text: string): { start: number; end: number; field: string }[] {
  const spans: { start: number; end: number; field: string }[] = [];
  const re = /"(first_name|last_name|email|user_id)"\s*:\s*"([a-zA-Z]+)(?:[._]([a-zA-Z]+))?/g;
  for (let m; (m = re.exec(text));) spans.push({ start: m.index + m[0].length - m[2].length - (m[3] ? m[3].length + 1 : 0), end: m.index + m[0].length, field: m[1] });
  return spans;
}
/** Character spans of the address fields in the arguments of address writes. */
function addressSpans(text: string): { start: number; end: number; field: string }[] {
  const spans: { start: number; end: number; field: string }[] = [];
  const re = /"(address1|address2|city|state|zip)"\s*:\s*"([^"]+)"/g;
  for (let m; (m = re.exec(text));) spans.push({ start: m.index + m[0].length - 1 - m[2].length, end: m.index + m[0].length - 1, field: m[1] });
  return spans;
}
/** Character spans of tool calls: from the function name after `to=functions.` to the end of the JSON arguments. */
function callSpans(text: string): { start: number; end: number; tool: string }[] {
  const spans: { start: number; end: number; tool: string }[] = [];
  const re = /to=functions\.([a-z_]+)[^]*?<\|message\|>([^]*?)<\|call\|>/g;
  for (let m; (m = re.exec(text));) spans.push({ start: m.index + 'to=functions.'.length, end: m.index + m[0].length - '<|call|>'.length, tool: m[1] });
  return spans;
}
const writesAddress = (text: string) => /to=functions\.(modify_pending_order_address|modify_user_address)/.test(text);
/** Name- and address-token NLL by argument and by place: the first token of the value (found by meaning) or a later one. */
const byPlace = new Map<string, { nll: number; tokens: number }>();
/** NLL of the digits of the order ids the agent writes (`#W` and seven digits), by place in the id. */
const orderIdDigits = Array.from({ length: 7 }, () => ({ nll: 0, tokens: 0 }));
/** NLL of the digits the agent writes by place in their number (1st … 11th, then 12th and later). */
const digitRun = Array.from({ length: 12 }, () => ({ nll: 0, tokens: 0 }));
/**
 * Every number the agent writes, whole: its summed NLL and whether each of its tokens got p > 0.5. Per number rather
 * than per token, so that tokenizers with one digit per token and with digit groups compare.
 */
const numbers: { nll: number; sure: boolean; orderId: boolean; note: '' | NonNullable<ReturnType<typeof noteIdKind>>; firstP: number }[] = [];
let digitNll = 0, digits = 0, confident = 0, otherNll = 0, others = 0, nameNll = 0, names = 0, nameConfident = 0;
const byTool = new Map<string, { ok: number; calls: number }>();
/** The action word of each proposal ("Here is the change: pay …", "Here are the details: return …"): the decision. */
const decisions: number[] = [];
let addressNll = 0, addressTokens = 0, addressConfident = 0;
/** The notes before product lookups (`lookupNotes`): how many, how many with every token sure, and the probability after each entry. */
let lookupNotes = 0, lookupNotesSure = 0;
const entryEndPs: number[] = [];
/** Character spans of the notes right before a `get_product_details` call: from the note's text to its `<|end|>` (inclusive). */
function lookupNoteSpans(text: string): { start: number; end: number }[] {
  const spans: { start: number; end: number }[] = [];
  const open = '<|channel|>analysis<|message|>';
  const re = /<\|channel\|>analysis<\|message\|>([^]*?)<\|end\|>/g;
  for (let m; (m = re.exec(text));) {
    const after = text.slice(m.index + m[0].length, m.index + m[0].length + 120);
    if (/^<\|start\|>assistant[^<]*<\|channel\|>commentary to=functions\.get_product_details|^<\|start\|>assistant to=functions\.get_product_details/.test(after)) {
      spans.push({ start: m.index + open.length, end: m.index + m[0].length });
    }
  }
  return spans;
}
const scored = a.address ? docs.filter((d) => writesAddress(built.tokenizer.decode([...d.tokens]))).slice(-n) : docs.slice(-n);
if (scored.length === 0) throw new Error('copy-nll: no document to score');
for (const d of scored) {
  const x = microBatchInput([d], [{ docs: [0], length: d.tokens.length }], { rows: [0], seqLen: d.tokens.length });
  const r = built.model.logprobs(x, a.show ? { fullLogprobs: true } : {});
  const full = r.fullLogprobs?.toArray();
  r.fullLogprobs?.dispose();
  // Character offset of every target token in the decoded document, to find the name spans.
  const starts: number[] = [];
  let text = built.tokenizer.decode([d.tokens[0]]);
  for (let i = 1; i < d.tokens.length; i++) {
    starts.push(text.length); // target i - 1 is token i
    text += built.tokenizer.decode([d.tokens[i]]);
  }
  if (text !== built.tokenizer.decode([...d.tokens])) throw new Error('copy-nll: token offsets do not reproduce the document text');
  /** Prints target `i`: its probability, the three likeliest tokens, and the text before it. */
  const show = (key: string, i: number) => {
    if (!full) return;
    const V = full.length / x.targets.length;
    const row = Array.from(full.subarray(i * V, (i + 1) * V), (lp, id) => ({ lp, id })).sort((p, q) => q.lp - p.lp).slice(0, 3);
    const tok = (id: number) => JSON.stringify(built.tokenizer.decode([id]));
    console.log(`${key} ${tok(x.targets[i])} p=${Math.exp(r.logprobs[i]).toFixed(3)} top: ${row.map((t) => `${tok(t.id)} ${Math.exp(t.lp).toFixed(2)}`).join(', ')} | ...${JSON.stringify(text.slice(Math.max(0, starts[i] - showChars), starts[i]))}`);
  };
  const spans = nameSpans(text), addrSpans = a.address ? addressSpans(text) : [];
  const calls = callSpans(text).map((c) => ({ ...c, ok: true, scored: 0 }));
  for (const note of lookupNoteSpans(text)) {
    // targets whose text starts inside the note (its `<|end|>` included); an entry ends where a top-level JSON object
    // closes: the next character (a newline or the `,` of `, `: the walk goes on; `<|end|>`: it stops) is the decision
    const inNote = [...starts.keys()].filter((i) => starts[i] >= note.start && starts[i] < note.end && x.assistantMask[i]);
    if (inNote.length === 0) continue; // outside the loss mask
    lookupNotes++;
    if (inNote.every((i) => r.logprobs[i] > Math.log(0.5))) lookupNotesSure++;
    const body = text.slice(note.start, note.end - '<|end|>'.length);
    const ends = entryEnds(body).map((e) => note.start + e);
    for (const e of ends) {
      const i = inNote.find((k) => starts[k] <= e && (k + 1 >= starts.length || starts[k + 1] > e));
      if (i !== undefined) entryEndPs.push(Math.exp(r.logprobs[i]));
    }
  }
  for (let i = 0; i < x.targets.length; i++) {
    if (!x.assistantMask[i]) continue;
    if (/(Here is the change|Here are the details): $/.test(text.slice(Math.max(0, starts[i] - 24), starts[i]))) {
      decisions.push(-r.logprobs[i]);
      if (a.show === 'decisions') show('decision', i);
    }
    const call = calls.find((c) => starts[i] >= c.start && starts[i] < c.end);
    if (call) {
      call.scored++;
      if (!(r.logprobs[i] > Math.log(0.5))) call.ok = false;
    }
    const span = spans.find((sp) => starts[i] >= sp.start && starts[i] < sp.end);
    const addr = addrSpans.find((sp) => starts[i] >= sp.start && starts[i] < sp.end);
    const place = addr ?? span;
    if (place) {
      const key = `${place.field}:${starts[i] === place.start ? 'first' : 'rest'}`;
      if (key === a.show) show(key, i);
      const b = byPlace.get(key) ?? { nll: 0, tokens: 0 };
      b.nll -= r.logprobs[i];
      b.tokens++;
      byPlace.set(key, b);
    }
    if (addr) {
      addressNll -= r.logprobs[i];
      addressTokens++;
      if (r.logprobs[i] > Math.log(0.5)) addressConfident++;
    } else if (span) {
      nameNll -= r.logprobs[i];
      names++;
      if (r.logprobs[i] > Math.log(0.5)) nameConfident++;
    } else if (isDigit(x.targets[i])) {
      if (a.show === 'digits' && full && r.logprobs[i] < Math.log(0.5)) show('digit', i);
      digitNll -= r.logprobs[i];
      digits++;
      // Its place in its number: a digit after a digit continues a number, a copy once the first digits are written.
      const run = Math.min(/(\d*)$/.exec(text.slice(Math.max(0, starts[i] - 12), starts[i]))![1].length, digitRun.length - 1);
      digitRun[run].nll -= r.logprobs[i];
      digitRun[run].tokens++;
      if (run === 0 || numbers.length === 0) {
        numbers.push({ nll: 0, sure: true, orderId: /#W$/.test(text.slice(Math.max(0, starts[i] - 2), starts[i])), note: noteIdKind(text, starts[i]) ?? '', firstP: Math.exp(r.logprobs[i]) });
      }
      numbers[numbers.length - 1].nll -= r.logprobs[i];
      if (!(r.logprobs[i] > Math.log(0.5))) numbers[numbers.length - 1].sure = false;
      const inOrderId = /#W(\d{0,6})$/.exec(text.slice(Math.max(0, starts[i] - 8), starts[i]));
      if (inOrderId) {
        const k = inOrderId[1].length;
        orderIdDigits[k].nll -= r.logprobs[i];
        orderIdDigits[k].tokens++;
      }
      if (r.logprobs[i] > Math.log(0.5)) confident++;
    } else {
      otherNll -= r.logprobs[i];
      others++;
    }
  }
  for (const c of calls) {
    if (c.scored === 0) continue; // a call outside the loss mask (not the assistant's)
    const b = byTool.get(c.tool) ?? { ok: 0, calls: 0 };
    b.calls++;
    if (c.ok) b.ok++;
    byTool.set(c.tool, b);
  }
}
const lookupSummary = {
  notes: lookupNotes,
  sure: lookupNotes === 0 ? null : Number((lookupNotesSure / lookupNotes).toFixed(3)),
  stopP: entryEndPs.length === 0 ? null : Number([...entryEndPs].sort((u, v) => u - v)[Math.floor(entryEndPs.length / 2)].toFixed(3)),
  stopSure: entryEndPs.length === 0 ? null : Number((entryEndPs.filter((p) => p > 0.5).length / entryEndPs.length).toFixed(3)),
};
const callTotals = [...byTool.values()].reduce((t, b) => ({ ok: t.ok + b.ok, calls: t.calls + b.calls }), { ok: 0, calls: 0 });
console.log(JSON.stringify({ checkpoint: a.checkpoint, documents: scored.length, calls: callTotals.calls, callP50: callTotals.ok / callTotals.calls,
  callP50ByTool: Object.fromEntries([...byTool].sort().map(([k, b]) => [k, `${b.ok}/${b.calls}`])), ...(a.address ? { addressNll: addressNll / addressTokens, addressTokens, addressP50: addressConfident / addressTokens } : {}), digitNll: digitNll / digits, digitTokens: digits, digitNllFirst: digitRun[0].nll / digitRun[0].tokens, digitNllRest: digitRun.slice(1).reduce((t, b) => t + b.nll, 0) / digitRun.slice(1).reduce((t, b) => t + b.tokens, 0),
  digitNllByPlace: digitRun.map((b) => (b.tokens === 0 ? null : Number((b.nll / b.tokens).toFixed(3)))), digitTokensByPlace: digitRun.map((b) => b.tokens),
  ...numberSummary(), orderIdDigitNll: orderIdDigits.map((b) => (b.tokens === 0 ? null : Number((b.nll / b.tokens).toFixed(3)))), digitP50: confident / digits, nameNll: nameNll / names, nameTokens: names, nameP50: nameConfident / names,
  nameNllByPlace: Object.fromEntries([...byPlace].sort().map(([k, b]) => [k, { nll: Number((b.nll / b.tokens).toFixed(3)), tokens: b.tokens }])), otherNll: otherNll / others, otherTokens: others,
  decisions: decisions.length, decisionNll: decisions.length === 0 ? null : Number((decisions.reduce((t, d) => t + d, 0) / decisions.length).toFixed(3)),
  decisionSure: decisions.length === 0 ? null : Number((decisions.filter((d) => d < Math.log(2)).length / decisions.length).toFixed(3)), lookupNotes: lookupSummary }));

/** `numberNll`, `orderIdNll`: mean summed NLL per number and per order id; `numberSure`, `orderIdSure`: the share with every token at p > 0.5. */
function numberSummary() {
  const orders = numbers.filter((n) => n.orderId);
  const median = (xs: typeof numbers) => {
    const p = xs.map((n) => n.firstP).sort((u, v) => u - v);
    return p.length === 0 ? null : Number(p[Math.floor(p.length / 2)].toFixed(3));
  };
  const notes = (kind: NonNullable<ReturnType<typeof noteIdKind>>) => numbers.filter((n) => n.note === kind);
  const mean = (xs: typeof numbers, f: (n: (typeof numbers)[number]) => number) => (xs.length === 0 ? null : Number((xs.reduce((t, n) => t + f(n), 0) / xs.length).toFixed(3)));
  return {
    numbers: numbers.length, numberNll: mean(numbers, (n) => n.nll), numberSure: mean(numbers, (n) => Number(n.sure)),
    orderIds: orders.length, orderIdNll: mean(orders, (n) => n.nll), orderIdSure: mean(orders, (n) => Number(n.sure)),
    noteIds: { product: notes('product').length, item: notes('item').length, variant: notes('variant').length, walk: notes('walk').length },
    noteIdSure: { product: mean(notes('product'), (n) => Number(n.sure)), item: mean(notes('item'), (n) => Number(n.sure)), variant: mean(notes('variant'), (n) => Number(n.sure)), walk: mean(notes('walk'), (n) => Number(n.sure)) },
    noteIdFirstP: { product: median(notes('product')), item: median(notes('item')), variant: median(notes('variant')), walk: median(notes('walk')) },
  };
}

/** Offsets just past each JSON object of a note (its entries; braces inside strings skipped): where its walk stops or goes on. */
function entryEnds(body: string): number[] {
  const ends: number[] = [];
  for (let at = body.indexOf('{'); at >= 0; at = body.indexOf('{', ends[ends.length - 1])) {
    const close = closingBrace(body, at);
    if (close < 0) break;
    ends.push(close + 1);
  }
  return ends;
}
