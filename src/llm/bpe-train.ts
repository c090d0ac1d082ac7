/**
 * Byte-level BPE training. Words (pre-tokens) are counted once; pair counts are kept incrementally, so each merge
 * only revisits the words that contain the merged pair instead of recounting the corpus.
 */
import { PairHeap } from './pair-heap.ts';
import { compilePretokenizer, DEFAULT_PRETOKENIZE_PATTERN, pretokenize } from './pretokenize.ts';
import { DEFAULT_BPE_SPECIALS, GPT_OSS_EOS } from './special-tokens.ts';
import { utf8 } from './tokenizer.ts';
import type { BpeModel } from './bpe-model.ts';

export interface BpeTrainOptions {
  /** Target total vocabulary: 256 byte tokens + merges + special tokens. */
  vocabSize: number;
  /** Reserved special tokens, given ids after the merges in this order. Default: the harmony set, ChatML, pad. */
  specialTokens?: readonly string[];
  /** Which specials end generation. Default: gpt-oss's `<|return|>`, `<|call|>`, `<|endoftext|>` (those present). */
  eosTokens?: readonly string[];
  /** Pre-tokenization regex source (compiled with flags `gu`). */
  pattern?: string;
  /** Stop merging when the best pair occurs fewer times than this (default 2): the vocabulary may then be smaller. */
  minPairCount?: number;
  /**
   * Never merge a space with the letter after it (default false). A word then encodes to the same tokens after a
   * space as after a quote or at the start of a line (" Moreau" = " " + the tokens of "Moreau"), so a model copying a
   * name from a sentence into a JSON argument copies token for token instead of mapping " M" to "M". Costs one token
   * per word. Only which merges are learnt changes, not how they are applied.
   */
  separateSpaceBeforeLetters?: boolean;
  /**
   * Never merge any ASCII byte that is not a letter (a space, quote, underscore, dot, digit, …) with the letter after
   * it (default false): the same for every word as `separateSpaceBeforeLetters` is for words after a space. Meant for
   * patterns whose pre-tokens carry one leading symbol into a word (llama.cpp's `llama-bpe` split keeps `"order`,
   * `_jackson` and ` Moreau` whole), so that a word encodes alike after a space, a quote or an underscore.
   */
  separateSymbolsBeforeLetters?: boolean;
}

/** An ASCII letter byte, or a lead/continuation byte of a non-ASCII character. */
const isLetterByte = (b: number): boolean => (b >= 0x41 && b <= 0x5a) || (b >= 0x61 && b <= 0x7a) || b >= 0x80;

/** A space byte followed by a letter byte. */
function spaceThenLetter(left: readonly number[], right: readonly number[]): boolean {
  return left[left.length - 1] === 0x20 && isLetterByte(right[0]);
}

/** An ASCII non-letter byte followed by a letter byte. */
function symbolThenLetter(left: readonly number[], right: readonly number[]): boolean {
  const last = left[left.length - 1];
  return last < 0x80 && !isLetterByte(last) && isLetterByte(right[0]);
}

/** Pair (a, b) → one number. Ids stay below 2^21, so the key is exact in a double. */
const PAIR_BASE = 2 ** 21;

function pairKey(a: number, b: number): number {
  return a * PAIR_BASE + b;
}

function countWords(corpus: string | Iterable<string>, regex: RegExp): Map<string, number> {
  const counts = new Map<string, number>();
  const texts = typeof corpus === 'string' ? [corpus] : corpus;
  for (const text of texts) {
    for (const word of pretokenize(text, regex)) counts.set(word, (counts.get(word) ?? 0) + 1);
  }
  return counts;
}

function mergeWord(symbols: number[], a: number, b: number, merged: number): number[] | undefined {
  let found = false;
  const out: number[] = [];
  for (let i = 0; i < symbols.length; i++) {
    if (i + 1 < symbols.length && symbols[i] === a && symbols[i + 1] === b) {
      out.push(merged);
      i++;
      found = true;
    } else {
      out.push(symbols[i]);
    }
  }
  return found ? out : undefined;
}

export function trainBpeModel(corpus: string | Iterable<string>, options: BpeTrainOptions): BpeModel {
  const specialTokens = [...(options.specialTokens ?? DEFAULT_BPE_SPECIALS)];
  if (new Set(specialTokens).size !== specialTokens.length) throw new Error('BPE special tokens must be distinct');
  const eosTokens = options.eosTokens ? [...options.eosTokens] : GPT_OSS_EOS.filter((t) => specialTokens.includes(t));
  for (const eos of eosTokens) {
    if (!specialTokens.includes(eos)) throw new Error(`eos token ${eos} is not among the special tokens`);
  }
  const pattern = options.pattern ?? DEFAULT_PRETOKENIZE_PATTERN;
  const minPairCount = options.minPairCount ?? 2;
  const maxMerges = options.vocabSize - 256 - specialTokens.length;
  if (!Number.isInteger(options.vocabSize) || maxMerges < 0) {
    throw new Error(`vocabSize ${options.vocabSize} is too small: it must hold 256 bytes + ${specialTokens.length} special tokens`);
  }
  if (options.vocabSize >= PAIR_BASE) throw new Error(`vocabSize must be below ${PAIR_BASE}`);

  const wordCounts = countWords(corpus, compilePretokenizer(pattern));
  const words: number[][] = [];
  const freqs: number[] = [];
  for (const [word, count] of wordCounts) {
    words.push(Array.from(utf8(word)));
    freqs.push(count);
  }

  const pairCounts = new Map<number, number>();
  const pairWords = new Map<number, Set<number>>();
  const addPairs = (w: number, sign: number, deltas: Map<number, number>, onlyWith?: number): void => {
    const symbols = words[w];
    for (let i = 0; i + 1 < symbols.length; i++) {
      const key = pairKey(symbols[i], symbols[i + 1]);
      deltas.set(key, (deltas.get(key) ?? 0) + sign * freqs[w]);
      if (sign > 0 && (onlyWith === undefined || symbols[i] === onlyWith || symbols[i + 1] === onlyWith)) {
        let set = pairWords.get(key);
        if (!set) pairWords.set(key, (set = new Set()));
        set.add(w);
      }
    }
  };

  const initial = new Map<number, number>();
  for (let w = 0; w < words.length; w++) addPairs(w, 1, initial);
  const heap = new PairHeap();
  for (const [key, count] of initial) {
    pairCounts.set(key, count);
    heap.push(count, key);
  }

  const merges: [number, number][] = [];
  // The bytes of every id so far, for the merge filter.
  const tokenBytes: number[][] = Array.from({ length: 256 }, (_, i) => [i]);
  const forbidden = (a: number, b: number): boolean =>
    (options.separateSpaceBeforeLetters === true && spaceThenLetter(tokenBytes[a], tokenBytes[b]))
    || (options.separateSymbolsBeforeLetters === true && symbolThenLetter(tokenBytes[a], tokenBytes[b]));
  while (merges.length < maxMerges) {
    const top = heap.pop();
    if (!top) break;
    if (pairCounts.get(top.key) !== top.count) continue; // stale entry
    if (top.count < minPairCount) break;
    const a = Math.floor(top.key / PAIR_BASE);
    const b = top.key % PAIR_BASE;
    if (forbidden(a, b)) continue; // re-pushed whenever its count changes, skipped again
    const merged = 256 + merges.length;
    merges.push([a, b]);
    tokenBytes.push([...tokenBytes[a], ...tokenBytes[b]]);

    const deltas = new Map<number, number>();
    for (const w of pairWords.get(top.key) ?? []) {
      const next = mergeWord(words[w], a, b, merged);
      if (!next) continue; // the pair left this word through an earlier merge
      addPairs(w, -1, deltas);
      words[w] = next;
      addPairs(w, 1, deltas, merged);
    }
    pairWords.delete(top.key);
    for (const [key, delta] of deltas) {
      if (delta === 0) continue;
      const count = (pairCounts.get(key) ?? 0) + delta;
      if (count > 0) {
        pairCounts.set(key, count);
        heap.push(count, key);
      } else {
        pairCounts.delete(key);
        pairWords.delete(key);
      }
    }
  }
  return { merges, specialTokens, eosTokens, pattern };
}
