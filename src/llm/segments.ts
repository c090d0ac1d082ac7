/**
 * Chat formats render to segments: text runs and special tokens. Each text run is encoded on its own, so a
 * segment boundary is always a token boundary, which is what makes incremental rendering append-only.
 */
import type { Tokenizer } from './tokenizer.ts';

export type Segment = { text: string } | { special: string };

export const special = (name: string): Segment => ({ special: name });
export const text = (value: string): Segment => ({ text: value });

export function encodeSegments(tokenizer: Tokenizer, segments: readonly Segment[]): number[] {
  const ids: number[] = [];
  for (const segment of segments) {
    if ('special' in segment) ids.push(tokenizer.specialId(segment.special));
    else if (segment.text.length > 0) for (const id of tokenizer.encode(segment.text, { allowedSpecial: 'none' })) ids.push(id);
  }
  return ids;
}

export function segmentsToText(segments: readonly Segment[]): string {
  return segments.map((s) => ('special' in s ? s.special : s.text)).join('');
}
