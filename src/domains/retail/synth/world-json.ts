/**
 * Serialises a retail DB as a τ²-style `db.json`: Python `json.dumps` text (every number a float), orders without the
 * optional fields that are still null (as in τ²'s raw file; the loader materialises them again).
 */
import type { DeepReadonly, Order, RetailTables } from '../schema.ts';
import { ORDER_FIELDS } from '../schema.ts';
import { pyJsonDumps } from '../../../tooluse/python/pyjson.ts';

const OPTIONAL_ORDER_FIELDS = new Set<string>(ORDER_FIELDS.slice(ORDER_FIELDS.indexOf('cancel_reason')));

function rawOrder(o: DeepReadonly<Order>): Map<string, unknown> {
  const out = new Map<string, unknown>();
  for (const field of ORDER_FIELDS) {
    const value = o[field];
    if (value === null && OPTIONAL_ORDER_FIELDS.has(field)) continue;
    out.set(field, value);
  }
  return out;
}

export function worldToJson(tables: DeepReadonly<RetailTables>): string {
  const orders = new Map<string, unknown>();
  for (const [id, o] of tables.orders) orders.set(id, rawOrder(o));
  return pyJsonDumps(new Map<string, unknown>([['products', tables.products], ['users', tables.users], ['orders', orders]]));
}
