/**
 * Copy drill on its own: trains a run config's model (fresh from its preset, or its `policy.checkpoint`) on
 * copy-drill documents only (src/recipes/retail/copy-drill.ts), 16 rows of 512 tokens per step, and prints the drill loss every
 * 10 steps. A model that does not copy sits near 1.8 nats per trained token with single-digit tokens (the digits of
 * each repeated id are then uniform); one that copies goes towards the cost of choosing which id comes next.
 * `--ordered` repeats the whole list in its order instead of a shuffled subset (copying by position, not by content).
 * `--people SHARE` makes that share of the listed ids people (emails, user ids, names).
 * `--control` replaces the repeated ids by as many fresh random ids: nothing to copy, so its loss is the no-copy
 * floor a drill run must get below to show copying.
 *
 *   node --import tsx scripts/copy-drill.ts --config RUN.yaml --out runs/drill-probe [--steps 150] [--lr 2e-3] [--ids 4,12] [--people 0.5] [--ordered | --control]
 */
import { parseArgs } from 'node:util';
import { Mulberry32Rng } from '../src/engine/random.ts';
import { copyDrillDocuments, copyDrillText, DRILL_CORPUS, DRILL_SFT_DEFAULTS, drillDocument } from '../src/recipes/retail/copy-drill.ts';
import type { SftDocument } from '../src/rl/packing.ts';
import { runSft } from '../src/rl/sft.ts';
import { loadRun } from '../src/recipes/load-run.ts';

const { values: a } = parseArgs({
  options: { config: { type: 'string' }, out: { type: 'string' }, steps: { type: 'string', default: '150' }, lr: { type: 'string', default: '2e-3' }, ordered: { type: 'boolean', default: false }, control: { type: 'boolean', default: false }, ids: { type: 'string', default: '4,12' }, people: { type: 'string', default: '0' } },
});
if (!a.config || !a.out) throw new Error('usage: --config RUN.yaml --out DIR [--steps N] [--lr LR] [--ids MIN,MAX] [--people SHARE] [--ordered | --control]');
if (a.ordered && a.control) throw new Error('--ordered and --control exclude each other');
const ids = a.ids!.split(',').map(Number) as [number, number];
if (!(ids.length === 2 && ids.every((n) => Number.isInteger(n) && n >= 1) && ids[0] <= ids[1])) throw new Error(`--ids must be MIN,MAX with 1 ≤ MIN ≤ MAX, got ${a.ids}`);
const steps = Number(a.steps), lr = Number(a.lr), people = Number(a.people);
if (!(people >= 0 && people <= 1)) throw new Error(`--people must be a share in [0, 1], got ${a.people}`);
if (!(Number.isInteger(steps) && steps > 0)) throw new Error(`--steps must be a positive integer, got ${a.steps}`);
if (!(lr > 0)) throw new Error(`--lr must be > 0, got ${a.lr}`);
const { built } = await loadRun(a.config);
if (!built.model) throw new Error('the config has no gpt-oss policy');
const { documents, seed } = DRILL_CORPUS;
let docs: SftDocument[];
if (!a.ordered && !a.control) docs = copyDrillDocuments(built.tokenizer, { documents, seed, ids, people });
else {
  const rng = new Mulberry32Rng(seed), fresh = new Mulberry32Rng(99);
  docs = Array.from({ length: documents }, () => {
    const [, listed, repeated] = /^ids: (.*)\nagain: (.*)\n$/.exec(copyDrillText(rng, ids, people).text)!;
    let again = listed;
    if (a.control) {
      const n = repeated.split(', ').length;
      again = /^ids: (.*)\n/.exec(copyDrillText(fresh, [n, n], people).text)![1];
    }
    return drillDocument(built.tokenizer, `ids: ${listed}\nagain:`, ` ${again}\n`);
  });
}
await runSft({ ...DRILL_SFT_DEFAULTS, steps, lr, padId: built.deps.padId }, {
  model: built.model, data: docs, outDir: a.out, resume: true, quiet: true,
  onStep: (m) => {
    if (m.step % 10 === 0) console.log(`step ${m.step} ${a.ordered ? 'ordered ' : a.control ? 'control ' : ''}drill loss ${m.loss.toFixed(3)} ${Math.round(m.tokensPerSec)} tok/s`);
  },
});
