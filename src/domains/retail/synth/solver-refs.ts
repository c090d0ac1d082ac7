/** How the solver lets the user point at things: orders (by id or by contents), payment methods, item changes. */
import type { ReadonlyOrder, ReadonlyUser, RetailDb } from '../db.ts';
import type { DeepReadonly, Variant } from '../schema.ts';
import type { SynthRng } from './rng.ts';
import type { ItemChange, OrderRef, PaymentRef } from './scenario.ts';

export function userOrders(db: RetailDb, user: ReadonlyUser): ReadonlyOrder[] {
  return user.orders.map((id) => db.getOrder(id)).filter((o): o is ReadonlyOrder => o !== undefined);
}

const productNamesOf = (o: ReadonlyOrder): Set<string> => new Set(o.items.map((i) => i.name));

/** An order reference; by contents when `byDescription` and some 1–2 product names single the order out. */
export function makeOrderRef(db: RetailDb, user: ReadonlyUser, order: ReadonlyOrder, byDescription: boolean, rng: SynthRng): OrderRef {
  const byId: OrderRef = { orderId: order.order_id, byId: true, productNames: [] };
  if (!byDescription) return byId;
  const others = userOrders(db, user).filter((o) => o.order_id !== order.order_id).map(productNamesOf);
  const names = rng.shuffle([...productNamesOf(order)]);
  const candidates: string[][] = [...names.map((n) => [n])];
  for (let i = 0; i < names.length; i++) for (let j = i + 1; j < names.length; j++) candidates.push([names[i]!, names[j]!]);
  for (const set of candidates) {
    if (!others.some((o) => set.every((n) => o.has(n)))) return { orderId: order.order_id, byId: false, productNames: set };
  }
  return byId;
}

/** A way for the user to name this payment method unambiguously, or null if there is none. */
export function makePaymentRef(user: ReadonlyUser, methodId: string, original: string | null, rng: SynthRng): PaymentRef | null {
  const method = user.payment_methods.get(methodId);
  if (!method) return null;
  if (original === methodId && rng.chance(0.4)) return { paymentMethodId: methodId, kind: 'original' };
  const same = [...user.payment_methods.values()].filter((m) => m.source === method.source);
  if (method.source === 'credit_card') {
    const clash = same.filter((m) => m.source === 'credit_card' && m.last_four === method.last_four).length > 1;
    return clash ? null : { paymentMethodId: methodId, kind: 'credit_card', brand: method.brand, lastFour: method.last_four };
  }
  if (same.length > 1) return null;
  return { paymentMethodId: methodId, kind: method.source };
}

/** Item changes for `count` random items of the order that have another available variant. */
export function makeItemChanges(db: RetailDb, order: ReadonlyOrder, count: number, deltaChance: number, rng: SynthRng): ItemChange[] | null {
  const changeable = order.items.filter((item) => {
    const product = db.getProduct(item.product_id);
    return product !== undefined && [...product.variants.values()].some((v) => v.available && v.item_id !== item.item_id);
  });
  if (changeable.length === 0) return null;
  const chosen = rng.sample(changeable, Math.min(count, changeable.length));
  // Keep the order's item order, which is also the order of the tool call's pairs.
  chosen.sort((a, b) => order.items.indexOf(a) - order.items.indexOf(b));
  return chosen.map((item) => {
    const product = db.getProduct(item.product_id)!;
    const target: DeepReadonly<Variant> = rng.pick([...product.variants.values()].filter((v) => v.available && v.item_id !== item.item_id));
    const full = Object.fromEntries(target.options);
    const delta = Object.fromEntries([...target.options].filter(([k, v]) => item.options.get(k) !== v));
    return { itemId: item.item_id, newItemId: target.item_id, productName: item.name, statedOptions: rng.chance(deltaChance) ? delta : full };
  });
}
