/** A byte-level BPE tokenizer for the tiny models trained here: train on a corpus, encode, decode, save, load. */
import { applyMerges } from './bpe-merge.ts';
import { trainBpeModel, type BpeTrainOptions } from './bpe-train.ts';
import { loadBpeModel, saveBpeModel, validateBpeModel, type BpeModel } from './bpe-model.ts';
import { compilePretokenizer, pretokenize } from './pretokenize.ts';
import { splitOnSpecials } from './special-tokens.ts';
import {
  concatBytes,
  utf8,
  type EncodeOptions,
  ByteLevelTokenizer,
} from './tokenizer.ts';

export type { BpeTrainOptions } from './bpe-train.ts';
export type { BpeModel } from './bpe-model.ts';

const WORD_CACHE_LIMIT = 200_000;
const CACHED_WORD_LENGTH = 128;

export class BpeTokenizer extends ByteLevelTokenizer {
  readonly name: string;
  readonly vocabSize: number;
  readonly specialTokens: ReadonlyMap<string, number>;
  readonly eosIds: readonly number[];
  private readonly firstSpecialId: number;
  private readonly specialNames: readonly string[];
  /** (a, b) pair key → merged id; a lower merged id means an earlier (higher-priority) merge. */
  private readonly mergeOf = new Map<number, number>();
  private readonly bytesOf: Uint8Array[] = [];
  private readonly regex: RegExp;
  private readonly wordCache = new Map<string, readonly number[]>();

  constructor(readonly model: BpeModel) {
    super();
    validateBpeModel(model);
    this.regex = compilePretokenizer(model.pattern);
    for (let b = 0; b < 256; b++) this.bytesOf.push(Uint8Array.of(b));
    model.merges.forEach(([a, b], i) => {
      this.mergeOf.set(a * 2 ** 21 + b, 256 + i);
      this.bytesOf.push(concatBytes([this.bytesOf[a], this.bytesOf[b]]));
    });
    this.firstSpecialId = 256 + model.merges.length;
    this.specialNames = model.specialTokens;
    this.specialTokens = new Map(model.specialTokens.map((name, i) => [name, this.firstSpecialId + i]));
    for (const name of model.specialTokens) this.bytesOf.push(utf8(name));
    this.vocabSize = this.firstSpecialId + model.specialTokens.length;
    this.eosIds = model.eosTokens.map((name) => this.specialTokens.get(name)!);
    this.name = `bpe-${this.vocabSize}`;
  }

  static train(corpus: string | Iterable<string>, options: BpeTrainOptions): BpeTokenizer {
    return new BpeTokenizer(trainBpeModel(corpus, options));
  }

  static load(path: string): BpeTokenizer {
    return new BpeTokenizer(loadBpeModel(path));
  }

  save(path: string): void {
    saveBpeModel(path, this.model);
  }

  encode(text: string, options: EncodeOptions = {}): number[] {
    const ids: number[] = [];
    for (const piece of splitOnSpecials(text, this.specialNames, options.allowedSpecial)) {
      if (piece.kind === 'special') {
        ids.push(this.specialTokens.get(piece.name)!);
        continue;
      }
      for (const word of pretokenize(piece.text, this.regex)) {
        for (const id of this.encodeWord(word)) ids.push(id);
      }
    }
    return ids;
  }

  private encodeWord(word: string): readonly number[] {
    const cached = this.wordCache.get(word);
    if (cached) return cached;
    const symbols = applyMerges(Array.from(utf8(word)), this.lookupMerge);
    if (word.length <= CACHED_WORD_LENGTH) {
      if (this.wordCache.size >= WORD_CACHE_LIMIT) this.wordCache.clear();
      this.wordCache.set(word, symbols);
    }
    return symbols;
  }

  private readonly lookupMerge = (a: number, b: number): number | undefined => this.mergeOf.get(a * 2 ** 21 + b);

  tokenBytes(id: number): Uint8Array {
    const bytes = this.bytesOf[id];
    if (!Number.isInteger(id) || bytes === undefined) throw new RangeError(`token id ${id} is outside ${this.name} (vocabulary ${this.vocabSize})`);
    return bytes;
  }

  isSpecial(id: number): boolean {
    return id >= this.firstSpecialId && id < this.vocabSize;
  }
}
