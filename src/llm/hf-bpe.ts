/**
 * A byte-level BPE tokenizer read from a Hugging Face `tokenizer.json` (the `tokenizers` library's file format), the
 * kind Qwen2/Qwen3, GPT-2 and Llama 3 ship: an optional NFC normalizer, a `Split` pre-tokenizer with a regex
 * (behaviour `Isolated`) followed by `ByteLevel` without its own regex, a `BPE` model over GPT-2's byte-to-unicode
 * alphabet, and `added_tokens` that are cut out of the text before anything else.
 *
 * Encoding follows the `tokenizers` pipeline: each run of text between allowed added tokens is NFC-normalized, cut by
 * the regex (text the regex does not match is a piece of its own, as `Isolated` keeps it), each piece mapped to
 * bytes and merged by rank (lowest rank first, leftmost first on ties). Every added token counts as special here
 * (`isSpecial`), including those the file marks `special: false` (Qwen's `<tool_call>`, `<think>`, …): with the
 * default `allowedSpecial: 'none'` none of them is made from text, so a tool result cannot forge one.
 */
import { readFileSync } from 'node:fs';
import { applyMerges } from './bpe-merge.ts';
import { splitOnSpecials } from './special-tokens.ts';
import { ByteLevelTokenizer, utf8, type EncodeOptions } from './tokenizer.ts';

const WORD_CACHE_LIMIT = 200_000;
const CACHED_WORD_LENGTH = 128;

/** GPT-2's byte → printable character table (`bytes_to_unicode`): printable Latin-1 bytes map to themselves. */
function byteAlphabet(): { charOf: string[]; byteOf: Map<string, number> } {
  const charOf: string[] = new Array(256);
  let shifted = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || (b >= 0xae && b <= 0xff);
    charOf[b] = String.fromCharCode(printable ? b : 256 + shifted++);
  }
  return { charOf, byteOf: new Map(charOf.map((c, b) => [c, b])) };
}

/**
 * The `tokenizers` regex in JavaScript syntax. Node 20 has no inline flag groups, so the one the GPT/Qwen patterns
 * use, `(?i:'s|'t|'re|'ve|'m|'ll|'d)`, is spelt out with both cases of each letter (and `ſ`, which Unicode
 * case-folds to `s`).
 */
export function hfRegexToJs(pattern: string): RegExp {
  const source = pattern.replace("(?i:'s|'t|'re|'ve|'m|'ll|'d)", "'(?:[sSſ]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD])");
  if (source.includes('(?i')) throw new Error(`unsupported inline flags in the pre-tokenizer regex ${JSON.stringify(pattern)}`);
  try {
    return new RegExp(source, 'gu');
  } catch (error) {
    throw new Error(`the pre-tokenizer regex ${JSON.stringify(pattern)} does not compile in JavaScript: ${(error as Error).message}`, { cause: error });
  }
}

interface HfAddedToken {
  id: number;
  content: string;
  special?: boolean;
  lstrip?: boolean;
  rstrip?: boolean;
  single_word?: boolean;
  normalized?: boolean;
}

interface HfTokenizerFile {
  added_tokens?: HfAddedToken[];
  normalizer?: { type: string } | null;
  pre_tokenizer?: { type: string; pretokenizers?: { type: string; pattern?: { Regex?: string }; behavior?: string; invert?: boolean; use_regex?: boolean; add_prefix_space?: boolean }[] } | null;
  model: { type: string; vocab: Record<string, number>; merges: (string | [string, string])[]; byte_fallback?: boolean; ignore_merges?: boolean; continuing_subword_prefix?: string | null; end_of_word_suffix?: string | null };
}

export interface HfBpeOptions {
  /** The tokenizer's name in logs and checkpoints. */
  name: string;
  /** Added-token names that end generation for a plain language model. */
  eosTokens: readonly string[];
  /**
   * The model's embedding rows, when it has more than the file has ids (Qwen3: 151,936 for 151,669 ids). The ids in
   * between are reserved: no text encodes to them; a model can still sample one, which decodes as `<|reserved_N|>`
   * and counts as special (a parse error inside a chat turn, not a crash).
   */
  embeddingRows?: number;
}

/** Reads the parts of `tokenizer.json` this implementation supports, refusing the rest by name. */
function parseFile(value: unknown, source: string): { regex: RegExp; nfc: boolean; file: HfTokenizerFile } {
  const file = value as HfTokenizerFile;
  const bad = (what: string) => new Error(`${source}: ${what} (supported: byte-level BPE with an NFC or no normalizer and a Split + ByteLevel pre-tokenizer)`);
  if (!file || typeof file !== 'object' || !file.model || file.model.type !== 'BPE') throw bad(`model type ${JSON.stringify(file?.model?.type)} is not BPE`);
  if (file.model.byte_fallback || file.model.ignore_merges || file.model.continuing_subword_prefix || file.model.end_of_word_suffix) throw bad('the BPE model uses byte_fallback, ignore_merges or subword affixes');
  const normalizer = file.normalizer?.type;
  if (normalizer !== undefined && normalizer !== 'NFC') throw bad(`normalizer ${normalizer}`);
  const steps = file.pre_tokenizer?.type === 'Sequence' ? file.pre_tokenizer.pretokenizers ?? [] : [];
  const [split, byteLevel] = steps;
  if (steps.length !== 2 || split.type !== 'Split' || typeof split.pattern?.Regex !== 'string' || split.behavior !== 'Isolated' || split.invert) throw bad('the pre-tokenizer is not Sequence[Split(Regex, Isolated), ByteLevel]');
  if (byteLevel.type !== 'ByteLevel' || byteLevel.use_regex || byteLevel.add_prefix_space) throw bad('the ByteLevel pre-tokenizer uses its own regex or a prefix space');
  for (const t of file.added_tokens ?? []) if (t.lstrip || t.rstrip || t.single_word) throw bad(`added token ${t.content} strips or matches single words`);
  return { regex: hfRegexToJs(split.pattern.Regex), nfc: normalizer === 'NFC', file };
}

export class HfByteLevelBpeTokenizer extends ByteLevelTokenizer {
  readonly name: string;
  readonly vocabSize: number;
  readonly specialTokens: ReadonlyMap<string, number>;
  readonly eosIds: readonly number[];
  private readonly regex: RegExp;
  private readonly nfc: boolean;
  /** Token id → bytes. */
  private readonly bytesOf: Uint8Array[] = [];
  /**
   * Merging runs on rank symbols: 0–255 are bytes, 256 + r is the result of merge r, so the lowest symbol is the
   * earliest merge (what `applyMerges` needs); `idOfSymbol` maps them to vocabulary ids afterwards.
   */
  private readonly mergeOf = new Map<number, number>();
  private readonly idOfSymbol: Int32Array;
  private readonly specialIds: ReadonlySet<number>;
  private readonly wordCache = new Map<string, readonly number[]>();

  constructor(value: unknown, options: HfBpeOptions & { source?: string }) {
    super();
    const { regex, nfc, file } = parseFile(value, options.source ?? options.name);
    this.name = options.name;
    this.regex = regex;
    this.nfc = nfc;
    const { charOf, byteOf } = byteAlphabet();
    const vocab = file.model.vocab;
    const merges = file.model.merges;
    this.idOfSymbol = new Int32Array(256 + merges.length);
    const symbolOf = new Map<string, number>();
    for (let b = 0; b < 256; b++) {
      const id = vocab[charOf[b]];
      if (id === undefined) throw new Error(`${this.name}: the vocabulary has no token for byte ${b}`);
      symbolOf.set(charOf[b], b);
      this.idOfSymbol[b] = id;
    }
    merges.forEach((merge, r) => {
      const [a, b] = typeof merge === 'string' ? (merge.split(' ') as [string, string]) : merge;
      const sa = symbolOf.get(a);
      const sb = symbolOf.get(b);
      const id = vocab[a + b];
      if (sa === undefined || sb === undefined || id === undefined) throw new Error(`${this.name}: merge ${r} (${a} ${b}) joins tokens that are not in the vocabulary`);
      const key = sa * 2 ** 21 + sb;
      if (!this.mergeOf.has(key)) this.mergeOf.set(key, 256 + r);
      if (!symbolOf.has(a + b)) symbolOf.set(a + b, 256 + r);
      this.idOfSymbol[256 + r] = id;
    });
    let maxId = -1;
    for (const [token, id] of Object.entries(vocab)) {
      const bytes = new Uint8Array(token.length);
      for (let i = 0; i < token.length; i++) {
        const byte = byteOf.get(token[i]);
        if (byte === undefined) throw new Error(`${this.name}: vocabulary token ${JSON.stringify(token)} has a character outside the byte alphabet`);
        bytes[i] = byte;
      }
      this.bytesOf[id] = bytes;
      maxId = Math.max(maxId, id);
    }
    const specials = new Map<string, number>();
    for (const t of file.added_tokens ?? []) {
      specials.set(t.content, t.id);
      this.bytesOf[t.id] = utf8(t.content);
      maxId = Math.max(maxId, t.id);
    }
    this.specialTokens = specials;
    const specialIds = new Set(specials.values());
    for (let id = 0; id <= maxId; id++) if (this.bytesOf[id] === undefined) throw new Error(`${this.name}: id ${id} is neither a vocabulary nor an added token`);
    this.vocabSize = Math.max(maxId + 1, options.embeddingRows ?? 0);
    for (let id = maxId + 1; id < this.vocabSize; id++) {
      this.bytesOf[id] = utf8(`<|reserved_${id}|>`);
      specialIds.add(id);
    }
    this.specialIds = specialIds;
    this.eosIds = options.eosTokens.map((name) => this.specialId(name));
  }

  static load(path: string, options: HfBpeOptions): HfByteLevelBpeTokenizer {
    let value: unknown;
    try {
      value = JSON.parse(readFileSync(path, 'utf8'));
    } catch (error) {
      throw new Error(`cannot read the tokenizer.json ${path}: ${(error as Error).message}`, { cause: error });
    }
    return new HfByteLevelBpeTokenizer(value, { ...options, source: path });
  }

  encode(text: string, options: EncodeOptions = {}): number[] {
    const ids: number[] = [];
    for (const piece of splitOnSpecials(text, this.specialTokens.keys(), options.allowedSpecial)) {
      if (piece.kind === 'special') {
        ids.push(this.specialTokens.get(piece.name)!);
        continue;
      }
      const normalized = this.nfc ? piece.text.normalize('NFC') : piece.text;
      let last = 0;
      for (const match of normalized.matchAll(this.regex)) {
        if (match.index > last) this.pushWord(normalized.slice(last, match.index), ids);
        if (match[0].length > 0) this.pushWord(match[0], ids);
        last = match.index + match[0].length;
      }
      if (last < normalized.length) this.pushWord(normalized.slice(last), ids);
    }
    return ids;
  }

  private pushWord(word: string, out: number[]): void {
    let cached = this.wordCache.get(word);
    if (!cached) {
      cached = applyMerges(Array.from(utf8(word)), this.lookupMerge).map((s) => this.idOfSymbol[s]);
      if (word.length <= CACHED_WORD_LENGTH) {
        if (this.wordCache.size >= WORD_CACHE_LIMIT) this.wordCache.clear();
        this.wordCache.set(word, cached);
      }
    }
    for (const id of cached) out.push(id);
  }

  private readonly lookupMerge = (a: number, b: number): number | undefined => this.mergeOf.get(a * 2 ** 21 + b);

  tokenBytes(id: number): Uint8Array {
    const bytes = Number.isInteger(id) ? this.bytesOf[id] : undefined;
    if (bytes === undefined) throw new RangeError(`token id ${id} is outside ${this.name} (vocabulary ${this.vocabSize})`);
    return bytes;
  }

  isSpecial(id: number): boolean {
    return this.specialIds.has(id);
  }
}
