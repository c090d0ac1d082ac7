/**
 * Loads the τ²-bench retail data folder (`db.json`, `tasks.json`, `policy.md`, `split_tasks.json`) and validates the
 * DB strictly (unknown keys, wrong types and missing fields are errors naming the file and the JSON path).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { z } from 'zod';
import { parseOrderedJson } from '../../tooluse/python/ordered-json.ts';
import {
  CANCEL_REASONS,
  ORDER_STATUSES,
  copyOrder,
  copyProduct,
  copyUser,
  type DeepReadonly,
  type Order,
  type Product,
  type RetailTables,
  type User,
} from './schema.ts';

/** Everything read from a retail data folder. `tasks` and `splits` are raw parsed JSON (parsed elsewhere). */
export interface RetailData {
  dir: string;
  db: RetailTables;
  tasks: unknown;
  policy: string;
  splits: unknown;
}

export interface LoadRetailOptions {
  /** Task file to read instead of `<dir>/tasks.json` (e.g. the `v0.x/tasks.json` copy). */
  tasksPath?: string;
}

/** A data file that is missing, unreadable, not JSON or not shaped as expected. */
export class RetailDataError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'RetailDataError';
  }
}

// ---- zod schemas: objects arrive as Maps (ordered parse); models are converted to plain objects, dicts stay Maps.

const model = <T extends z.ZodRawShape>(shape: T) =>
  z.preprocess((v) => (v instanceof Map ? Object.fromEntries(v) : v), z.strictObject(shape));
const dict = <T extends z.ZodType>(value: T) => z.map(z.string(), value);

const address = model({
  address1: z.string(),
  address2: z.string(),
  city: z.string(),
  country: z.string(),
  state: z.string(),
  zip: z.string(),
});
const variant = model({ item_id: z.string(), options: dict(z.string()), available: z.boolean(), price: z.number() });
const product = model({ name: z.string(), product_id: z.string(), variants: dict(variant) });
const paymentMethod = z.preprocess(
  (v) => (v instanceof Map ? Object.fromEntries(v) : v),
  z.discriminatedUnion('source', [
    z.strictObject({ source: z.literal('credit_card'), id: z.string(), brand: z.string(), last_four: z.string() }),
    z.strictObject({ source: z.literal('paypal'), id: z.string() }),
    z.strictObject({ source: z.literal('gift_card'), id: z.string(), balance: z.number() }),
  ]),
);
const user = model({
  user_id: z.string(),
  name: model({ first_name: z.string(), last_name: z.string() }),
  address,
  email: z.string(),
  payment_methods: dict(paymentMethod),
  orders: z.array(z.string()),
});
const order = model({
  order_id: z.string(),
  user_id: z.string(),
  address,
  items: z.array(model({ name: z.string(), product_id: z.string(), item_id: z.string(), price: z.number(), options: dict(z.string()) })),
  status: z.enum(ORDER_STATUSES),
  fulfillments: z.array(model({ tracking_id: z.array(z.string()), item_ids: z.array(z.string()) })),
  payment_history: z.array(model({ transaction_type: z.enum(['payment', 'refund']), amount: z.number(), payment_method_id: z.string() })),
  cancel_reason: z.enum(CANCEL_REASONS).nullable().default(null),
  exchange_items: z.array(z.string()).nullable().default(null),
  exchange_new_items: z.array(z.string()).nullable().default(null),
  exchange_payment_method_id: z.string().nullable().default(null),
  exchange_price_difference: z.number().nullable().default(null),
  return_items: z.array(z.string()).nullable().default(null),
  return_payment_method_id: z.string().nullable().default(null),
});
const retailDb = model({ products: dict(product), users: dict(user), orders: dict(order) });

/** `$.orders["#W0001"].items[0].price` */
function formatPath(path: readonly PropertyKey[]): string {
  let out = '$';
  for (const p of path) {
    if (typeof p === 'number') out += `[${p}]`;
    else if (typeof p === 'string' && /^[A-Za-z_][A-Za-z0-9_]*$/.test(p)) out += `.${p}`;
    else out += `[${JSON.stringify(String(p))}]`;
  }
  return out;
}

function readText(path: string, what: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why = code === 'ENOENT' ? 'file not found' : code === 'EISDIR' ? 'is a directory' : String((err as Error).message);
    throw new RetailDataError(`Cannot read ${what} ${path}: ${why}`);
  }
}

function parseJsonFile(path: string, text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new RetailDataError(`${path} is not valid JSON: ${(err as Error).message}`);
  }
}

/** Parses and validates the text of a retail `db.json`. `label` names the file in error messages. */
export function parseRetailDb(text: string, label = 'db.json'): RetailTables {
  parseJsonFile(label, text); // syntax check with the engine's precise error message
  const parsed = retailDb.safeParse(parseOrderedJson(text));
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const more = parsed.error.issues.length > 1 ? ` (and ${parsed.error.issues.length - 1} more problem(s))` : '';
    throw new RetailDataError(`${label}: invalid retail DB at ${formatPath(issue.path)}: ${issue.message}${more}`);
  }
  // Rebuild every record through the copy helpers: model field order, materialised nulls, no shared arrays.
  const db = parsed.data as unknown as DeepReadonly<RetailTables>;
  const products = new Map<string, Product>();
  for (const [id, p] of db.products) products.set(id, copyProduct(p));
  const users = new Map<string, User>();
  for (const [id, u] of db.users) users.set(id, copyUser(u));
  const orders = new Map<string, Order>();
  for (const [id, o] of db.orders) orders.set(id, copyOrder(o));
  return { products, users, orders };
}

/** Reads and validates a retail `db.json` file. */
export function loadRetailDb(path: string): RetailTables {
  return parseRetailDb(readText(path, 'retail DB'), path);
}

/** Reads a retail data folder: `db.json`, `tasks.json`, `policy.md` and `split_tasks.json`. */
export function loadRetailData(dir: string, options: LoadRetailOptions = {}): RetailData {
  const dbPath = join(dir, 'db.json');
  const tasksPath = options.tasksPath ?? join(dir, 'tasks.json');
  const policyPath = join(dir, 'policy.md');
  const splitsPath = join(dir, 'split_tasks.json');
  const db = loadRetailDb(dbPath);
  const tasks = parseJsonFile(tasksPath, readText(tasksPath, 'task file'));
  if (!Array.isArray(tasks)) throw new RetailDataError(`${tasksPath}: expected a JSON array of tasks`);
  const policy = readText(policyPath, 'policy');
  const splits = parseJsonFile(splitsPath, readText(splitsPath, 'split file'));
  if (splits === null || typeof splits !== 'object' || Array.isArray(splits)) {
    throw new RetailDataError(`${splitsPath}: expected a JSON object mapping split names to task id lists`);
  }
  return { dir, db, tasks, policy, splits };
}
