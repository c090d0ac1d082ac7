/**
 * Copy diagnostic for an SFT checkpoint: the mean NLL of the assistant's digit tokens (the ids it copies from its
 * context) next to the mean NLL of its other tokens, on the last N expert documents of a run config.
 * An agent that does not copy sits near ln(10) = 2.30 nats per digit with single-digit tokens (more with digit
 * groups); one that copies goes towards 0. `p>0.5` is the share of digit tokens the model gives more than half its
 * probability.
 *
 *   node --import tsx scripts/copy-nll.ts --config RUN.yaml --checkpoint SFT_CHECKPOINT [--docs 8]
 */
import { readFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import { parse } from 'yaml';
import { sftDocuments } from '../src/cli/train.ts';
import { microBatchInput } from '../src/rl/packing.ts';
import { buildRun, parseRunFile, runFileFromCheckpoint } from '../src/rl/trainSetup.ts';

const { values: a } = parseArgs({ options: { config: { type: 'string' }, checkpoint: { type: 'string' }, docs: { type: 'string', default: '8' } } });
if (!a.config || !a.checkpoint) throw new Error('usage: --config RUN.yaml --checkpoint DIR [--docs N]');
const n = Number(a.docs);
if (!(Number.isInteger(n) && n > 0)) throw new Error(`--docs must be a positive integer, got ${a.docs}`);
const raw = runFileFromCheckpoint(parse(readFileSync(a.config, 'utf8')), a.checkpoint, { keepSft: true }) as Record<string, unknown>;
if (!raw.sft) throw new Error(`${a.config} has no sft section (copy-nll scores its expert documents)`);
delete (raw.sft as Record<string, unknown>).copyDrill; // expert documents only
const { run } = parseRunFile(raw);
const built = await buildRun(run);
if (!built.model) throw new Error('the config has no gpt-oss policy');
const { docs } = await sftDocuments(run, built);
const digit = new Map<number, boolean>();
const isDigit = (id: number) => {
  let v = digit.get(id);
  if (v === undefined) digit.set(id, (v = /^\s?\d+$/.test(built.tokenizer.decode([id]))));
  return v;
};
let digitNll = 0, digits = 0, confident = 0, otherNll = 0, others = 0;
for (const d of docs.slice(-n)) {
  const x = microBatchInput([d], [{ docs: [0], length: d.tokens.length }], { rows: [0], seqLen: d.tokens.length });
  const r = built.model.logprobs(x);
  for (let i = 0; i < x.targets.length; i++) {
    if (!x.assistantMask[i]) continue;
    if (isDigit(x.targets[i])) {
      digitNll -= r.logprobs[i];
      digits++;
      if (r.logprobs[i] > Math.log(0.5)) confident++;
    } else {
      otherNll -= r.logprobs[i];
      others++;
    }
  }
}
console.log(JSON.stringify({ checkpoint: a.checkpoint, digitNll: digitNll / digits, digitTokens: digits, digitP50: confident / digits, otherNll: otherNll / others, otherTokens: others }));
