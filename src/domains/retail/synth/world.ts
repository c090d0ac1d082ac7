/**
 * Seeded synthetic retail worlds with the τ² schema and regularities (tau2.md §2): products with 5–20 variants,
 * users with 1–4 payment methods, orders in every status whose items match catalog variants exactly, one fulfillment
 * with one tracking id for every non-pending order, payment history by status, every number a float.
 */
import { pyRound } from '../../../tooluse/python/pyjson.ts';
import type { Address, Order, OrderItem, OrderStatus, PaymentMethod, Product, RetailTables, User, Variant } from '../schema.ts';
import { CARD_BRANDS, FIRST_NAMES, LAST_NAMES, PLACES, PRODUCT_TEMPLATES, STREET_NAMES, type ProductTemplate } from './catalog-data.ts';
import { IdFactory } from './ids.ts';
import { SynthRng } from './rng.ts';

export interface WorldSizes {
  products: number;
  users: number;
  orders: number;
}

/** Comparable to the τ² retail DB: 50 products, 500 users, 1,000 orders. */
export const DEFAULT_WORLD_SIZES: WorldSizes = { products: 50, users: 500, orders: 1000 };

/** Share of each status among generated orders (τ²'s raw DB: pending 42%, delivered 37%, processed 10%, cancelled 10%). */
export const ORDER_STATUS_WEIGHTS: Readonly<Record<OrderStatus, number>> = {
  pending: 0.41,
  delivered: 0.36,
  processed: 0.1,
  cancelled: 0.1,
  'pending (item modified)': 0.01,
  'exchange requested': 0.01,
  'return requested': 0.01,
};

export const MAX_ORDERS_PER_USER = 9;

function checkSizes(sizes: WorldSizes): void {
  for (const key of ['products', 'users', 'orders'] as const) {
    const v = sizes[key];
    if (!Number.isInteger(v) || v < 0) throw new Error(`World size '${key}' must be a non-negative integer, got ${v}`);
  }
  if (sizes.products < 1 || sizes.products > PRODUCT_TEMPLATES.length) {
    throw new Error(`World size 'products' must be between 1 and ${PRODUCT_TEMPLATES.length}, got ${sizes.products}`);
  }
  if (sizes.users < 1) throw new Error("World size 'users' must be at least 1");
  if (sizes.orders > sizes.users * MAX_ORDERS_PER_USER) {
    throw new Error(`World size 'orders' (${sizes.orders}) exceeds ${MAX_ORDERS_PER_USER} orders per user for ${sizes.users} users`);
  }
}

const money = (lo: number, hi: number, rng: SynthRng): number => pyRound(lo + rng.float() * (hi - lo), 2);

function optionCombos(t: ProductTemplate): Map<string, string>[] {
  let combos: [string, string][][] = [[]];
  for (const [key, values] of Object.entries(t.options)) {
    combos = combos.flatMap((c) => values.map((v) => [...c, [key, v] as [string, string]]));
  }
  return combos.map((c) => new Map(c));
}

function makeProduct(t: ProductTemplate, ids: IdFactory, rng: SynthRng): Product {
  const combos = optionCombos(t);
  const count = Math.min(combos.length, rng.int(5, 20));
  const variants = new Map<string, Variant>();
  for (const options of rng.sample(combos, count)) {
    const item_id = ids.catalogId();
    variants.set(item_id, { item_id, options, available: rng.chance(0.65), price: money(t.price[0], t.price[1], rng) });
  }
  // Every product keeps at least two available variants, so modify/exchange targets exist.
  const list = [...variants.values()];
  for (let i = 0; list.filter((v) => v.available).length < 2 && i < list.length; i++) list[i]!.available = true;
  return { name: t.name, product_id: ids.catalogId(), variants };
}

export function makeAddress(rng: SynthRng, place = rng.pick(PLACES)): Address {
  return {
    address1: `${rng.int(100, 999)} ${rng.pick(STREET_NAMES)}`,
    address2: rng.chance(0.5) ? `Suite ${rng.int(100, 999)}` : '',
    city: place.city,
    country: 'USA',
    state: place.state,
    zip: place.zipPrefix + rng.digits(3),
  };
}

function makePaymentMethods(ids: IdFactory, rng: SynthRng): Map<string, PaymentMethod> {
  const methods = new Map<string, PaymentMethod>();
  const count = rng.weighted([0.55, 0.3, 0.1, 0.05]) + 1;
  const sources = rng.shuffle(['credit_card', 'gift_card', 'paypal', 'credit_card'] as const).slice(0, count);
  for (const source of sources) {
    const id = ids.paymentMethodId(source);
    if (source === 'credit_card') methods.set(id, { source, id, brand: rng.pick(CARD_BRANDS), last_four: rng.digits(4) });
    else if (source === 'gift_card') methods.set(id, { source, id, balance: rng.int(0, 100) });
    else methods.set(id, { source, id });
  }
  return methods;
}

function makeUsers(count: number, ids: IdFactory, rng: SynthRng): Map<string, User> {
  const users = new Map<string, User>();
  const nameZip = new Set<string>();
  const emails = new Set<string>();
  while (users.size < count) {
    const first = rng.pick(FIRST_NAMES);
    const last = rng.pick(LAST_NAMES);
    const address = makeAddress(rng);
    const key = `${first}|${last}|${address.zip}`.toLowerCase();
    if (nameZip.has(key)) continue;
    const user_id = ids.userId(first, last);
    const email = `${first}.${last}${user_id.slice(-4)}@example.com`.toLowerCase();
    if (emails.has(email)) continue;
    nameZip.add(key);
    emails.add(email);
    users.set(user_id, { user_id, name: { first_name: first, last_name: last }, address, email, payment_methods: makePaymentMethods(ids, rng), orders: [] });
  }
  return users;
}

function orderItem(product: Product, v: Variant): OrderItem {
  return { name: product.name, product_id: product.product_id, item_id: v.item_id, price: v.price, options: new Map(v.options) };
}

function otherVariant(product: Product, v: Variant, rng: SynthRng): Variant | undefined {
  const others = [...product.variants.values()].filter((o) => o.item_id !== v.item_id && o.available);
  return others.length ? rng.pick(others) : undefined;
}

function makeOrder(user: User, status: OrderStatus, products: readonly Product[], ids: IdFactory, rng: SynthRng): Order {
  const chosen = rng.sample(products, Math.min(products.length, rng.weighted([0.3, 0.3, 0.2, 0.12, 0.08]) + 1));
  const pairs = chosen.map((p) => [p, rng.pick([...p.variants.values()])] as const);
  const items = pairs.map(([p, v]) => orderItem(p, v));
  const total = pyRound(items.reduce((s, i) => s + i.price, 0), 2);
  const methods = [...user.payment_methods.keys()];
  const payer = rng.pick(methods);
  const order: Order = {
    order_id: ids.orderId(),
    user_id: user.user_id,
    address: rng.chance(0.9) ? { ...user.address } : makeAddress(rng),
    items,
    status,
    fulfillments: [],
    payment_history: [{ transaction_type: 'payment', amount: total, payment_method_id: payer }],
    cancel_reason: null,
    exchange_items: null,
    exchange_new_items: null,
    exchange_payment_method_id: null,
    exchange_price_difference: null,
    return_items: null,
    return_payment_method_id: null,
  };
  if (!status.startsWith('pending')) order.fulfillments.push({ tracking_id: [ids.trackingId()], item_ids: items.map((i) => i.item_id) });
  if (status === 'cancelled') order.payment_history.push({ transaction_type: 'refund', amount: total, payment_method_id: payer });
  if (status === 'pending (item modified)') {
    order.payment_history.push({ transaction_type: 'refund', amount: money(0, 30, rng), payment_method_id: payer });
  }
  if (status === 'exchange requested') {
    const [p, v] = rng.pick(pairs);
    const to = otherVariant(p, v, rng) ?? v;
    order.exchange_items = [v.item_id];
    order.exchange_new_items = [to.item_id];
    order.exchange_payment_method_id = payer;
    order.exchange_price_difference = pyRound(to.price - v.price, 2);
  }
  if (status === 'return requested') {
    order.return_items = [rng.pick(items).item_id];
    order.return_payment_method_id = payer;
  }
  return order;
}

/** Generates a world. The same seed and sizes always give the same tables (and the same serialisation). */
export function generateWorld(seed: number, sizes: WorldSizes = DEFAULT_WORLD_SIZES): RetailTables {
  checkSizes(sizes);
  const root = new SynthRng(seed);
  const ids = new IdFactory(root.fork('ids'));
  const catalogRng = root.fork('catalog');
  const productList = catalogRng.sample(PRODUCT_TEMPLATES, sizes.products).map((t) => makeProduct(t, ids, catalogRng));
  const products = new Map(productList.map((p) => [p.product_id, p]));
  const users = makeUsers(sizes.users, ids, root.fork('users'));

  const orderRng = root.fork('orders');
  const statuses = Object.keys(ORDER_STATUS_WEIGHTS) as OrderStatus[];
  const weights = statuses.map((s) => ORDER_STATUS_WEIGHTS[s]);
  const userList = [...users.values()];
  const orders = new Map<string, Order>();
  while (orders.size < sizes.orders) {
    const user = orderRng.pick(userList);
    if (user.orders.length >= MAX_ORDERS_PER_USER) continue;
    const order = makeOrder(user, statuses[orderRng.weighted(weights)]!, productList, ids, orderRng);
    orders.set(order.order_id, order);
    user.orders.push(order.order_id);
  }
  return { products, users, orders };
}
