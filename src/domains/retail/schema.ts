/**
 * The retail DB, shaped like τ²-bench's pydantic models. Every record object is built with its keys in **model field
 * order** (the order pydantic dumps them; see `*_FIELDS`), so a record serialises to tool output as-is. Dicts keyed by
 * id (and option dicts) are `Map`s: a plain object would move integer-like keys such as "1002370030" to the front and
 * lose the DB's insertion order, which the name/zip and item scans depend on.
 *
 * Numbers are Python floats everywhere. The one exception is `exchange_price_difference`, which τ² leaves as the
 * *int* 0 when an exchange is given empty lists; that value is the bigint `0n` here (serialised as `0`).
 */

export const ORDER_STATUSES = [
  'processed',
  'pending',
  'pending (item modified)',
  'delivered',
  'cancelled',
  'exchange requested',
  'return requested',
] as const;
export type OrderStatus = (typeof ORDER_STATUSES)[number];

export const CANCEL_REASONS = ['no longer needed', 'ordered by mistake'] as const;
export type CancelReason = (typeof CANCEL_REASONS)[number];

export type TransactionType = 'payment' | 'refund';

export interface Variant {
  item_id: string;
  options: Map<string, string>;
  available: boolean;
  price: number;
}

export interface Product {
  name: string;
  product_id: string;
  variants: Map<string, Variant>;
}

export interface UserName {
  first_name: string;
  last_name: string;
}

export interface Address {
  address1: string;
  address2: string;
  city: string;
  country: string;
  state: string;
  zip: string;
}

export interface CreditCard {
  source: 'credit_card';
  id: string;
  brand: string;
  last_four: string;
}

export interface Paypal {
  source: 'paypal';
  id: string;
}

export interface GiftCard {
  source: 'gift_card';
  id: string;
  balance: number;
}

export type PaymentMethod = CreditCard | Paypal | GiftCard;

export interface User {
  user_id: string;
  name: UserName;
  address: Address;
  email: string;
  payment_methods: Map<string, PaymentMethod>;
  orders: string[];
}

export interface Fulfillment {
  tracking_id: string[];
  item_ids: string[];
}

export interface OrderItem {
  name: string;
  product_id: string;
  item_id: string;
  price: number;
  options: Map<string, string>;
}

export interface OrderPayment {
  transaction_type: TransactionType;
  amount: number;
  payment_method_id: string;
}

export interface Order {
  order_id: string;
  user_id: string;
  address: Address;
  items: OrderItem[];
  status: OrderStatus;
  fulfillments: Fulfillment[];
  payment_history: OrderPayment[];
  cancel_reason: CancelReason | null;
  exchange_items: string[] | null;
  exchange_new_items: string[] | null;
  exchange_payment_method_id: string | null;
  exchange_price_difference: number | bigint | null;
  return_items: string[] | null;
  return_payment_method_id: string | null;
}

/** The three top-level tables, in db.json order. */
export interface RetailTables {
  products: Map<string, Product>;
  users: Map<string, User>;
  orders: Map<string, Order>;
}

export type TableName = keyof RetailTables;
export const TABLE_NAMES: readonly TableName[] = ['products', 'users', 'orders'];

/** Field order of each model, as pydantic dumps it. */
export const VARIANT_FIELDS = ['item_id', 'options', 'available', 'price'] as const;
export const PRODUCT_FIELDS = ['name', 'product_id', 'variants'] as const;
export const ADDRESS_FIELDS = ['address1', 'address2', 'city', 'country', 'state', 'zip'] as const;
export const USER_FIELDS = ['user_id', 'name', 'address', 'email', 'payment_methods', 'orders'] as const;
export const ORDER_ITEM_FIELDS = ['name', 'product_id', 'item_id', 'price', 'options'] as const;
export const ORDER_FIELDS = [
  'order_id',
  'user_id',
  'address',
  'items',
  'status',
  'fulfillments',
  'payment_history',
  'cancel_reason',
  'exchange_items',
  'exchange_new_items',
  'exchange_payment_method_id',
  'exchange_price_difference',
  'return_items',
  'return_payment_method_id',
] as const;

/** Read-only view of a record (what read accessors hand out, so base records cannot be mutated by mistake). */
export type DeepReadonly<T> = T extends Map<infer K, infer V>
  ? ReadonlyMap<K, DeepReadonly<V>>
  : T extends (infer E)[]
    ? readonly DeepReadonly<E>[]
    : T extends object
      ? { readonly [P in keyof T]: DeepReadonly<T[P]> }
      : T;

// Copying helpers: each keeps model field order and shares nothing mutable with its source.

export function copyAddress(a: DeepReadonly<Address>): Address {
  return { address1: a.address1, address2: a.address2, city: a.city, country: a.country, state: a.state, zip: a.zip };
}

export function copyPaymentMethod(p: DeepReadonly<PaymentMethod>): PaymentMethod {
  switch (p.source) {
    case 'credit_card':
      return { source: p.source, id: p.id, brand: p.brand, last_four: p.last_four };
    case 'paypal':
      return { source: p.source, id: p.id };
    case 'gift_card':
      return { source: p.source, id: p.id, balance: p.balance };
  }
}

export function copyUser(u: DeepReadonly<User>): User {
  const methods = new Map<string, PaymentMethod>();
  for (const [id, pm] of u.payment_methods) methods.set(id, copyPaymentMethod(pm));
  return {
    user_id: u.user_id,
    name: { first_name: u.name.first_name, last_name: u.name.last_name },
    address: copyAddress(u.address),
    email: u.email,
    payment_methods: methods,
    orders: [...u.orders],
  };
}

export function copyVariant(v: DeepReadonly<Variant>): Variant {
  return { item_id: v.item_id, options: new Map(v.options), available: v.available, price: v.price };
}

export function copyProduct(p: DeepReadonly<Product>): Product {
  const variants = new Map<string, Variant>();
  for (const [id, v] of p.variants) variants.set(id, copyVariant(v));
  return { name: p.name, product_id: p.product_id, variants };
}

export function copyOrder(o: DeepReadonly<Order>): Order {
  return {
    order_id: o.order_id,
    user_id: o.user_id,
    address: copyAddress(o.address),
    items: o.items.map((i) => ({ name: i.name, product_id: i.product_id, item_id: i.item_id, price: i.price, options: new Map(i.options) })),
    status: o.status,
    fulfillments: o.fulfillments.map((f) => ({ tracking_id: [...f.tracking_id], item_ids: [...f.item_ids] })),
    payment_history: o.payment_history.map((p) => ({ transaction_type: p.transaction_type, amount: p.amount, payment_method_id: p.payment_method_id })),
    cancel_reason: o.cancel_reason,
    exchange_items: o.exchange_items === null ? null : [...o.exchange_items],
    exchange_new_items: o.exchange_new_items === null ? null : [...o.exchange_new_items],
    exchange_payment_method_id: o.exchange_payment_method_id,
    exchange_price_difference: o.exchange_price_difference,
    return_items: o.return_items === null ? null : [...o.return_items],
    return_payment_method_id: o.return_payment_method_id,
  };
}
