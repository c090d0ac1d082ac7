/**
 * Test helper for clients/python: trains a small byte-level BPE tokenizer (longrun's own trainer) on a text file and
 * saves it, so the Python tests can serve a tiny checkpoint with `longrun serve model`. longrun's CLI has no
 * tokenizer command of its own (`longrun sft` trains one as part of SFT).
 *
 *   node --import tsx clients/python/tests/support/make_tokenizer.ts CORPUS.txt VOCAB_SIZE OUT.json
 */
import { readFileSync } from 'node:fs';
import { BpeTokenizer } from '../../../../src/llm/bpe.ts';

const [corpus, vocab, out] = process.argv.slice(2);
if (!corpus || !vocab || !out) {
  console.error('usage: make_tokenizer.ts CORPUS.txt VOCAB_SIZE OUT.json');
  process.exit(2);
}
const vocabSize = Number(vocab);
if (!Number.isInteger(vocabSize) || vocabSize < 300) {
  console.error(`VOCAB_SIZE must be an integer >= 300, got ${vocab}`);
  process.exit(2);
}
const tokenizer = BpeTokenizer.train(readFileSync(corpus, 'utf8'), { vocabSize });
tokenizer.save(out);
console.log(`wrote ${out} (${tokenizer.vocabSize} ids)`);
