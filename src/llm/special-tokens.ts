/** Special-token names shared by the tokenizers and the chat formats. */

import type { AllowedSpecial } from './tokenizer.ts';

export const HARMONY = {
  startOfText: '<|startoftext|>',
  endOfText: '<|endoftext|>',
  start: '<|start|>',
  end: '<|end|>',
  message: '<|message|>',
  channel: '<|channel|>',
  constrain: '<|constrain|>',
  return: '<|return|>',
  call: '<|call|>',
} as const;

export const CHATML = {
  imStart: '<|im_start|>',
  imEnd: '<|im_end|>',
} as const;

export const PAD = '<|pad|>';

/** What a freshly trained tiny BPE reserves: the harmony set, ChatML's two markers (for hermes) and a pad. */
export const DEFAULT_BPE_SPECIALS: readonly string[] = [...Object.values(HARMONY), ...Object.values(CHATML), PAD];

/** gpt-oss stops on `<|return|>`, `<|call|>` and `<|endoftext|>` (its generation config's eos ids). */
export const GPT_OSS_EOS: readonly string[] = [HARMONY.return, HARMONY.call, HARMONY.endOfText];

export type TextPiece = { kind: 'text'; text: string } | { kind: 'special'; name: string };

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/**
 * Splits `text` at occurrences of the allowed special names (longest name first at each position); everything
 * else stays text. Special names not allowed are left as text.
 */
export function splitOnSpecials(text: string, known: Iterable<string>, allowed: AllowedSpecial | undefined): TextPiece[] {
  if (allowed === undefined || allowed === 'none') return text.length > 0 ? [{ kind: 'text', text }] : [];
  const names = [...known].filter((name) => allowed === 'all' || allowed.has(name));
  if (names.length === 0) return text.length > 0 ? [{ kind: 'text', text }] : [];
  names.sort((a, b) => b.length - a.length || (a < b ? -1 : a > b ? 1 : 0));
  const pattern = new RegExp(names.map(escapeRegExp).join('|'), 'g');
  const pieces: TextPiece[] = [];
  let last = 0;
  for (const match of text.matchAll(pattern)) {
    const index = match.index;
    if (index > last) pieces.push({ kind: 'text', text: text.slice(last, index) });
    pieces.push({ kind: 'special', name: match[0] });
    last = index + match[0].length;
  }
  if (last < text.length) pieces.push({ kind: 'text', text: text.slice(last) });
  return pieces;
}
