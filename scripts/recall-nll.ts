/**
 * How well a checkpoint writes the ids of the lookup drills' recall notes (src/recipes/retail/lookup-drill.ts,
 * `recall` and `variants`), teacher-forced, on drills the run never trained on: the long lookup drills of world 0 of
 * stream steps 100000–100002 of a run file whose `sft.stream.lookupDrill` has `recall` (the first `--drills` of each).
 * For every id that starts in a note, the probability of its first digit group:
 *   product   after `{"name": N, "product_id": "`  found by the item's name, in order details read earlier;
 *   item      after `…, "item_id": "`             follows the product id as in the order details;
 *   variant   after ` -> {"options": {…}, "item_id": "`  found by its options in product details read earlier.
 * Prints, for each, how many, the median probability and the share above 0.5; `--show N` also prints the first N ids
 * scored, each with its probability, the model's likeliest token there, and the 90 characters before it.
 *
 *   node --import tsx scripts/recall-nll.ts --config RUN.yaml --checkpoint DIR [--drills 4] [--show N]
 */
import { parseArgs } from 'node:util';
import { loadRun } from '../src/recipes/load-run.ts';
import { parseRetailStream, RetailStream } from '../src/recipes/retail/stream.ts';
import { buildSftDocuments } from '../src/rl/sft-data.ts';
import { microBatchInput } from '../src/rl/packing.ts';
import { noteIdKind } from '../src/domains/retail/synth/expert.ts';

const { values: a } = parseArgs({ options: { config: { type: 'string' }, checkpoint: { type: 'string' }, drills: { type: 'string', default: '4' }, show: { type: 'string', default: '0' } } });
if (!a.config || !a.checkpoint) throw new Error('usage: --config RUN.yaml --checkpoint DIR [--drills 4] [--show N]');
const perStep = Number(a.drills), show = Number(a.show);
if (!(Number.isInteger(perStep) && perStep > 0)) throw new Error(`--drills must be a positive integer, got ${a.drills}`);
if (!(Number.isInteger(show) && show >= 0)) throw new Error(`--show must be a non-negative integer, got ${a.show}`);
let shown = 0;
const { run, built } = await loadRun(a.config, { checkpoint: a.checkpoint, keepSft: true });
if (!built.model || !built.conversation) throw new Error('the config needs a gpt-oss policy on task retail-synth');
const spec = parseRetailStream(run.sft?.stream);
if (!spec.lookupDrill?.recall) throw new Error(`${a.config}: sft.stream.lookupDrill.recall is not set (no recall notes to score)`);
const stream = new RetailStream(spec, { format: built.deps.format, tokenizer: built.tokenizer, conversation: built.conversation, seqLen: 6144, rowsPerStep: 3 });
const probs: Record<NonNullable<ReturnType<typeof noteIdKind>>, number[]> = { product: [], item: [], variant: [], walk: [] };
for (const step of [100000, 100001, 100002]) {
  const w = await stream.worldRecords(step, 0);
  if (!w) continue;
  for (const d of buildSftDocuments(w.lookups.slice(0, perStep), built.deps.format, { maxSeqLen: 6144, overflow: 'drop' }).docs) {
    const x = microBatchInput([d], [{ docs: [0], length: d.tokens.length }], { rows: [0], seqLen: d.tokens.length });
    const r = built.model.logprobs(x, show > shown ? { fullLogprobs: true } : {});
    const full = r.fullLogprobs?.toArray();
    r.fullLogprobs?.dispose();
    // character offset of each target token (target i is token i + 1)
    const starts: number[] = [];
    let text = built.tokenizer.decode([d.tokens[0]]);
    for (let i = 1; i < d.tokens.length; i++) {
      starts.push(text.length);
      text += built.tokenizer.decode([d.tokens[i]]);
    }
    for (let i = 0; i < starts.length; i++) {
      if (!x.assistantMask[i]) continue;
      const kind = noteIdKind(text, starts[i]);
      if (!kind) continue;
      const p = Math.exp(r.logprobs[i]);
      probs[kind].push(p);
      if (full && shown < show) {
        shown++;
        const V = full.length / x.targets.length;
        let best = 0;
        for (let v = 1; v < V; v++) if (full[i * V + v] > full[i * V + best]) best = v;
        const tok = (id: number) => JSON.stringify(built.tokenizer.decode([id]));
        console.log(`${kind} ${tok(x.targets[i])} p=${p.toFixed(3)} likeliest ${tok(best)} ${Math.exp(full[i * V + best]).toFixed(2)} | ...${JSON.stringify(text.slice(Math.max(0, starts[i] - 90), starts[i]))}`);
      }
    }
  }
}
for (const [kind, ps] of Object.entries(probs)) {
  const sorted = [...ps].sort((u, v) => u - v);
  const median = sorted.length ? sorted[Math.floor(sorted.length / 2)].toFixed(3) : '-';
  const sure = sorted.length ? (sorted.filter((p) => p > 0.5).length / sorted.length).toFixed(2) : '-';
  console.log(`${kind.padEnd(8)} ids ${String(ps.length).padStart(4)}  median p of the first digit group ${median}  share > 0.5 ${sure}`);
}
