/**
 * The text↔token seam. Every tokenizer (the tiny byte-level BPE trained here, o200k_harmony for real gpt-oss)
 * implements this interface, so chat formats and the rollout loop never care which one is underneath.
 */

/**
 * Which special-token strings found in the input become single special ids.
 * `'none'` (the default) encodes them as ordinary text, so a tool result that happens to contain `<|end|>`
 * cannot end a message early.
 */
export type AllowedSpecial = 'all' | 'none' | ReadonlySet<string>;

export interface EncodeOptions {
  allowedSpecial?: AllowedSpecial;
}

export interface Tokenizer {
  /** A short name for logs and checkpoints (`bpe-4096`, `o200k_harmony`). */
  readonly name: string;
  /** Size of the id space (embedding rows): every id is in `[0, vocabSize)`. */
  readonly vocabSize: number;
  /** Special-token name (e.g. `<|start|>`) → id. */
  readonly specialTokens: ReadonlyMap<string, number>;
  /** Ids that end generation for a plain language model (chat formats bring their own stop ids). */
  readonly eosIds: readonly number[];
  encode(text: string, options?: EncodeOptions): number[];
  /** Decodes to text; invalid UTF-8 (a character split across the end) becomes U+FFFD. Specials decode to their names. */
  decode(ids: readonly number[]): string;
  /** The exact bytes of `ids` (special tokens contribute the UTF-8 bytes of their names). */
  decodeBytes(ids: readonly number[]): Uint8Array;
  /** The bytes of one token. Throws a RangeError for an id outside the vocabulary. */
  tokenBytes(id: number): Uint8Array;
  /** A printable form of one token: its text when it is valid UTF-8, else `<0xNN>` per byte. */
  tokenToString(id: number): string;
  /** The id of a special token; throws an error naming the tokenizer when it has none of that name. */
  specialId(name: string): number;
  isSpecial(id: number): boolean;
}

const utf8Encoder = new TextEncoder();

export function utf8(text: string): Uint8Array {
  return utf8Encoder.encode(text);
}

export function concatBytes(parts: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const part of parts) length += part.length;
  const out = new Uint8Array(length);
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

/** Bytes → printable text, with each byte of an invalid UTF-8 sequence shown as `<0xNN>`. */
export function bytesToDisplayString(bytes: Uint8Array): string {
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    return Array.from(bytes, (b) => `<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`).join('');
  }
}

/**
 * Token-by-token decoding for streaming output. A token may end in the middle of a multi-byte UTF-8 character;
 * those bytes are held back until the character is complete, so every emitted piece is whole text.
 */
export class StreamingDecoder {
  private readonly decoder = new TextDecoder('utf-8', { fatal: false });

  constructor(private readonly tokenizer: Pick<Tokenizer, 'tokenBytes'>) {}

  /** Returns the text completed by this token (possibly empty). */
  push(id: number): string {
    return this.decoder.decode(this.tokenizer.tokenBytes(id), { stream: true });
  }

  /** Ends the stream: any incomplete trailing character comes back as U+FFFD. */
  flush(): string {
    return this.decoder.decode();
  }
}

/** The byte-level decoding every tokenizer here shares; a subclass supplies the vocabulary and `encode`. */
export abstract class ByteLevelTokenizer implements Tokenizer {
  abstract readonly name: string;
  abstract readonly vocabSize: number;
  abstract readonly specialTokens: ReadonlyMap<string, number>;
  abstract readonly eosIds: readonly number[];
  abstract encode(text: string, options?: EncodeOptions): number[];
  abstract tokenBytes(id: number): Uint8Array;
  abstract isSpecial(id: number): boolean;

  decodeBytes(ids: readonly number[]): Uint8Array {
    return concatBytes(ids.map((id) => this.tokenBytes(id)));
  }

  decode(ids: readonly number[]): string {
    return new TextDecoder('utf-8', { fatal: false }).decode(this.decodeBytes(ids));
  }

  tokenToString(id: number): string {
    return bytesToDisplayString(this.tokenBytes(id));
  }

  specialId(name: string): number {
    return requireSpecial(this.name, this.specialTokens, name);
  }
}

/** Looks up a special id by name, with an error message that says which tokenizer lacks it. */
export function requireSpecial(tokenizerName: string, specials: ReadonlyMap<string, number>, name: string): number {
  const id = specials.get(name);
  if (id === undefined) {
    throw new Error(`tokenizer ${tokenizerName} has no special token ${name} (it has: ${[...specials.keys()].join(' ')})`);
  }
  return id;
}
