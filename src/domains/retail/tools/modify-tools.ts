/** Write tools that modify a pending order (address, items, payment) or a user's default address. */
import { ToolError, type Tool } from '../../../tooluse/types.ts';
import type { RetailDb, ReadonlyOrder } from '../db.ts';
import { pyRound } from '../../../tooluse/python/pyjson.ts';
import { pyEquals, pyIter, pyLen } from '../../../tooluse/python/pyvalue.ts';
import type { DeepReadonly, Variant } from '../schema.ts';
import { defineTool } from './define.ts';
import {
  adjustGiftCard,
  buildAddress,
  checkItemQuantities,
  getOrder,
  getPaymentMethod,
  getUser,
  getVariant,
  idText,
  orderForWrite,
  requireItemList,
  userForWrite,
  type RetailToolOptions,
} from './lookups.ts';
import { CONFIRMATION_RULE, ORDER_ID_PARAM, PRICE_DIFFERENCE_PAYMENT_PARAM, addressParams } from './params.ts';
import { USER_ID_PARAM } from './read-tools.ts';

/** τ² accepts any status containing "pending" for address and payment changes; the fixed mode wants exactly "pending". */
function isModifiablePending(order: ReadonlyOrder, opts: RetailToolOptions): boolean {
  return opts.tau2Compat ? order.status.includes('pending') : order.status === 'pending';
}

function modifyPendingOrderAddress(db: RetailDb, args: Record<string, unknown>, opts: RetailToolOptions) {
  const order = getOrder(db, args.order_id);
  if (!isModifiablePending(order, opts)) throw new ToolError('Non-pending order cannot be modified');
  const address = buildAddress(args);
  const w = orderForWrite(db, order.order_id);
  w.address = address;
  return w;
}

function modifyPendingOrderItems(db: RetailDb, args: Record<string, unknown>, opts: RetailToolOptions) {
  const order = getOrder(db, args.order_id);
  if (order.status !== 'pending') throw new ToolError('Non-pending order cannot be modified');
  let itemIds: unknown = args.item_ids;
  let newItemIds: unknown = args.new_item_ids;
  if (!opts.tau2Compat) {
    itemIds = requireItemList(itemIds, 'item_ids', false);
    newItemIds = requireItemList(newItemIds, 'new_item_ids', false);
  }
  checkItemQuantities(order, itemIds, (id) => `${idText(id)} not found`);
  if (pyLen(itemIds) !== pyLen(newItemIds)) throw new ToolError('The number of items to be exchanged should match');

  const olds = pyIter(itemIds);
  const news = pyIter(newItemIds);
  const pairs = Math.min(olds.length, news.length);
  const variants: DeepReadonly<Variant>[] = [];
  let diff = 0; // Python starts from the int 0; `abs(0)` later becomes the float 0.0 in the payment row anyway
  for (let k = 0; k < pairs; k++) {
    const oldId = olds[k];
    const newId = news[k];
    if (pyEquals(oldId, newId)) throw new ToolError('The new item id should be different from the old item id');
    const item = order.items.find((i) => i.item_id === oldId);
    if (item === undefined) throw new ToolError(`Item ${idText(oldId)} not found`);
    const variant = getVariant(db, item.product_id, newId);
    if (!variant.available) throw new ToolError(`New item ${idText(newId)} not found or available`);
    diff += variant.price - item.price;
    variants.push(variant);
  }
  // Fixed mode: charge the difference in cents, as the exchange tool does; τ² keeps the raw float sum.
  if (!opts.tau2Compat) diff = pyRound(diff, 2);

  const paymentMethodId = args.payment_method_id;
  const method = getPaymentMethod(db, order.user_id, paymentMethodId);
  if (method.source === 'gift_card' && method.balance < diff) {
    throw new ToolError('Insufficient gift card balance to pay for the new item');
  }

  const w = orderForWrite(db, order.order_id);
  w.payment_history.push({
    transaction_type: diff > 0 ? 'payment' : 'refund',
    amount: Math.abs(diff),
    payment_method_id: paymentMethodId as string,
  });
  if (method.source === 'gift_card') adjustGiftCard(db, order.user_id, paymentMethodId as string, (b) => pyRound(b - diff, 2));

  for (let k = 0; k < pairs; k++) {
    const item = w.items.find((i) => i.item_id === olds[k]);
    if (item === undefined) throw new ToolError(`Item ${idText(olds[k])} not found`);
    // τ² copies price and options from the *last* validated variant (a bug that makes the result depend on the
    // order of the pairs); the fixed mode uses each item's own new variant.
    const source = opts.tau2Compat ? variants[pairs - 1] : variants[k];
    item.item_id = news[k] as string;
    item.price = source.price;
    item.options = new Map(source.options);
  }
  w.status = 'pending (item modified)';
  return w;
}

function modifyPendingOrderPayment(db: RetailDb, args: Record<string, unknown>, opts: RetailToolOptions) {
  const order = getOrder(db, args.order_id);
  if (!isModifiablePending(order, opts)) throw new ToolError('Non-pending order cannot be modified');
  const newId = args.payment_method_id;
  const method = getPaymentMethod(db, order.user_id, newId);
  const history = order.payment_history;
  if (history.length !== 1 || history[0].transaction_type !== 'payment') {
    throw new ToolError('There should be exactly one payment for a pending order');
  }
  const oldId = history[0].payment_method_id;
  if (oldId === newId) throw new ToolError('The new payment method should be different from the current one');
  const amount = history[0].amount;
  if (method.source === 'gift_card' && method.balance < amount) {
    throw new ToolError('Insufficient gift card balance to pay for the order');
  }
  const w = orderForWrite(db, order.order_id);
  w.payment_history.push(
    { transaction_type: 'payment', amount, payment_method_id: newId as string },
    { transaction_type: 'refund', amount, payment_method_id: oldId },
  );
  if (method.source === 'gift_card') adjustGiftCard(db, order.user_id, newId as string, (b) => pyRound(b - amount, 2));
  const oldMethod = getPaymentMethod(db, order.user_id, oldId);
  if (oldMethod.source === 'gift_card') adjustGiftCard(db, order.user_id, oldId, (b) => pyRound(b + amount, 2));
  return w;
}

function modifyUserAddress(db: RetailDb, args: Record<string, unknown>) {
  getUser(db, args.user_id);
  const address = buildAddress(args);
  const w = userForWrite(db, args.user_id as string); // found as a dict key, so a str
  w.address = address;
  return w;
}

export function createModifyPendingOrderAddressTool(opts: RetailToolOptions): Tool<RetailDb> {
  return defineTool({
    name: 'modify_pending_order_address',
    kind: 'write',
    summary: 'Change the shipping address of a pending order.',
    details: CONFIRMATION_RULE + ' Returns the order after the change.',
    params: [ORDER_ID_PARAM, ...addressParams()],
    run: (db, args) => modifyPendingOrderAddress(db, args, opts),
  });
}

export function createModifyPendingOrderItemsTool(opts: RetailToolOptions): Tool<RetailDb> {
  return defineTool({
    name: 'modify_pending_order_items',
    kind: 'write',
    summary: 'Change items of a pending order into other items (variants) of the same products.',
    details:
      'This can be done only once per order, so collect every item the user wants to change before calling. ' +
      CONFIRMATION_RULE +
      ' Returns the order after the change.',
    params: [
      ORDER_ID_PARAM,
      {
        name: 'item_ids',
        type: 'string[]',
        description: "Ids of the items to change, e.g. ['1008292230']. The same id may appear several times.",
      },
      {
        name: 'new_item_ids',
        type: 'string[]',
        description:
          "Ids of the new items, e.g. ['1008292230'], duplicates allowed. The entry at each position replaces the " +
          'item at the same position of item_ids and must be a variant of the same product.',
      },
      PRICE_DIFFERENCE_PAYMENT_PARAM,
    ],
    run: (db, args) => modifyPendingOrderItems(db, args, opts),
  });
}

export function createModifyPendingOrderPaymentTool(opts: RetailToolOptions): Tool<RetailDb> {
  return defineTool({
    name: 'modify_pending_order_payment',
    kind: 'write',
    summary: 'Pay for a pending order with a different payment method.',
    details: CONFIRMATION_RULE + ' Returns the order after the change.',
    params: [
      ORDER_ID_PARAM,
      {
        name: 'payment_method_id',
        type: 'string',
        description:
          "The new payment method, e.g. 'gift_card_0000000' or 'credit_card_0000000'. The user's and the order's " +
          'details list the available ids.',
      },
    ],
    run: (db, args) => modifyPendingOrderPayment(db, args, opts),
  });
}

export function createModifyUserAddressTool(): Tool<RetailDb> {
  return defineTool({
    name: 'modify_user_address',
    kind: 'write',
    summary: "Change a user's default address.",
    details: CONFIRMATION_RULE + ' Returns the user after the change.',
    params: [USER_ID_PARAM, ...addressParams()],
    run: (db, args) => modifyUserAddress(db, args),
  });
}
