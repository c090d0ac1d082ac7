/**
 * Held-out copy-drill NLL of a checkpoint: the loss of a run config's model on 40 copy-drill documents
 * (src/recipes/retail/copy-drill.ts) drawn under a seed no training run uses, with the NLL of the first digit of each
 * repeated id (which id comes next: a guess among those not yet repeated) apart from the digits after it (a copy
 * once the id is chosen), and by place in the number. A model that does not copy sits near ln 10 = 2.30 nats on the later digits; the copy
 * curriculum of docs/results/retail-tiny (attempt 4) brought the 4–12-id drill to 0.31 nats per trained token.
 *
 *   node --import tsx scripts/drill-nll.ts --config RUN.yaml --checkpoint DIR [--ids 4,12] [--documents 40]
 */
import { parseArgs } from 'node:util';
import { copyDrillDocuments } from '../src/recipes/retail/copy-drill.ts';
import { loadRun } from '../src/recipes/load-run.ts';
import { microBatchInput } from '../src/rl/packing.ts';

const { values: a } = parseArgs({ options: { config: { type: 'string' }, checkpoint: { type: 'string' }, ids: { type: 'string', default: '4,12' }, documents: { type: 'string', default: '40' } } });
if (!a.config || !a.checkpoint) throw new Error('usage: --config RUN.yaml --checkpoint DIR [--ids 4,12] [--documents 40]');
const ids = a.ids!.split(',').map(Number) as [number, number];
if (!(ids.length === 2 && ids.every((n) => Number.isInteger(n) && n >= 1) && ids[0] <= ids[1])) throw new Error(`--ids must be MIN,MAX with 1 ≤ MIN ≤ MAX, got ${a.ids}`);
const count = Number(a.documents);
if (!(Number.isInteger(count) && count > 0)) throw new Error(`--documents must be a positive integer, got ${a.documents}`);
const { built } = await loadRun(a.config, { checkpoint: a.checkpoint, keepSft: true });
if (!built.model) throw new Error('the config has no gpt-oss policy');
/** Seed of the held-out drill documents (the training corpus uses DRILL_CORPUS.seed, the stream its own seeds). */
const HELD_OUT_SEED = 777;
const docs = copyDrillDocuments(built.tokenizer, { documents: count, seed: HELD_OUT_SEED, ids, people: 0 });
const isDigit = (id: number) => /^\d$/.test(built.tokenizer.decode([id]));
const sums = { all: [0, 0], first: [0, 0], rest: [0, 0] };
const add = (k: keyof typeof sums, nll: number) => { sums[k][0] += nll; sums[k][1]++; };
/** Digit NLL by place in its number (1st … 12th). */
const byPlace = Array.from({ length: 12 }, () => [0, 0]);
for (const d of docs) {
  const x = microBatchInput([d], [{ docs: [0], length: d.tokens.length }], { rows: [0], seqLen: d.tokens.length });
  const r = built.model.logprobs(x);
  for (let i = 0; i < x.targets.length; i++) {
    if (!x.assistantMask[i]) continue;
    add('all', -r.logprobs[i]);
    if (!isDigit(x.targets[i])) continue;
    add(i > 0 && isDigit(x.targets[i - 1]) ? 'rest' : 'first', -r.logprobs[i]);
    let place = 0;
    while (i - place - 1 >= 0 && isDigit(x.targets[i - place - 1])) place++;
    if (place < byPlace.length) { byPlace[place][0] -= r.logprobs[i]; byPlace[place][1]++; }
  }
}
const mean = (k: keyof typeof sums) => Number((sums[k][0] / sums[k][1]).toFixed(3));
console.log(JSON.stringify({ checkpoint: a.checkpoint, ids, documents: count, drillNll: mean('all'), trainedTokens: sums.all[1], firstDigitNll: mean('first'), laterDigitNll: mean('rest'), laterDigits: sums.rest[1], digitNllByPlace: byPlace.map(([s, n]) => (n === 0 ? null : Number((s / n).toFixed(3)))) }));
