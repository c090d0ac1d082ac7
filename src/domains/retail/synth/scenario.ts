/**
 * The structured goal of a generated task, kept beside the τ² fields (as the task's `longrun` field in the task file).
 * The scripted user plays from it; τ²'s own loaders ignore it.
 */
import type { Address } from '../schema.ts';

export const TASK_FAMILIES = [
  'cancel',
  'modify_items',
  'modify_address',
  'modify_payment',
  'modify_user_address',
  'return',
  'exchange',
  'info',
  'multi',
  'forbidden',
  'failed_auth',
] as const;
export type TaskFamily = (typeof TASK_FAMILIES)[number];

/** How the user points at an order: by its id, or by the products in it (the agent must look it up). */
export interface OrderRef {
  orderId: string;
  byId: boolean;
  /** Product names that single out the order among the user's orders (used when `byId` is false). */
  productNames: string[];
}

export type PaymentRefKind = 'gift_card' | 'paypal' | 'credit_card' | 'original';

export interface PaymentRef {
  paymentMethodId: string;
  kind: PaymentRefKind;
  /** Card brand and last four digits, for credit cards. */
  brand?: string;
  lastFour?: string;
}

/** One item change of a modify-items or exchange request. */
export interface ItemChange {
  itemId: string;
  newItemId: string;
  productName: string;
  /** The option values the user names (all of them, or only the changed ones; the rest stay as they are). */
  statedOptions: Record<string, string>;
}

export interface ReturnItem {
  itemId: string;
  productName: string;
}

export type InfoQuestion = 'order_total' | 'tracking_id' | 'order_count' | 'order_status' | 'gift_card_balance';

/** What the agent should do with a request. */
export type RequestOutcome = 'do' | 'refuse' | 'transfer';

/**
 * `mustSay`: facts the agent must state when it refuses or transfers (the blocking order status, the accepted
 * cancellation reasons, the hand-off sentence); they become the task's `communicate_info`.
 */
export type SynthRequest = { outcome: RequestOutcome; mustSay?: string[] } & (
  | { kind: 'cancel'; order: OrderRef; reason: string; withholdReason: boolean }
  | { kind: 'modify_items'; order: OrderRef; changes: ItemChange[]; payment: PaymentRef; withholdPayment: boolean; droppedChange?: ItemChange }
  | { kind: 'modify_address'; order: OrderRef; address: Address }
  | { kind: 'modify_payment'; order: OrderRef; payment: PaymentRef }
  | { kind: 'modify_user_address'; address: Address }
  | { kind: 'return'; order: OrderRef; items: ReturnItem[]; payment: PaymentRef; withholdPayment: boolean; droppedItem?: ReturnItem }
  | { kind: 'exchange'; order: OrderRef; changes: ItemChange[]; payment: PaymentRef; withholdPayment: boolean; droppedChange?: ItemChange }
  | { kind: 'info'; question: InfoQuestion; order: OrderRef | null; answer: string }
  | { kind: 'human'; topic: string }
);
export type RequestKind = SynthRequest['kind'];

/**
 * `droppedChange` / `droppedItem`: the user first asks for one more item and, when the agent proposes the action,
 * changes its mind and asks without it (the gold action is the final version).
 */
export function changesMind(r: SynthRequest): boolean {
  return ((r.kind === 'modify_items' || r.kind === 'exchange') && r.droppedChange !== undefined) || (r.kind === 'return' && r.droppedItem !== undefined);
}

/** The request as the user first states it (with the item it later drops), or the request itself. */
export function initialVersion(r: SynthRequest): SynthRequest {
  if ((r.kind === 'modify_items' || r.kind === 'exchange') && r.droppedChange) {
    const { droppedChange, ...rest } = r;
    return { ...rest, changes: [...r.changes, droppedChange] };
  }
  if (r.kind === 'return' && r.droppedItem) {
    const { droppedItem, ...rest } = r;
    return { ...rest, items: [...r.items, droppedItem] };
  }
  return r;
}

export interface SynthIdentity {
  userId: string;
  firstName: string;
  lastName: string;
  /** What the user says (wrong on purpose in failed-authentication tasks). */
  email: string;
  zip: string;
  knowsEmail: boolean;
}

export interface SynthScenario {
  version: 1;
  family: TaskFamily;
  difficulty: number;
  worldSeed: number;
  /** Seeds the user's choice of phrasings. */
  styleSeed: number;
  identity: SynthIdentity;
  /** False when the identity details match no user (failed-authentication tasks). */
  authenticates: boolean;
  requests: SynthRequest[];
}
