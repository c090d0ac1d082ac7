/**
 * How well a checkpoint writes the ids of the lookup drills' recall notes (src/recipes/retail/lookup-drill.ts,
 * `recall` and `variants`), teacher-forced, on drills the run never trained on: the long lookup drills of world 0 of
 * stream steps 100000–100002 of a run file whose `sft.stream.lookupDrill` has `recall` (the first `--drills` of each).
 * For every id that starts in a note, the probability of its first digit group:
 *   product   after `{"name": N, "product_id": "`  found by the item's name, in order details read earlier;
 *   item      after `…, "item_id": "`             follows the product id as in the order details;
 *   variant   after ` -> {"options": {…}, "item_id": "`  found by its options in product details read earlier.
 * Prints, for each, how many, the median probability and the share above 0.5.
 *
 *   node --import tsx scripts/recall-nll.ts --config RUN.yaml --checkpoint DIR [--drills 4]
 */
import { parseArgs } from 'node:util';
import { loadRun } from '../src/recipes/load-run.ts';
import { parseRetailStream, RetailStream } from '../src/recipes/retail/stream.ts';
import { buildSftDocuments } from '../src/rl/sft-data.ts';
import { microBatchInput } from '../src/rl/packing.ts';

const { values: a } = parseArgs({ options: { config: { type: 'string' }, checkpoint: { type: 'string' }, drills: { type: 'string', default: '4' } } });
if (!a.config || !a.checkpoint) throw new Error('usage: --config RUN.yaml --checkpoint DIR [--drills 4]');
const perStep = Number(a.drills);
if (!(Number.isInteger(perStep) && perStep > 0)) throw new Error(`--drills must be a positive integer, got ${a.drills}`);
const { run, built } = await loadRun(a.config, { checkpoint: a.checkpoint, keepSft: true });
if (!built.model || !built.conversation) throw new Error('the config needs a gpt-oss policy on task retail-synth');
const spec = parseRetailStream(run.sft?.stream);
if (!spec.lookupDrill?.recall) throw new Error(`${a.config}: sft.stream.lookupDrill.recall is not set (no recall notes to score)`);
const stream = new RetailStream(spec, { format: built.deps.format, tokenizer: built.tokenizer, conversation: built.conversation, seqLen: 6144, rowsPerStep: 3 });
const probs: Record<'product' | 'item' | 'variant', number[]> = { product: [], item: [], variant: [] };
for (const step of [100000, 100001, 100002]) {
  const w = await stream.worldRecords(step, 0);
  if (!w) continue;
  for (const d of buildSftDocuments(w.lookups.slice(0, perStep), built.deps.format, { maxSeqLen: 6144, overflow: 'drop' }).docs) {
    const x = microBatchInput([d], [{ docs: [0], length: d.tokens.length }], { rows: [0], seqLen: d.tokens.length });
    const r = built.model.logprobs(x, {});
    let text = built.tokenizer.decode([d.tokens[0]]);
    for (let i = 0; i < d.tokens.length - 1; i++) {
      const before = text;
      text += built.tokenizer.decode([d.tokens[i + 1]]);
      if (!x.assistantMask[i]) continue;
      const start = before.lastIndexOf('<|channel|>analysis<|message|>');
      if (start < 0 || start < before.lastIndexOf('<|end|>')) continue; // not in a note
      const line = before.slice(Math.max(start, before.lastIndexOf('\n')));
      const p = Math.exp(r.logprobs[i]);
      if (/ -> .*"item_id": "$/.test(line)) probs.variant.push(p);
      else if (/ -> /.test(line)) continue;
      else if (/"product_id": "$/.test(line)) probs.product.push(p);
      else if (/"item_id": "$/.test(line)) probs.item.push(p);
    }
  }
}
for (const [kind, ps] of Object.entries(probs)) {
  const sorted = [...ps].sort((u, v) => u - v);
  const median = sorted.length ? sorted[Math.floor(sorted.length / 2)].toFixed(3) : '-';
  const sure = sorted.length ? (sorted.filter((p) => p > 0.5).length / sorted.length).toFixed(2) : '-';
  console.log(`${kind.padEnd(8)} ids ${String(ps.length).padStart(4)}  median p of the first digit group ${median}  share > 0.5 ${sure}`);
}
