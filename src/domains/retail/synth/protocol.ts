/**
 * The small language the scripted user and the expert share. The user's phrasings vary (seeded templates), but every
 * slot value is written in a fixed, parseable form: order ids `#W…`, product names as in the catalog, option values in
 * double quotes after their option name, addresses as `street, [suite,] city, ST zip, country`, payment methods by
 * kind (and card ending). The expert asks for confirmation with the `(yes/no)` marker, which the user looks for.
 */
import type { Address } from '../schema.ts';

export const CONFIRM_MARKER = '(yes/no)';

export const VALID_REASONS = ['no longer needed', 'ordered by mistake'] as const;

/** How the user words each cancellation reason; invalid ones are reasons the policy does not accept. */
export const REASON_PHRASES: Readonly<Record<string, readonly string[]>> = {
  'no longer needed': ['I no longer need it', 'it is no longer needed', 'I no longer need the items'],
  'ordered by mistake': ['I ordered it by mistake', 'it was ordered by mistake', 'I placed it by mistake'],
  'changed my mind': ['I changed my mind', 'I just changed my mind about it'],
  'found it cheaper': ['I found a better price somewhere else', 'I found it cheaper elsewhere'],
  'too slow': ['it is taking too long to arrive', 'the delivery is too slow'],
};
export const INVALID_REASONS = ['changed my mind', 'found it cheaper', 'too slow'] as const;

export function parseCancelReason(text: string): string | null {
  const t = text.toLowerCase();
  if (/no longer need/.test(t)) return 'no longer needed';
  if (/by mistake/.test(t)) return 'ordered by mistake';
  return null;
}

/** The phrases that introduce an order described by its contents ("my order with the Desk Lamp and the …"). */
export const ORDER_DESCRIPTION_PHRASES = ['my order with', 'the order that contains', 'the order I placed for'] as const;

/**
 * Splits off the description of an order (from its phrase to the next `.`, `:`, `;`, `?` or connecting word), so the
 * products named there are not taken for the items a request is about.
 */
export function extractOrderDescription(text: string): { description: string | null; rest: string } {
  const lower = text.toLowerCase();
  for (const phrase of ORDER_DESCRIPTION_PHRASES) {
    const at = lower.indexOf(phrase.toLowerCase());
    if (at < 0) continue;
    const tail = text.slice(at + phrase.length);
    const end = /[.,:;?\n]| because | to | sent /.exec(tail);
    const stop = end ? at + phrase.length + end.index : text.length;
    return { description: text.slice(at, stop), rest: text.slice(0, at) + text.slice(stop) };
  }
  return { description: null, rest: text };
}

export const ORDER_ID_PATTERN = /#W\d{7}/g;
export const CATALOG_ID_PATTERN = /\b\d{10}\b/g;
export const PAYMENT_ID_PATTERN = /\b(?:credit_card|gift_card|paypal)_\d{7}\b/g;
export const EMAIL_PATTERN = /[A-Za-z0-9._+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+/;

export function allMatches(text: string, pattern: RegExp): string[] {
  return [...text.matchAll(new RegExp(pattern.source, 'g'))].map((m) => m[0]);
}

export const optionKeyText = (key: string): string => key.replaceAll('_', ' ');

/** `color "white" and size "M"` */
export function renderOptions(options: Record<string, string>): string {
  const parts = Object.entries(options).map(([k, v]) => `${optionKeyText(k)} "${v}"`);
  return parts.length <= 1 ? parts.join('') : `${parts.slice(0, -1).join(', ')} and ${parts[parts.length - 1]}`;
}

/** The option values named in a text segment, for the option keys a product has. */
export function parseOptions(segment: string, keys: readonly string[]): Record<string, string> {
  const out: Record<string, string> = {};
  const lower = segment.toLowerCase();
  for (const key of keys) {
    const label = optionKeyText(key).toLowerCase();
    let from = 0;
    for (;;) {
      const at = lower.indexOf(label + ' "', from);
      if (at < 0) break;
      const before = at === 0 ? ' ' : lower[at - 1]!;
      const start = at + label.length + 2;
      const end = segment.indexOf('"', start);
      if (end < 0) break;
      if (!/[a-z0-9_]/.test(before)) {
        out[key] = segment.slice(start, end);
        break;
      }
      from = end + 1;
    }
  }
  return out;
}

export function renderAddress(a: Address): string {
  return `${a.address1}, ${a.address2 ? a.address2 + ', ' : ''}${a.city}, ${a.state} ${a.zip}, ${a.country}`;
}

const ADDRESS_RE = /(\d{1,6} [A-Za-z][A-Za-z ]*?), (?:((?:Suite|Apt|Unit) [0-9A-Za-z]+), )?([A-Za-z][A-Za-z .'-]*?), ([A-Z]{2}) (\d{5}), ([A-Za-z][A-Za-z ]*[A-Za-z])/;

export function parseAddress(text: string): Address | null {
  const m = ADDRESS_RE.exec(text);
  if (!m) return null;
  return { address1: m[1]!, address2: m[2] ?? '', city: m[3]!, country: m[6]!, state: m[4]!, zip: m[5]! };
}

/** Names from `names` that occur in the text (case-insensitive), longest first, each occurrence counted once. */
export function findNames(text: string, names: readonly string[]): { name: string; at: number }[] {
  const lower = text.toLowerCase();
  const taken: [number, number][] = [];
  const found: { name: string; at: number }[] = [];
  for (const name of [...names].sort((a, b) => b.length - a.length)) {
    const n = name.toLowerCase();
    let from = 0;
    for (;;) {
      const at = lower.indexOf(n, from);
      if (at < 0) break;
      from = at + n.length;
      if (taken.some(([s, e]) => at < e && at + n.length > s)) continue;
      taken.push([at, at + n.length]);
      found.push({ name, at });
    }
  }
  return found.sort((a, b) => a.at - b.at);
}
