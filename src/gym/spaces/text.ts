import { maskOn, Space, type SpaceJSON } from './space.ts';

/** Gymnasium's default Text charset: `[A-Za-z0-9]`. */
export const ALPHANUMERIC = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';

/**
 * Characters `Text` with `charset: 'any'` samples from. Any string is *contained* in such a space; the sampler
 * only needs to be seeded and exercise non-ASCII input, so it draws from this documented mix of ASCII printable,
 * Latin-1, Greek, Cyrillic, CJK, Hangul, combining-free emoji (astral plane) and whitespace.
 */
export const UNICODE_SAMPLE_POOL: readonly string[] = Array.from(
  ' !"#$%&\'()*+,-./0123456789:;<=>?@ABCDEFGHIJKLMNOPQRSTUVWXYZ[\\]^_`abcdefghijklmnopqrstuvwxyz{|}~' +
    'äöüßéèêñçøåÆœ¿¡€£' +
    'αβγδελμπσωΩ' +
    'абвгджзийклмн' +
    '中文字日本語東京你好世界' +
    '한국어' +
    '🙂🚀✨🎉🤖' +
    '\n\t',
);

/** Mask for `Text.sample`: `[length | null, charsetMask | null]`, as Gymnasium's `(length, charlist_mask)`. */
export type TextMask = readonly [number | null, ArrayLike<number | boolean> | null];

export interface TextOptions {
  /** Minimum length in characters (Unicode code points); default 1 as in Gymnasium. */
  minLength?: number;
  /**
   * Allowed characters: a string (split into code points, so emoji and CJK work) or an array of single
   * characters; `'any'` accepts any string and samples from `UNICODE_SAMPLE_POOL` (for the three letters a, n, y
   * pass `['a', 'n', 'y']`). Default `ALPHANUMERIC`.
   */
  charset?: string | readonly string[] | 'any';
  seed?: number;
}

/**
 * Strings of `minLength..maxLength` characters over a charset (Gymnasium's `Text`). Lengths count Unicode code
 * points, not UTF-16 units. Sampling picks a length uniformly, then each character uniformly.
 */
export class Text extends Space<string, TextMask> {
  readonly type = 'Text';
  readonly maxLength: number;
  readonly minLength: number;
  /** The characters in charset order, or null for `'any'`. */
  readonly characters: readonly string[] | null;
  private readonly charSet: Set<string> | null;

  constructor(maxLength: number, options: TextOptions = {}) {
    super();
    const minLength = options.minLength ?? 1;
    if (!Number.isSafeInteger(minLength) || minLength < 0) throw new RangeError(`Text: minLength must be a non-negative integer, got ${minLength}`);
    if (!Number.isSafeInteger(maxLength) || maxLength < minLength) throw new RangeError(`Text: maxLength must be an integer >= minLength (${minLength}), got ${maxLength}`);
    this.maxLength = maxLength;
    this.minLength = minLength;
    const charset = options.charset ?? ALPHANUMERIC;
    if (charset === 'any') {
      this.characters = null;
      this.charSet = null;
    } else {
      const chars = typeof charset === 'string' ? Array.from(charset) : [...charset];
      for (const c of chars) if (typeof c !== 'string' || Array.from(c).length !== 1) throw new TypeError(`Text: charset entries must be single characters, got ${JSON.stringify(c)}`);
      const unique = [...new Set(chars)];
      if (unique.length === 0) throw new RangeError('Text: charset must not be empty');
      this.characters = unique;
      this.charSet = new Set(unique);
    }
    if (options.seed !== undefined) this.seed(options.seed);
  }

  /** A Text space that accepts any Unicode string of up to `maxLength` code points (min 0 by default). */
  static unicode(maxLength: number, options: Omit<TextOptions, 'charset'> = {}): Text {
    return new Text(maxLength, { minLength: 0, ...options, charset: 'any' });
  }

  override get shape(): null {
    return null;
  }

  /** The charset as one string, or 'any'. */
  get charset(): string {
    return this.characters === null ? 'any' : this.characters.join('');
  }

  sample(mask?: TextMask): string {
    const [length, charMask] = mask ?? [null, null];
    const rng = this.npRandom;
    let n: number;
    if (length !== null && length !== undefined) {
      if (!Number.isSafeInteger(length) || length < this.minLength || length > this.maxLength) {
        throw new RangeError(`Text.sample: length ${length} is outside [${this.minLength}, ${this.maxLength}]`);
      }
      n = length;
    } else {
      n = rng.integers(this.minLength, this.maxLength, { endpoint: true });
    }
    let pool: readonly string[] = this.characters ?? UNICODE_SAMPLE_POOL;
    if (charMask !== null && charMask !== undefined) {
      if (this.characters === null) throw new TypeError("Text.sample: a character mask needs an explicit charset, not 'any'");
      if (charMask.length !== this.characters.length) throw new RangeError(`Text.sample: character mask length ${charMask.length} != charset size ${this.characters.length}`);
      pool = this.characters.filter((_, i) => maskOn(charMask, i));
      if (pool.length === 0) {
        if (this.minLength === 0 && (length === null || length === 0)) return '';
        throw new RangeError(`Text.sample: the character mask is all zero but the minimum length is ${Math.max(this.minLength, length ?? 0)}`);
      }
    }
    let out = '';
    for (let i = 0; i < n; i++) out += pool[rng.integers(pool.length)];
    return out;
  }

  contains(x: unknown): x is string {
    if (typeof x !== 'string') return false;
    const chars = Array.from(x);
    if (chars.length < this.minLength || chars.length > this.maxLength) return false;
    if (this.charSet === null) return true;
    return chars.every((c) => this.charSet!.has(c));
  }

  equals(other: unknown): boolean {
    if (!(other instanceof Text) || other.minLength !== this.minLength || other.maxLength !== this.maxLength) return false;
    if (this.charSet === null || other.charSet === null) return this.charSet === other.charSet;
    return this.charSet.size === other.charSet.size && [...this.charSet].every((c) => other.charSet!.has(c));
  }

  toJSON(): SpaceJSON {
    // null (not the string 'any') so that a literal charset of the letters a, n, y round-trips too
    return { type: this.type, maxLength: this.maxLength, minLength: this.minLength, charset: this.characters === null ? null : this.characters.join('') };
  }

  override toString(): string {
    const cs = this.charset.length > 20 ? `${Array.from(this.charset).slice(0, 20).join('')}…` : this.charset;
    return `Text(${this.minLength}, ${this.maxLength}, charset=${cs})`;
  }
}
