/**
 * The retail DB with copy-on-write episodes. A `RetailBase` holds the loaded records and is never mutated; each
 * `RetailDb` (one per episode, `RetailBase.fresh()`) shares those records and clones a record into its own overlay
 * the first time a tool asks for it with a `get*ForWrite` accessor. A fresh DB therefore costs a few empty Maps.
 *
 * Iteration (`products()`, `users()`, `orders()`) follows the DB's insertion order, with overlay copies substituted.
 */
import {
  copyOrder,
  copyProduct,
  copyUser,
  type DeepReadonly,
  type Order,
  type Product,
  type RetailTables,
  type TableName,
  type User,
} from './schema.ts';
import { RetailHashIndex } from './hash.ts';

export type ReadonlyProduct = DeepReadonly<Product>;
export type ReadonlyUser = DeepReadonly<User>;
export type ReadonlyOrder = DeepReadonly<Order>;

/** The immutable loaded DB that episodes start from. */
export class RetailBase {
  readonly tables: DeepReadonly<RetailTables>;
  private hashIndexCache: RetailHashIndex | undefined;

  constructor(tables: RetailTables) {
    this.tables = tables;
  }

  /** A new episode DB sharing this base (copy-on-write). */
  fresh(): RetailDb {
    return new RetailDb(this);
  }

  /** Sorted-key serialisation of every record and hash checkpoints, built on first use. */
  get hashIndex(): RetailHashIndex {
    this.hashIndexCache ??= new RetailHashIndex(this.tables);
    return this.hashIndexCache;
  }
}

/** One episode's DB. Read accessors return read-only views; write accessors return the episode's own copy. */
export class RetailDb {
  readonly base: RetailBase;
  private readonly productsW = new Map<string, Product>();
  private readonly usersW = new Map<string, User>();
  private readonly ordersW = new Map<string, Order>();
  /** Sorted-key text of overlay records, dropped whenever a record is handed out for writing. */
  private readonly textCache = new Map<string, string>();

  constructor(base: RetailBase) {
    this.base = base;
  }

  getProduct(id: string): ReadonlyProduct | undefined {
    return this.productsW.get(id) ?? this.base.tables.products.get(id);
  }

  getUser(id: string): ReadonlyUser | undefined {
    return this.usersW.get(id) ?? this.base.tables.users.get(id);
  }

  getOrder(id: string): ReadonlyOrder | undefined {
    return this.ordersW.get(id) ?? this.base.tables.orders.get(id);
  }

  getProductForWrite(id: string): Product | undefined {
    return this.forWrite('products', id, this.productsW, this.base.tables.products, copyProduct);
  }

  getUserForWrite(id: string): User | undefined {
    return this.forWrite('users', id, this.usersW, this.base.tables.users, copyUser);
  }

  getOrderForWrite(id: string): Order | undefined {
    return this.forWrite('orders', id, this.ordersW, this.base.tables.orders, copyOrder);
  }

  *products(): IterableIterator<[string, ReadonlyProduct]> {
    yield* this.iterate(this.base.tables.products, this.productsW);
  }

  *users(): IterableIterator<[string, ReadonlyUser]> {
    yield* this.iterate(this.base.tables.users, this.usersW);
  }

  *orders(): IterableIterator<[string, ReadonlyOrder]> {
    yield* this.iterate(this.base.tables.orders, this.ordersW);
  }

  /** The records this episode has copied for writing (they may or may not differ from the base). */
  overlay(table: TableName): ReadonlyMap<string, ReadonlyProduct | ReadonlyUser | ReadonlyOrder> {
    return table === 'products' ? this.productsW : table === 'users' ? this.usersW : this.ordersW;
  }

  /** Whether a user was copied for writing (fast path for scans that cache base-record data). */
  hasUserOverlay(id: string): boolean {
    return this.usersW.has(id);
  }

  get userOverlayCount(): number {
    return this.usersW.size;
  }

  /** Cached sorted-key text of an overlay record (for hashing); `compute` runs when the cache is stale. */
  overlayText(table: TableName, id: string, compute: () => string): string {
    const key = table + '\u0000' + id;
    let text = this.textCache.get(key);
    if (text === undefined) {
      text = compute();
      this.textCache.set(key, text);
    }
    return text;
  }

  /** The whole DB as plain tables (overlay substituted), sharing records with this DB: treat it as read-only. */
  snapshot(): DeepReadonly<RetailTables> {
    return { products: new Map(this.products()), users: new Map(this.users()), orders: new Map(this.orders()) };
  }

  private forWrite<T>(
    table: TableName,
    id: string,
    overlay: Map<string, T>,
    base: ReadonlyMap<string, DeepReadonly<T>>,
    copy: (r: DeepReadonly<T>) => T,
  ): T | undefined {
    let rec = overlay.get(id);
    if (rec === undefined) {
      const original = base.get(id);
      if (original === undefined) return undefined;
      rec = copy(original);
      overlay.set(id, rec);
    }
    this.textCache.delete(table + '\u0000' + id);
    return rec;
  }

  private *iterate<T>(base: ReadonlyMap<string, T>, overlay: ReadonlyMap<string, T>): IterableIterator<[string, T]> {
    if (overlay.size === 0) {
      yield* base;
      return;
    }
    for (const [id, rec] of base) yield [id, overlay.get(id) ?? rec];
  }
}
