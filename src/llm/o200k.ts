/**
 * o200k_harmony, the tokenizer of the real gpt-oss models, through the `gpt-tokenizer` package.
 * Special-token splitting is done here (the package is asked to treat every special name as plain text), so the
 * `allowedSpecial` semantics are exactly those of the BPE tokenizer.
 */
import harmonyEncoding from 'gpt-tokenizer/encoding/o200k_harmony';
import rankTable from 'gpt-tokenizer/bpeRanks/o200k_base';
import { GPT_OSS_EOS, HARMONY } from './special-tokens.ts';
import { splitOnSpecials } from './special-tokens.ts';
import {
  utf8,
  type EncodeOptions,
  ByteLevelTokenizer,
} from './tokenizer.ts';

/** gpt-oss embedding rows (the last reserved special is 201087). */
export const O200K_HARMONY_VOCAB_SIZE = 201088;

/** The named specials of o200k_harmony. Ids 200013–201087 (except 200018) are `<|reserved_N|>`. */
export const O200K_HARMONY_SPECIALS: ReadonlyMap<string, number> = new Map([
  [HARMONY.startOfText, 199998],
  [HARMONY.endOfText, 199999],
  [HARMONY.return, 200002],
  [HARMONY.constrain, 200003],
  [HARMONY.channel, 200005],
  [HARMONY.start, 200006],
  [HARMONY.end, 200007],
  [HARMONY.message, 200008],
  [HARMONY.call, 200012],
  ['<|endofprompt|>', 200018],
]);

const plainText = { disallowedSpecial: new Set<string>() };

function reservedName(id: number): string | undefined {
  const named = [...O200K_HARMONY_SPECIALS].find(([, v]) => v === id);
  if (named) return named[0];
  if (id >= 199998 && id < O200K_HARMONY_VOCAB_SIZE) return `<|reserved_${id}|>`;
  return undefined;
}

export class O200kHarmonyTokenizer extends ByteLevelTokenizer {
  readonly name = 'o200k_harmony';
  readonly vocabSize = O200K_HARMONY_VOCAB_SIZE;
  readonly specialTokens = O200K_HARMONY_SPECIALS;
  readonly eosIds = GPT_OSS_EOS.map((name) => O200K_HARMONY_SPECIALS.get(name)!);
  private readonly byteCache = new Map<number, Uint8Array>();

  encode(text: string, options: EncodeOptions = {}): number[] {
    const ids: number[] = [];
    for (const piece of splitOnSpecials(text, this.specialTokens.keys(), options.allowedSpecial)) {
      if (piece.kind === 'special') ids.push(this.specialTokens.get(piece.name)!);
      else for (const id of harmonyEncoding.encode(piece.text, plainText)) ids.push(id);
    }
    return ids;
  }

  tokenBytes(id: number): Uint8Array {
    const cached = this.byteCache.get(id);
    if (cached) return cached;
    let bytes: Uint8Array;
    const entry = Number.isInteger(id) && id >= 0 && id < rankTable.length ? rankTable[id] : undefined;
    if (typeof entry === 'string') bytes = utf8(entry);
    else if (Array.isArray(entry)) bytes = Uint8Array.from(entry);
    else {
      const name = Number.isInteger(id) ? reservedName(id) : undefined;
      if (name === undefined) throw new RangeError(`token id ${id} is outside ${this.name} (vocabulary ${this.vocabSize})`);
      bytes = utf8(name);
    }
    this.byteCache.set(id, bytes);
    return bytes;
  }

  isSpecial(id: number): boolean {
    return id >= 199998 && id < O200K_HARMONY_VOCAB_SIZE;
  }
}

let shared: O200kHarmonyTokenizer | undefined;

/** The process-wide instance (the rank table is large; load it once). */
export function o200kHarmony(): O200kHarmonyTokenizer {
  return (shared ??= new O200kHarmonyTokenizer());
}
