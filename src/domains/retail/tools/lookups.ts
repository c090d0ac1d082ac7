/**
 * The shared lookups and checks of the retail tools, with τ²'s exact messages and Python's behaviour on raw
 * (uncoerced) argument values.
 */
import { ToolError } from '../../../tooluse/types.ts';
import type { RetailDb, ReadonlyOrder, ReadonlyProduct, ReadonlyUser } from '../db.ts';
import { ADDRESS_FIELDS, type Address, type DeepReadonly, type PaymentMethod, type Variant } from '../schema.ts';
import { assertHashable, dictGet, pyCount, pyIter, pyRepr, pyStr, pyTypeName } from '../../../tooluse/python/pyvalue.ts';

/** Options shared by every retail tool. */
export interface RetailToolOptions {
  /**
   * Reproduce τ²-bench's quirks exactly (default). With `false` the tools fix them; see `createRetailTools`.
   */
  tau2Compat: boolean;
}

/** A non-str key is never in a str-keyed dict; an unhashable one raises Python's TypeError. */
function notAKey(key: unknown): undefined {
  assertHashable(key);
  return undefined;
}

export function getOrder(db: RetailDb, orderId: unknown): ReadonlyOrder {
  const order = typeof orderId === 'string' ? db.getOrder(orderId) : notAKey(orderId);
  if (order === undefined) throw new ToolError('Order not found');
  return order;
}

export function getUser(db: RetailDb, userId: unknown): ReadonlyUser {
  const user = typeof userId === 'string' ? db.getUser(userId) : notAKey(userId);
  if (user === undefined) throw new ToolError('User not found');
  return user;
}

export function getProduct(db: RetailDb, productId: unknown): ReadonlyProduct {
  const product = typeof productId === 'string' ? db.getProduct(productId) : notAKey(productId);
  if (product === undefined) throw new ToolError('Product not found');
  return product;
}

/** `_get_variant`: the new item must be a variant of the given product. */
export function getVariant(db: RetailDb, productId: unknown, itemId: unknown): DeepReadonly<Variant> {
  const product = getProduct(db, productId);
  const variant = dictGet(product.variants, itemId);
  if (variant === undefined) throw new ToolError('Variant not found');
  return variant;
}

/** `_get_item`: the first product (in DB order) that has the item id among its variants. */
export function getItem(db: RetailDb, itemId: unknown): DeepReadonly<Variant> {
  for (const [, product] of db.products()) {
    const variant = dictGet(product.variants, itemId);
    if (variant !== undefined) return variant;
  }
  throw new ToolError('Item not found');
}

/** `_get_payment_method`: the method must belong to the given user. */
export function getPaymentMethod(db: RetailDb, userId: unknown, paymentMethodId: unknown): DeepReadonly<PaymentMethod> {
  const user = getUser(db, userId);
  const method = dictGet(user.payment_methods, paymentMethodId);
  if (method === undefined) throw new ToolError('Payment method not found');
  return method;
}

/** The writable copy of a record the tool has already looked up (it exists, so this cannot fail). */
export function orderForWrite(db: RetailDb, orderId: string) {
  const order = db.getOrderForWrite(orderId);
  if (order === undefined) throw new ToolError('Order not found');
  return order;
}

export function userForWrite(db: RetailDb, userId: string) {
  const user = db.getUserForWrite(userId);
  if (user === undefined) throw new ToolError('User not found');
  return user;
}

/** Applies `balance = round(balance + delta, 2)` to a user's gift card (no-op for other methods). */
export function adjustGiftCard(db: RetailDb, userId: string, methodId: string, delta: (balance: number) => number): void {
  const method = userForWrite(db, userId).payment_methods.get(methodId);
  if (method?.source === 'gift_card') method.balance = delta(method.balance);
}

/**
 * The "requested quantity ≤ quantity in the order" check, iterating the raw argument as Python does
 * (`for item_id in item_ids: if item_ids.count(item_id) > all_item_ids.count(item_id)`). `message` builds the error
 * for the first offending id.
 */
export function checkItemQuantities(order: ReadonlyOrder, itemIds: unknown, message: (id: unknown) => string): void {
  const inOrder = order.items.map((i) => i.item_id);
  for (const id of pyIter(itemIds)) {
    const wanted = pyCount(itemIds, id);
    const have = typeof id === 'string' ? inOrder.filter((x) => x === id).length : 0;
    if (wanted > have) throw new ToolError(message(id));
  }
}

/** The item list arguments as arrays of strings (for `tau2Compat: false`, which does not iterate strings or dicts). */
export function requireItemList(value: unknown, name: string, allowEmpty: boolean): string[] {
  if (!Array.isArray(value) || !value.every((x) => typeof x === 'string')) {
    throw new ToolError(`${name} must be a list of item id strings, got ${pyTypeName(value)} ${pyRepr(value)}`);
  }
  if (!allowEmpty && value.length === 0) throw new ToolError(`${name} must name at least one item`);
  return value as string[];
}

/** Python `f"...{x}..."` of an id from a raw argument. */
export const idText = (id: unknown): string => pyStr(id);

// ---- the UserAddress pydantic model -------------------------------------------------------------------------------

/** pydantic's `input_value` rendering: the repr, cut to its first 25 and last 24 characters when longer than 50. */
function pydanticInputValue(v: unknown): string {
  const r = pyRepr(v);
  return r.length > 50 ? `${r.slice(0, 25)}...${r.slice(-24)}` : r;
}

/** Builds a `UserAddress` as pydantic would: every field must be a str, errors listed in model field order. */
export function buildAddress(args: Record<string, unknown>): Address {
  const errors: string[] = [];
  for (const field of ADDRESS_FIELDS) {
    const v = args[field];
    if (typeof v !== 'string') {
      errors.push(
        `${field}\n  Input should be a valid string [type=string_type, input_value=${pydanticInputValue(v)}, input_type=${pyTypeName(v)}]\n` +
          '    For further information visit https://errors.pydantic.dev/2.13/v/string_type',
      );
    }
  }
  if (errors.length > 0) {
    const head = `${errors.length} validation error${errors.length === 1 ? '' : 's'} for UserAddress`;
    throw new ToolError([head, ...errors].join('\n'));
  }
  const a = args as Record<(typeof ADDRESS_FIELDS)[number], string>;
  return { address1: a.address1, address2: a.address2, city: a.city, country: a.country, state: a.state, zip: a.zip };
}
