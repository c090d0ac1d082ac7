/** How the expert understands user texts: request kinds, identity details, references to orders and payments. */
import { EMAIL_PATTERN, parseCancelReason } from './protocol.ts';
import type { InfoQuestion } from './scenario.ts';

export type ExpertKind =
  | 'human'
  | 'exchange'
  | 'return'
  | 'cancel'
  | 'modify_user_address'
  | 'modify_address'
  | 'modify_items'
  | 'modify_payment'
  | { info: InfoQuestion };

/** The kind of request a user text makes, or null when it makes none (an answer, a greeting…). */
export function detectKind(text: string): ExpertKind | null {
  const t = text.toLowerCase();
  if (/human agent|real person|supervisor|representative/.test(t)) return 'human';
  if (/\bexchange\b/.test(t)) return 'exchange';
  if (/\breturn\b/.test(t)) return 'return';
  if (/\bcancel/.test(t)) return 'cancel';
  if (/default address/.test(t)) return 'modify_user_address';
  if (/shipping address/.test(t)) return 'modify_address';
  if (/\b(modify|change|switch)\b/.test(t) && t.includes('"')) return 'modify_items';
  if (/payment method/.test(t)) return 'modify_payment';
  if (/tracking/.test(t)) return { info: 'tracking_id' };
  if (/how many orders/.test(t)) return { info: 'order_count' };
  if (/\bbalance\b/.test(t)) return { info: 'gift_card_balance' };
  if (/\bstatus\b/.test(t)) return { info: 'order_status' };
  if (/\btotal\b|how much did/.test(t)) return { info: 'order_total' };
  return null;
}

export interface IdentityDetails {
  email?: string;
  firstName?: string;
  lastName?: string;
  zip?: string;
}

export function parseIdentity(text: string): IdentityDetails {
  const out: IdentityDetails = {};
  const email = EMAIL_PATTERN.exec(text);
  if (email) out.email = email[0].replace(/\.$/, '');
  const name = /(?:[Mm]y name is|\bI'm|\bI am)\s+([A-Z][A-Za-z'-]+)\s+([A-Z][A-Za-z'-]+)/.exec(text);
  if (name) {
    out.firstName = name[1]!;
    out.lastName = name[2]!;
  }
  const zip = /zip(?: code)?(?: is)?\s*(\d{5})\b/i.exec(text);
  if (zip) out.zip = zip[1]!;
  return out;
}

export const ORDER_ID_IN_TEXT = /#W\d{7}/;

export type PaymentMention = { kind: 'gift_card' } | { kind: 'paypal' } | { kind: 'original' } | { kind: 'credit_card'; lastFour: string };

export function parsePaymentMention(text: string): PaymentMention | null {
  const t = text.toLowerCase();
  if (/original payment/.test(t)) return { kind: 'original' };
  if (/gift card/.test(t)) return { kind: 'gift_card' };
  if (/paypal/.test(t)) return { kind: 'paypal' };
  const card = /ending in (\d{4})/.exec(t);
  if (card) return { kind: 'credit_card', lastFour: card[1]! };
  return null;
}

export type ReasonMention = { valid: string } | { invalid: true } | null;

export function parseReason(text: string): ReasonMention {
  const valid = parseCancelReason(text);
  if (valid) return { valid };
  return /\bbecause\b|\bsince\b|\breason is\b/i.test(text) ? { invalid: true } : null;
}

export const isYes = (text: string): boolean => /^\s*(yes|yeah|yep|sure|correct)\b/i.test(text);
