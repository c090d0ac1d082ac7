/**
 * Picks a tokenizer by config value: `o200k_harmony` for real gpt-oss, `qwen3` for Qwen3 (the npm-packaged
 * tokenizer.json), otherwise a path to a BPE JSON file.
 */
import { BpeTokenizer } from './bpe.ts';
import { o200kHarmony } from './o200k.ts';
import { QWEN3_TOKENIZER_NAME, qwen3Tokenizer } from './qwen3-tokenizer.ts';
import type { Tokenizer } from './tokenizer.ts';

export function loadTokenizer(nameOrPath: string): Tokenizer {
  if (nameOrPath === 'o200k_harmony') return o200kHarmony();
  if (nameOrPath === QWEN3_TOKENIZER_NAME) return qwen3Tokenizer();
  return BpeTokenizer.load(nameOrPath);
}
