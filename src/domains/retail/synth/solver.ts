/**
 * The solver: drafts one request of a given kind for a user against the task's live DB and records the gold actions
 * a policy-following agent takes for it (the same lookups and the same write the expert makes). A builder returns
 * null when the user has nothing suitable; a write that fails throws `InfeasibleDraft`.
 */
import type { ReadonlyOrder, ReadonlyUser } from '../db.ts';
import { ADDRESS_FIELDS, type Address } from '../schema.ts';
import { formatMoney, orderTotal } from './facts.ts';
import type { GoldRecorder } from './gold.ts';
import { TRANSFER_MESSAGE } from '../../../tooluse/user.ts';
import { INVALID_REASONS, VALID_REASONS } from './protocol.ts';
import type { SynthRng } from './rng.ts';
import type { InfoQuestion, ItemChange, OrderRef, PaymentRef, SynthRequest } from './scenario.ts';
import { makeItemChanges, makeOrderRef, makePaymentRef, userOrders } from './solver-refs.ts';
import { makeAddress } from './world.ts';

export interface DraftContext {
  gold: GoldRecorder;
  rng: SynthRng;
  difficulty: number;
  user: ReadonlyUser;
  /** Orders already used by earlier requests of the task. */
  usedOrders: Set<string>;
}

export type DoKind = 'cancel' | 'modify_items' | 'modify_address' | 'modify_payment' | 'modify_user_address' | 'return' | 'exchange' | 'info';
export const DO_KINDS: readonly DoKind[] = ['cancel', 'modify_items', 'modify_address', 'modify_payment', 'modify_user_address', 'return', 'exchange', 'info'];

export type ForbiddenKind =
  | 'cancel_not_pending'
  | 'cancel_bad_reason'
  | 'modify_not_pending'
  | 'items_not_pending'
  | 'return_not_delivered'
  | 'exchange_not_delivered'
  | 'other_users_order'
  | 'human';
export const FORBIDDEN_KINDS: readonly ForbiddenKind[] = [
  'cancel_not_pending',
  'cancel_bad_reason',
  'modify_not_pending',
  'items_not_pending',
  'return_not_delivered',
  'exchange_not_delivered',
  'other_users_order',
  'human',
];

const HUMAN_TOPICS = ['a billing dispute', 'a package that arrived damaged', 'a refund I never received', 'a problem with my warranty'];

function freshOrders(ctx: DraftContext, pred: (o: ReadonlyOrder) => boolean): ReadonlyOrder[] {
  return userOrders(ctx.gold.db, ctx.user).filter((o) => !ctx.usedOrders.has(o.order_id) && pred(o));
}

/** Description references get likelier with difficulty. */
function refFor(ctx: DraftContext, order: ReadonlyOrder): OrderRef {
  const p = [0, 0, 0.5, 0.8][Math.min(ctx.difficulty, 3)]!;
  ctx.usedOrders.add(order.order_id);
  return makeOrderRef(ctx.gold.db, ctx.user, order, ctx.rng.chance(p), ctx.rng);
}

/** The lookups the expert makes to find the order: its id directly, or every order of the user. */
export function goldResolveOrder(gold: GoldRecorder, user: ReadonlyUser, ref: OrderRef): void {
  if (ref.byId) gold.read('get_order_details', { order_id: ref.orderId });
  else for (const id of user.orders) gold.read('get_order_details', { order_id: id });
}

const withhold = (ctx: DraftContext): boolean => ctx.rng.chance([0, 0, 0.3, 0.6][Math.min(ctx.difficulty, 3)]!);
const deltaChance = (ctx: DraftContext): number => [0, 0.1, 0.5, 0.7][Math.min(ctx.difficulty, 3)]!;
const maxItems = (ctx: DraftContext): number => Math.min(3, ctx.difficulty);
/** Whether the user will first ask for one item more and drop it at the confirmation. */
const changesMind = (ctx: DraftContext): boolean => ctx.rng.chance([0, 0, 0.2, 0.4][Math.min(ctx.difficulty, 3)]!);

function addressArgs(a: Address): Record<string, string> {
  return Object.fromEntries(ADDRESS_FIELDS.map((f) => [f, a[f]]));
}

/** Tries the user's payment methods in random order until a nameable one makes the write succeed. */
function choosePayment(ctx: DraftContext, methods: readonly string[], original: string | null, writeArgs: (pm: string) => [string, Record<string, unknown>]): PaymentRef | null {
  for (const pm of ctx.rng.shuffle(methods)) {
    const ref = makePaymentRef(ctx.user, pm, original, ctx.rng);
    if (ref === null) continue;
    const [name, args] = writeArgs(pm);
    if (ctx.gold.tryWrite(name, args)) return ref;
  }
  return null;
}

function itemsArgs(order: ReadonlyOrder, changes: readonly ItemChange[], pm: string): Record<string, unknown> {
  return { order_id: order.order_id, item_ids: changes.map((c) => c.itemId), new_item_ids: changes.map((c) => c.newItemId), payment_method_id: pm };
}

function draftItemChange(ctx: DraftContext, kind: 'modify_items' | 'exchange', status: string): SynthRequest | null {
  const tool = kind === 'modify_items' ? 'modify_pending_order_items' : 'exchange_delivered_order_items';
  for (const order of ctx.rng.shuffle(freshOrders(ctx, (o) => o.status === status))) {
    const mind = changesMind(ctx);
    const drafted = makeItemChanges(ctx.gold.db, order, ctx.rng.int(1, maxItems(ctx)) + (mind ? 1 : 0), deltaChance(ctx), ctx.rng);
    if (!drafted) continue;
    // The dropped change is one of the drafted ones; the rest keep the order's item order.
    const dropped = mind && drafted.length >= 2 ? drafted.splice(ctx.rng.int(0, drafted.length - 1), 1)[0] : undefined;
    const changes = drafted;
    const original = order.payment_history[0]?.payment_method_id ?? null;
    const payment = choosePayment(ctx, [...ctx.user.payment_methods.keys()], original, (pm) => [tool, itemsArgs(order, changes, pm)]);
    if (!payment) continue;
    const ref = refFor(ctx, order);
    goldResolveOrder(ctx.gold, ctx.user, ref);
    for (const c of changes) ctx.gold.read('get_product_details', { product_id: order.items.find((i) => i.item_id === c.itemId)!.product_id });
    ctx.gold.write(tool, itemsArgs(order, changes, payment.paymentMethodId));
    return { kind, outcome: 'do', order: ref, changes, payment, withholdPayment: withhold(ctx), ...(dropped ? { droppedChange: dropped } : {}) };
  }
  return null;
}

function draftReturn(ctx: DraftContext): SynthRequest | null {
  for (const order of ctx.rng.shuffle(freshOrders(ctx, (o) => o.status === 'delivered'))) {
    const mind = changesMind(ctx) && order.items.length >= 2;
    const picked = ctx.rng.sample(order.items, Math.min(order.items.length, ctx.rng.int(1, maxItems(ctx) + 1) + (mind ? 1 : 0)));
    const droppedAt = mind && picked.length >= 2 ? ctx.rng.int(0, picked.length - 1) : -1;
    const dropped = droppedAt >= 0 ? picked.splice(droppedAt, 1)[0] : undefined;
    picked.sort((a, b) => order.items.indexOf(a) - order.items.indexOf(b));
    const original = order.payment_history[0]?.payment_method_id ?? null;
    const options = [...ctx.user.payment_methods.values()].filter((m) => m.source === 'gift_card' || m.id === original).map((m) => m.id);
    const args = (pm: string): [string, Record<string, unknown>] => ['return_delivered_order_items', { order_id: order.order_id, item_ids: picked.map((i) => i.item_id), payment_method_id: pm }];
    const payment = choosePayment(ctx, options, original, args);
    if (!payment) continue;
    const ref = refFor(ctx, order);
    goldResolveOrder(ctx.gold, ctx.user, ref);
    ctx.gold.write(...args(payment.paymentMethodId));
    const items = picked.map((i) => ({ itemId: i.item_id, productName: i.name }));
    const droppedItem = dropped ? { droppedItem: { itemId: dropped.item_id, productName: dropped.name } } : {};
    return { kind: 'return', outcome: 'do', order: ref, items, payment, withholdPayment: withhold(ctx), ...droppedItem };
  }
  return null;
}

function draftInfo(ctx: DraftContext): SynthRequest | null {
  const { gold, rng } = ctx;
  // Read the live record: earlier requests of the task may have changed a balance.
  const user = gold.db.getUser(ctx.user.user_id)!;
  const questions = rng.shuffle<InfoQuestion>(['order_total', 'tracking_id', 'order_count', 'order_status', 'gift_card_balance']);
  for (const question of questions) {
    if (question === 'order_count') {
      if (user.orders.length === 0) continue;
      gold.read('get_user_details', { user_id: user.user_id });
      return { kind: 'info', outcome: 'do', question, order: null, answer: String(user.orders.length) };
    }
    if (question === 'gift_card_balance') {
      const cards = [...user.payment_methods.values()].filter((m) => m.source === 'gift_card');
      if (cards.length !== 1 || cards[0]!.source !== 'gift_card') continue;
      gold.read('get_user_details', { user_id: user.user_id });
      return { kind: 'info', outcome: 'do', question, order: null, answer: formatMoney(cards[0]!.balance) };
    }
    const pred =
      question === 'tracking_id'
        ? (o: ReadonlyOrder) => o.fulfillments.length > 0 && o.fulfillments[0]!.tracking_id.length > 0
        : question === 'order_total'
          ? (o: ReadonlyOrder) => ['pending', 'processed', 'delivered'].includes(o.status)
          : () => true;
    const candidates = freshOrders(ctx, pred);
    if (candidates.length === 0) continue;
    const order = rng.pick(candidates);
    const ref = refFor(ctx, order);
    goldResolveOrder(gold, user, ref);
    const answer = question === 'tracking_id' ? order.fulfillments[0]!.tracking_id[0]! : question === 'order_total' ? formatMoney(orderTotal(order.items)) : order.status;
    return { kind: 'info', outcome: 'do', question, order: ref, answer };
  }
  return null;
}

/** Drafts a request the agent should carry out, recording its gold actions. */
export function draftDoRequest(ctx: DraftContext, kind: DoKind): SynthRequest | null {
  const { gold, user, rng } = ctx;
  switch (kind) {
    case 'cancel': {
      const order = rng.shuffle(freshOrders(ctx, (o) => o.status === 'pending'))[0];
      if (!order) return null;
      const reason = rng.pick(VALID_REASONS);
      const ref = refFor(ctx, order);
      goldResolveOrder(gold, user, ref);
      gold.write('cancel_pending_order', { order_id: order.order_id, reason });
      return { kind, outcome: 'do', order: ref, reason, withholdReason: withhold(ctx) };
    }
    case 'modify_items':
      return draftItemChange(ctx, 'modify_items', 'pending');
    case 'exchange':
      return draftItemChange(ctx, 'exchange', 'delivered');
    case 'return':
      return draftReturn(ctx);
    case 'modify_address': {
      const order = rng.shuffle(freshOrders(ctx, (o) => o.status === 'pending'))[0];
      if (!order) return null;
      const address = makeAddress(rng);
      const ref = refFor(ctx, order);
      goldResolveOrder(gold, user, ref);
      gold.write('modify_pending_order_address', { order_id: order.order_id, ...addressArgs(address) });
      return { kind, outcome: 'do', order: ref, address };
    }
    case 'modify_payment': {
      for (const order of rng.shuffle(freshOrders(ctx, (o) => o.status === 'pending' && o.payment_history.length === 1))) {
        const current = order.payment_history[0]!.payment_method_id;
        const others = [...user.payment_methods.keys()].filter((id) => id !== current);
        const args = (pm: string): [string, Record<string, unknown>] => ['modify_pending_order_payment', { order_id: order.order_id, payment_method_id: pm }];
        const payment = choosePayment(ctx, others, null, args);
        if (!payment) continue;
        const ref = refFor(ctx, order);
        goldResolveOrder(gold, user, ref);
        gold.write(...args(payment.paymentMethodId));
        return { kind, outcome: 'do', order: ref, payment };
      }
      return null;
    }
    case 'modify_user_address': {
      const address = makeAddress(rng);
      gold.write('modify_user_address', { user_id: user.user_id, ...addressArgs(address) });
      return { kind, outcome: 'do', address };
    }
    case 'info':
      return draftInfo(ctx);
  }
}

/** Drafts a request the policy forbids (refuse) or that only a human can handle (transfer). No write is recorded. */
export function draftForbiddenRequest(ctx: DraftContext, kind: ForbiddenKind, otherUser: ReadonlyUser | null): SynthRequest | null {
  const { gold, user, rng } = ctx;
  const pickOrder = (pred: (o: ReadonlyOrder) => boolean) => rng.shuffle(freshOrders(ctx, pred))[0];
  const resolved = (order: ReadonlyOrder): OrderRef => {
    const ref = refFor(ctx, order);
    goldResolveOrder(gold, user, ref);
    return ref;
  };
  switch (kind) {
    case 'cancel_not_pending': {
      const order = pickOrder((o) => o.status !== 'pending');
      return order ? { kind: 'cancel', outcome: 'refuse', mustSay: [order.status], order: resolved(order), reason: rng.pick(VALID_REASONS), withholdReason: false } : null;
    }
    case 'cancel_bad_reason': {
      const order = pickOrder((o) => o.status === 'pending');
      return order ? { kind: 'cancel', outcome: 'refuse', mustSay: [...VALID_REASONS], order: resolved(order), reason: rng.pick(INVALID_REASONS), withholdReason: false } : null;
    }
    case 'modify_not_pending': {
      const order = pickOrder((o) => o.status !== 'pending');
      return order ? { kind: 'modify_address', outcome: 'refuse', mustSay: [order.status], order: resolved(order), address: makeAddress(rng) } : null;
    }
    case 'items_not_pending':
    case 'exchange_not_delivered': {
      const items = kind === 'items_not_pending';
      const order = pickOrder((o) => (items ? o.status !== 'pending' : o.status !== 'delivered'));
      const changes = order ? makeItemChanges(gold.db, order, 1, 0, rng) : null;
      const payment = order ? makePaymentRef(user, order.payment_history[0]!.payment_method_id, null, rng) : null;
      if (!order || !changes || !payment) return null;
      return { kind: items ? 'modify_items' : 'exchange', outcome: 'refuse', mustSay: [order.status], order: resolved(order), changes, payment, withholdPayment: false };
    }
    case 'return_not_delivered': {
      const order = pickOrder((o) => o.status !== 'delivered');
      const payment = order ? makePaymentRef(user, order.payment_history[0]!.payment_method_id, null, rng) : null;
      if (!order || !payment) return null;
      const item = rng.pick(order.items);
      return { kind: 'return', outcome: 'refuse', mustSay: [order.status], order: resolved(order), items: [{ itemId: item.item_id, productName: item.name }], payment, withholdPayment: false };
    }
    case 'other_users_order': {
      if (!otherUser) return null;
      const order = rng.shuffle(userOrders(gold.db, otherUser).filter((o) => o.status === 'pending'))[0];
      if (!order) return null;
      const ref: OrderRef = { orderId: order.order_id, byId: true, productNames: [] };
      gold.read('get_order_details', { order_id: order.order_id });
      return { kind: 'cancel', outcome: 'refuse', order: ref, reason: rng.pick(VALID_REASONS), withholdReason: false };
    }
    case 'human': {
      const topic = rng.pick(HUMAN_TOPICS);
      gold.transfer(`The user asks to speak with a human agent about ${topic}.`);
      return { kind: 'human', outcome: 'transfer', mustSay: [TRANSFER_MESSAGE], topic };
    }
  }
}
