/** The parts of tool outputs (JSON) the expert reads. */

export interface OrderItemJson {
  name: string;
  product_id: string;
  item_id: string;
  price: number;
  options: Record<string, string>;
}

export interface OrderJson {
  order_id: string;
  user_id: string;
  items: OrderItemJson[];
  status: string;
  fulfillments: { tracking_id: string[]; item_ids: string[] }[];
  payment_history: { transaction_type: string; amount: number; payment_method_id: string }[];
}

export interface PaymentMethodJson {
  source: string;
  id: string;
  brand?: string;
  last_four?: string;
  balance?: number;
}

export interface UserJson {
  user_id: string;
  orders: string[];
  payment_methods: Record<string, PaymentMethodJson>;
}

export interface ProductJson {
  name: string;
  product_id: string;
  variants: Record<string, { item_id: string; options: Record<string, string>; available: boolean; price: number }>;
}

function parseJsonObject(text: string): Record<string, unknown> | null {
  try {
    const v: unknown = JSON.parse(text);
    return typeof v === 'object' && v !== null && !Array.isArray(v) ? (v as Record<string, unknown>) : null;
  } catch {
    return null;
  }
}

const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

// Shape checks on the fields the expert reads, so an odd tool result is ignored instead of crashing the agent.

export function parseOrder(text: string): OrderJson | null {
  const o = parseJsonObject(text);
  if (!o || typeof o.order_id !== 'string' || typeof o.user_id !== 'string' || typeof o.status !== 'string') return null;
  if (!Array.isArray(o.items) || !o.items.every((i) => isRecord(i) && typeof i.name === 'string' && typeof i.item_id === 'string' && typeof i.product_id === 'string' && typeof i.price === 'number' && isRecord(i.options))) return null;
  if (!Array.isArray(o.fulfillments) || !o.fulfillments.every((f) => isRecord(f) && Array.isArray(f.tracking_id))) return null;
  if (!Array.isArray(o.payment_history) || !o.payment_history.every((p) => isRecord(p) && typeof p.payment_method_id === 'string')) return null;
  return o as unknown as OrderJson;
}

export function parseUser(text: string): UserJson | null {
  const u = parseJsonObject(text);
  if (!u || typeof u.user_id !== 'string' || !Array.isArray(u.orders) || !u.orders.every((x) => typeof x === 'string') || !isRecord(u.payment_methods)) return null;
  if (!Object.values(u.payment_methods).every((m) => isRecord(m) && typeof m.source === 'string' && typeof m.id === 'string')) return null;
  return u as unknown as UserJson;
}

export function parseProduct(text: string): ProductJson | null {
  const p = parseJsonObject(text);
  if (!p || typeof p.product_id !== 'string' || !isRecord(p.variants)) return null;
  if (!Object.values(p.variants).every((v) => isRecord(v) && typeof v.item_id === 'string' && isRecord(v.options) && typeof v.available === 'boolean')) return null;
  return p as unknown as ProductJson;
}
