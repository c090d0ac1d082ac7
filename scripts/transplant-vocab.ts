/**
 * Moves a trained checkpoint onto another BPE tokenizer (src/model/checkpoint/retokenize.ts), so a model need not be
 * pretrained again when only its vocabulary changes (here: one token per digit → digits in groups of three).
 *
 *   node --import tsx scripts/transplant-vocab.ts --checkpoint DIR --from OLD_TOKENIZER.json --to NEW_TOKENIZER.json --out DIR [--noise 0.3 --seed 0]
 *
 * Writes model.safetensors and config.json (vocab_size the new tokenizer's) to --out, with the new tokenizer beside
 * them, and prints how many tokens kept an old token's rows and how many were averaged from old pieces.
 */
import { copyFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadBpeModel } from '../src/llm/bpe-model.ts';
import { loadCheckpoint, saveCheckpoint } from '../src/model/checkpoint/hf.ts';
import { retokenizeCheckpoint } from '../src/model/checkpoint/retokenize.ts';

const { values: a } = parseArgs({ options: { checkpoint: { type: 'string' }, from: { type: 'string' }, to: { type: 'string' }, out: { type: 'string' }, noise: { type: 'string', default: '0' }, seed: { type: 'string', default: '0' } } });
if (!a.checkpoint || !a.from || !a.to || !a.out) throw new Error('usage: --checkpoint DIR --from OLD_TOKENIZER.json --to NEW_TOKENIZER.json --out DIR');
const r = retokenizeCheckpoint(loadCheckpoint(a.checkpoint), loadBpeModel(a.from), loadBpeModel(a.to), { noise: Number(a.noise), seed: Number(a.seed) });
mkdirSync(a.out, { recursive: true });
saveCheckpoint(a.out, r.config, r.params);
copyFileSync(a.to, join(a.out, 'tokenizer.json'));
console.log(JSON.stringify({ from: a.checkpoint, out: a.out, vocabTo: r.config.vocab_size, copied: r.copied, averaged: r.averaged, noise: Number(a.noise), seed: Number(a.seed) }));
