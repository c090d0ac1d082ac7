/**
 * GGUF tokenizer metadata for our byte-level BPE (`src/llm` BpeModel), in llama.cpp's "gpt2" BPE convention: token
 * strings and merges are written with GPT-2's byte→unicode mapping (printable Latin-1 bytes stand for themselves,
 * the other 68 bytes map to U+0100…U+0143), merges as "left right" in priority order, special tokens verbatim
 * with token type CONTROL.
 *
 * llama.cpp does not read a pre-tokenizer regex from the file: `tokenizer.ggml.pre` names one of the splitters
 * compiled into it (src/llama-vocab.cpp, src/unicode.cpp in ggml-org/llama.cpp). A file tokenizes text like our
 * tokenizer only when that splitter cuts text exactly like the tokenizer's pattern, so the name is chosen from the
 * pattern, and a pattern no llama.cpp splitter reproduces is refused unless a name is forced.
 */
import type { BpeModel } from '../../llm/bpe-model.ts';
import { DEFAULT_PRETOKENIZE_PATTERN, SINGLE_DIGIT_PRETOKENIZE_PATTERN } from '../../llm/pretokenize.ts';
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


/** The characters llama.cpp treats as whitespace: JS `\s` without U+FEFF, plus U+0085 (NEL). */
const WS = String.raw`\t-\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000`;

/**
 * llama.cpp pre-tokenizer names and a pattern (JS regex source, flags `gu`) that splits every text exactly as that
 * splitter does (Unicode categories as far as Node's and llama.cpp's Unicode tables agree). Train a tokenizer with
 * one of these patterns (`BpeTrainOptions.pattern`) and its GGUF tokenizes exactly like it.
 * - `gpt-2`: GPT-2's split (lower-case contractions, letter runs, digit runs and symbol runs with an optional leading
 *   space, whitespace runs that leave their last space to the next word), as llama.cpp's hand-written matcher does it.
 * - `starcoder`: llama.cpp first isolates every digit, then splits the rest with GPT-2's rule; one regex does the same
 *   when a whitespace run before a digit is kept whole.
 * - `llama-bpe`: Llama 3's split (llama.cpp's pre-tokenizer type LLAMA3): contractions in either case, a letter run with
 *   at most one leading symbol or space, digits in groups of up to three from the left, symbol runs with an optional
 *   leading space and the line breaks after them, line-break runs, whitespace runs that leave their last character to
 *   the next word.
 */
export const LLAMA_CPP_PRETOKENIZER_PATTERNS: Readonly<Record<string, string>> = {
  'gpt-2': String.raw`'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^${WS}\p{L}\p{N}]+|[${WS}]+(?![^${WS}])|[${WS}]+`,
  starcoder: String.raw`'(?:[sdmt]|ll|ve|re)| ?\p{L}+|\p{N}| ?[^${WS}\p{L}\p{N}]+|[${WS}]+(?![^${WS}\p{N}])|[${WS}]+`,
  'llama-bpe': String.raw`'(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^${WS}\p{L}\p{N}]+[\r\n]*|[${WS}]*[\r\n]+|[${WS}]+(?![^${WS}])|[${WS}]+`,
};

/** Our own patterns, their nearest llama.cpp splitter and what it does differently. */
const NEAREST: ReadonlyArray<{ pattern: string; pre: string; differences: string }> = [
  {
    pattern: DEFAULT_PRETOKENIZE_PATTERN,
    pre: 'gpt-2',
    differences: 'it keeps digit runs longer than three whole (ours cuts them into groups of three), splits upper-case contractions (\'S, \'LL) and combining marks off, and treats U+0085 and U+FEFF the other way round as whitespace',
  },
  {
    pattern: SINGLE_DIGIT_PRETOKENIZE_PATTERN,
    pre: 'starcoder',
    differences: 'it keeps a whitespace run before a digit whole (ours gives its last space a piece of its own), splits upper-case contractions (\'S, \'LL) and combining marks off, and treats U+0085 and U+FEFF the other way round as whitespace',
  },
];

export interface PretokenizerChoice {
  /** The `tokenizer.ggml.pre` value to write. */
  pre: string;
  /** Set when llama.cpp will split some text differently from the tokenizer (a name was forced). */
  warning?: string;
}

/**
 * The llama.cpp pre-tokenizer name for a tokenizer pattern. Without `forced`, only an exact counterpart is accepted;
 * otherwise the error says which splitter is nearest, what it does differently, and how to write the file anyway.
 */
export function choosePretokenizer(pattern: string, forced?: string): PretokenizerChoice {
  const exact = Object.entries(LLAMA_CPP_PRETOKENIZER_PATTERNS).find(([, p]) => p === pattern)?.[0];
  const near = NEAREST.find((n) => n.pattern === pattern);
  const consequence = 'so llama.cpp would turn some text into other token ids than longrun does';
  if (forced === undefined) {
    if (exact !== undefined) return { pre: exact };
    const what = near
      ? `llama.cpp's nearest pre-tokenizer, '${near.pre}', splits text differently: ${near.differences}`
      : 'it is not one of the patterns llama.cpp\'s pre-tokenizers reproduce';
    throw new CheckpointError('BAD_ARGUMENT', `cannot name a llama.cpp pre-tokenizer for this tokenizer's pattern: ${what}, ${consequence}. `
      + `Pass --gguf-pre ${near?.pre ?? 'NAME'} (GgufTokenizerOptions.pre) to write the file anyway, or train the tokenizer with a pattern llama.cpp reproduces `
      + `(LLAMA_CPP_PRETOKENIZER_PATTERNS: ${Object.keys(LLAMA_CPP_PRETOKENIZER_PATTERNS).join(', ')})`);
  }
  if (!/^[a-z0-9][a-z0-9._-]*$/i.test(forced)) throw new CheckpointError('BAD_ARGUMENT', `--gguf-pre must be a llama.cpp pre-tokenizer name such as gpt-2, got ${JSON.stringify(forced)}`);
  if (forced === exact) return { pre: forced };
  const known = LLAMA_CPP_PRETOKENIZER_PATTERNS[forced] !== undefined;
  const detail = near && near.pre === forced ? `: ${near.differences}` : known ? '' : ` (and '${forced}' is not a name whose splitting longrun knows; llama.cpp refuses names it does not know)`;
  return { pre: forced, warning: `tokenizer.ggml.pre = '${forced}' does not split text exactly like this tokenizer${detail}; ${consequence}` };
}

export interface GgufTokenizerOptions {
  /**
   * Forces `tokenizer.ggml.pre` (default: the llama.cpp name whose splitting equals the tokenizer's pattern, and an
   * error when there is none). A forced name that splits differently is written with a warning.
   */
  pre?: string;
  padToken?: string;
}

/**
 * Metadata keys `tokenizer.ggml.*` for a BPE model whose vocabulary has `vocabSize` entries (must match the model).
 * What llama.cpp will do differently (only with a forced pre-tokenizer name) is pushed onto `warnings`.
 */
export function bpeTokenizerMetadata(model: BpeModel, vocabSize: number, options: GgufTokenizerOptions = {}, warnings: string[] = []): Map<string, GgufValue> {
  const choice = choosePretokenizer(model.pattern, options.pre);
  const map = byteToUnicode();
  const pieces: string[] = map.slice();
  for (const [a, b] of model.merges) pieces.push(pieces[a] + pieces[b]);
  const types: number[] = pieces.map(() => TOKEN_TYPE.NORMAL);
  for (const special of model.specialTokens) { pieces.push(special); types.push(TOKEN_TYPE.CONTROL); }
  if (pieces.length !== vocabSize) {
    throw new CheckpointError('BAD_ARGUMENT', `tokenizer has ${pieces.length} tokens but the model's vocab_size is ${vocabSize}; they must match for GGUF export`);
  }
  // llama.cpp looks tokens up by their text: two ids with one text would both read as one of them.
  const first = new Map<string, number>();
  for (let id = 0; id < pieces.length; id++) {
    const seen = first.get(pieces[id]);
    if (seen !== undefined) throw new CheckpointError('BAD_ARGUMENT', `tokens ${seen} and ${id} have the same text ${JSON.stringify(pieces[id])}; llama.cpp maps token texts to ids, so the GGUF could not tell them apart`);
    first.set(pieces[id], id);
  }
  const merges = model.merges.map(([a, b]) => `${pieces[a]} ${pieces[b]}`);
  const out = new Map<string, GgufValue>([
    ['tokenizer.ggml.model', { type: 'string', value: 'gpt2' }],
    ['tokenizer.ggml.pre', { type: 'string', value: choice.pre }],
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
  if (choice.warning) warnings.push(choice.warning);
  return out;
}
