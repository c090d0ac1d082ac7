/** Picks a tokenizer by config value: `o200k_harmony` for real gpt-oss, otherwise a path to a BPE JSON file. */
import { BpeTokenizer } from './bpe.ts';
import { o200kHarmony } from './o200k.ts';
import type { Tokenizer } from './tokenizer.ts';

export function loadTokenizer(nameOrPath: string): Tokenizer {
  if (nameOrPath === 'o200k_harmony') return o200kHarmony();
  return BpeTokenizer.load(nameOrPath);
}
