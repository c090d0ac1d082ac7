/**
 * GPT-style pre-tokenization: text is cut into words before BPE, so merges never cross a word boundary.
 * Unicode-aware: runs of letters (with combining marks) with an optional leading space, an optional-space run of
 * at most three digits, an optional-space run of other symbols, and whitespace runs (a run followed by a word
 * leaves its last space for that word). English contractions are their own pieces.
 */
export const DEFAULT_PRETOKENIZE_PATTERN =
  String.raw`'(?:[sdmtSDMT]|ll|LL|ve|VE|re|RE)| ?[\p{L}\p{M}]+| ?\p{N}{1,3}| ?[^\s\p{L}\p{M}\p{N}]+|\s+(?!\S)|\s+`;

/**
 * The same with every digit its own piece, never joined to a leading space (LLaMA-style digit splitting): an id
 * such as `#W4615687` then reads as the same seven digit tokens in a user's sentence, a JSON argument and a tool
 * result, so copying it is copying from a ten-symbol alphabet.
 */
export const SINGLE_DIGIT_PRETOKENIZE_PATTERN =
  String.raw`'(?:[sdmtSDMT]|ll|LL|ve|VE|re|RE)| ?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+|\s+(?!\S)|\s+`;

export function compilePretokenizer(pattern: string): RegExp {
  try {
    return new RegExp(pattern, 'gu');
  } catch (error) {
    throw new Error(`invalid pre-tokenization pattern ${JSON.stringify(pattern)}: ${(error as Error).message}`, { cause: error });
  }
}

/**
 * The pieces of `text`. Every character ends up in some piece; a pattern that would skip characters is a bug,
 * and is reported instead of silently dropping text.
 */
export function pretokenize(text: string, regex: RegExp): string[] {
  const pieces: string[] = [];
  let covered = 0;
  for (const match of text.matchAll(regex)) {
    if (match.index !== covered) throw new Error(`pre-tokenization pattern skipped text at offset ${covered}`);
    if (match[0].length === 0) throw new Error('pre-tokenization pattern matched the empty string');
    pieces.push(match[0]);
    covered += match[0].length;
  }
  if (covered !== text.length) throw new Error(`pre-tokenization pattern skipped text at offset ${covered}`);
  return pieces;
}
