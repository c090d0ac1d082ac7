/** Write tools on whole orders: cancel a pending order, exchange or return items of a delivered one. */
import { ToolError, type Tool } from '../../../tooluse/types.ts';
import type { RetailDb } from '../db.ts';
import { pyRound } from '../../../tooluse/python/pyjson.ts';
import { assertHashable, pyIter, pyLen, pySortedStrings } from '../../../tooluse/python/pyvalue.ts';
import type { OrderPayment } from '../schema.ts';
import { defineTool } from './define.ts';
import {
  adjustGiftCard,
  checkItemQuantities,
  getOrder,
  getPaymentMethod,
  getUser,
  getVariant,
  idText,
  orderForWrite,
  requireItemList,
  type RetailToolOptions,
} from './lookups.ts';
import { CONFIRMATION_RULE, ORDER_ID_PARAM, PRICE_DIFFERENCE_PAYMENT_PARAM } from './params.ts';

const CANCEL_REASONS = new Set(['no longer needed', 'ordered by mistake']);

function cancelPendingOrder(db: RetailDb, args: Record<string, unknown>, opts: RetailToolOptions) {
  const order = getOrder(db, args.order_id);
  if (order.status !== 'pending') throw new ToolError('Non-pending order cannot be cancelled');
  const reason = args.reason;
  assertHashable(reason);
  if (typeof reason !== 'string' || !CANCEL_REASONS.has(reason)) throw new ToolError('Invalid reason');

  const payments = [...order.payment_history];
  if (!opts.tau2Compat) {
    // Fixed: verify every refund target before touching any balance (τ² may fail half-way, keeping earlier refunds).
    for (const p of payments) getPaymentMethod(db, getUser(db, order.user_id).user_id, p.payment_method_id);
  }
  const refunds: OrderPayment[] = [];
  for (const payment of payments) {
    refunds.push({ transaction_type: 'refund', amount: payment.amount, payment_method_id: payment.payment_method_id });
    const user = getUser(db, order.user_id);
    const method = getPaymentMethod(db, user.user_id, payment.payment_method_id);
    if (method.source === 'gift_card') {
      adjustGiftCard(db, user.user_id, payment.payment_method_id, (b) => pyRound(b + payment.amount, 2));
    }
  }
  const w = orderForWrite(db, order.order_id);
  w.status = 'cancelled';
  w.cancel_reason = reason as 'no longer needed' | 'ordered by mistake';
  w.payment_history.push(...refunds);
  return w;
}

function exchangeDeliveredOrderItems(db: RetailDb, args: Record<string, unknown>, opts: RetailToolOptions) {
  const order = getOrder(db, args.order_id);
  if (order.status !== 'delivered') throw new ToolError('Non-delivered order cannot be exchanged');
  let itemIds: unknown = args.item_ids;
  let newItemIds: unknown = args.new_item_ids;
  if (!opts.tau2Compat) {
    itemIds = requireItemList(itemIds, 'item_ids', false);
    newItemIds = requireItemList(newItemIds, 'new_item_ids', false);
  }
  checkItemQuantities(order, itemIds, (id) => `Number of ${idText(id)} not found.`);
  if (pyLen(itemIds) !== pyLen(newItemIds)) throw new ToolError('The number of items to be exchanged should match.');

  const olds = pyIter(itemIds);
  const news = pyIter(newItemIds);
  let diff: number | null = null; // null: Python's int 0, still untouched by any float
  for (let k = 0; k < Math.min(olds.length, news.length); k++) {
    const oldId = olds[k];
    const newId = news[k];
    if (!opts.tau2Compat && oldId === newId) throw new ToolError('The new item id should be different from the old item id');
    const item = order.items.find((i) => i.item_id === oldId);
    if (item === undefined) throw new ToolError(`Item ${idText(oldId)} not found`);
    const variant = getVariant(db, item.product_id, newId);
    if (!variant.available) throw new ToolError(`New item ${idText(newId)} not found or available`);
    diff = (diff ?? 0) + (variant.price - item.price);
  }
  const rounded = diff === null ? null : pyRound(diff, 2);

  const method = getPaymentMethod(db, order.user_id, args.payment_method_id);
  if (method.source === 'gift_card' && method.balance < (rounded ?? 0)) {
    throw new ToolError('Insufficient gift card balance to pay for the price difference');
  }
  const w = orderForWrite(db, order.order_id);
  w.status = 'exchange requested';
  w.exchange_items = pySortedStrings(olds);
  w.exchange_new_items = pySortedStrings(news);
  w.exchange_payment_method_id = args.payment_method_id as string; // found as a dict key, so a str
  // τ² stores the int 0 when no pair was given (it then dumps as `0`, not `0.0`).
  w.exchange_price_difference = rounded ?? (opts.tau2Compat ? 0n : 0);
  return w;
}

function returnDeliveredOrderItems(db: RetailDb, args: Record<string, unknown>, opts: RetailToolOptions) {
  const order = getOrder(db, args.order_id);
  if (order.status !== 'delivered') throw new ToolError('Non-delivered order cannot be returned');
  const user = getUser(db, order.user_id);
  const method = getPaymentMethod(db, user.user_id, args.payment_method_id);
  if (method.source !== 'gift_card') {
    const original = order.payment_history[0];
    if (original === undefined) throw new ToolError('list index out of range');
    if (args.payment_method_id !== original.payment_method_id) {
      throw new ToolError('Payment method should be the original payment method');
    }
  }
  let itemIds: unknown = args.item_ids;
  if (!opts.tau2Compat) itemIds = requireItemList(itemIds, 'item_ids', false);
  checkItemQuantities(order, itemIds, () => 'Some item not found');

  const w = orderForWrite(db, order.order_id);
  w.status = 'return requested';
  w.return_items = pySortedStrings(pyIter(itemIds));
  w.return_payment_method_id = args.payment_method_id as string; // found as a dict key, so a str
  return w;
}

const ITEM_IDS_DESCRIPTION = "Ids of the items, e.g. ['1008292230']. The same id may appear several times.";

export function createCancelPendingOrderTool(opts: RetailToolOptions): Tool<RetailDb> {
  return defineTool({
    name: 'cancel_pending_order',
    kind: 'write',
    summary: 'Cancel an order that is still pending.',
    details:
      'Orders that are already processed or delivered cannot be cancelled. ' +
      CONFIRMATION_RULE +
      " Once confirmed, the order's status becomes 'cancelled' and its payment is refunded: straight away to a gift " +
      'card, or within 5-7 business days to any other payment method. Returns the order after the cancellation.',
    params: [
      ORDER_ID_PARAM,
      {
        name: 'reason',
        type: 'string',
        description: "Why the order is cancelled: must be 'no longer needed' or 'ordered by mistake'.",
      },
    ],
    run: (db, args) => cancelPendingOrder(db, args, opts),
  });
}

export function createExchangeDeliveredOrderItemsTool(opts: RetailToolOptions): Tool<RetailDb> {
  return defineTool({
    name: 'exchange_delivered_order_items',
    kind: 'write',
    summary: 'Exchange items of a delivered order for other items (variants) of the same products.',
    details:
      'A delivered order can be returned or exchanged only once, so collect every item the user wants to exchange ' +
      'before calling. ' +
      CONFIRMATION_RULE +
      ' Returns the order after the exchange request.',
    params: [
      ORDER_ID_PARAM,
      { name: 'item_ids', type: 'string[]', description: `${ITEM_IDS_DESCRIPTION} These are the items to give back.` },
      {
        name: 'new_item_ids',
        type: 'string[]',
        description:
          "Ids of the replacement items, e.g. ['1008292230'], duplicates allowed. The entry at each position " +
          'replaces the item at the same position of item_ids and must be a variant of the same product.',
      },
      PRICE_DIFFERENCE_PAYMENT_PARAM,
    ],
    run: (db, args) => exchangeDeliveredOrderItems(db, args, opts),
  });
}

export function createReturnDeliveredOrderItemsTool(opts: RetailToolOptions): Tool<RetailDb> {
  return defineTool({
    name: 'return_delivered_order_items',
    kind: 'write',
    summary: 'Request the return of items from a delivered order.',
    details:
      "The order's status becomes 'return requested' and the user receives an email explaining how and where to " +
      'send the items. A delivered order can be returned or exchanged only once. ' +
      CONFIRMATION_RULE +
      ' Returns the order after the return request.',
    params: [
      ORDER_ID_PARAM,
      { name: 'item_ids', type: 'string[]', description: `${ITEM_IDS_DESCRIPTION} These are the items to return.` },
      {
        name: 'payment_method_id',
        type: 'string',
        description:
          "Where the refund goes: the order's original payment method or one of the user's gift cards, e.g. " +
          "'gift_card_0000000' or 'credit_card_0000000'. The user's and the order's details list the ids.",
      },
    ],
    run: (db, args) => returnDeliveredOrderItems(db, args, opts),
  });
}
