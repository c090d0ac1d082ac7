/**
 * GGUF tokenizer metadata for our byte-level BPE (`src/llm` BpeModel), in llama.cpp's "gpt2" BPE convention: token
 * strings and merges are written with GPT-2's byte→unicode mapping (printable Latin-1 bytes stand for themselves,
 * the other 68 bytes map to U+0100…U+0143), merges as "left right" in priority order, special tokens verbatim
 * with token type CONTROL.
 */
import type { BpeModel } from '../../llm/bpeModel.ts';
import { CheckpointError } from './errors.ts';
import type { GgufValue } from './gguf.ts';

export const TOKEN_TYPE = { NORMAL: 1, UNKNOWN: 2, CONTROL: 3, USER_DEFINED: 4, UNUSED: 5, BYTE: 6 } as const;

/** GPT-2's reversible byte → printable character table. */
export function byteToUnicode(): string[] {
  const printable = (b: number): boolean => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
  const table: string[] = [];
  let next = 0;
  for (let b = 0; b < 256; b++) table.push(String.fromCodePoint(printable(b) ? b : 256 + next++));
  return table;
}

export interface GgufTokenizerOptions {
  /** llama.cpp pre-tokenizer name; ours is GPT-2-like (digits grouped by three), so 'gpt2' is the nearest. */
  pre?: string;
  padToken?: string;
}

/** Metadata keys `tokenizer.ggml.*` for a BPE model whose vocabulary has `vocabSize` entries (must match the model). */
export function bpeTokenizerMetadata(model: BpeModel, vocabSize: number, options: GgufTokenizerOptions = {}): Map<string, GgufValue> {
  const map = byteToUnicode();
  const pieces: string[] = map.slice();
  for (const [a, b] of model.merges) pieces.push(pieces[a] + pieces[b]);
  const types: number[] = pieces.map(() => TOKEN_TYPE.NORMAL);
  for (const special of model.specialTokens) { pieces.push(special); types.push(TOKEN_TYPE.CONTROL); }
  if (pieces.length !== vocabSize) {
    throw new CheckpointError('BAD_ARGUMENT', `tokenizer has ${pieces.length} tokens but the model's vocab_size is ${vocabSize}; they must match for GGUF export`);
  }
  const merges = model.merges.map(([a, b]) => `${pieces[a]} ${pieces[b]}`);
  const out = new Map<string, GgufValue>([
    ['tokenizer.ggml.model', { type: 'string', value: 'gpt2' }],
    ['tokenizer.ggml.pre', { type: 'string', value: options.pre ?? 'gpt2' }],
    ['tokenizer.ggml.tokens', { type: 'array', itemType: 'string', values: pieces }],
    ['tokenizer.ggml.token_type', { type: 'array', itemType: 'i32', values: types }],
    ['tokenizer.ggml.merges', { type: 'array', itemType: 'string', values: merges }],
  ]);
  const idOf = (name: string): number => 256 + model.merges.length + model.specialTokens.indexOf(name);
  if (model.eosTokens.length) out.set('tokenizer.ggml.eos_token_id', { type: 'u32', value: idOf(model.eosTokens[0]) });
  if (options.padToken !== undefined) {
    if (!model.specialTokens.includes(options.padToken)) throw new CheckpointError('BAD_ARGUMENT', `pad token ${options.padToken} is not a special token of this tokenizer`);
    out.set('tokenizer.ggml.padding_token_id', { type: 'u32', value: idOf(options.padToken) });
  }
  return out;
}
