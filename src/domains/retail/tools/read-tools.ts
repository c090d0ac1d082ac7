/** The read-only retail tools: user lookups, order/product/item/user details and the product type list. */
import { ToolError, type Tool } from '../../../tooluse/types.ts';
import type { RetailBase, RetailDb, ReadonlyUser } from '../db.ts';
import { pyJsonDumps } from '../../../tooluse/python/pyjson.ts';
import { pyLower } from '../../../tooluse/python/pyvalue.ts';
import { defineTool, type ParamSpec } from './define.ts';
import { getItem, getOrder, getProduct, getUser } from './lookups.ts';
import { ORDER_ID_PARAM } from './params.ts';

/** Lower-cased names and emails of the base users, so a scan does not lower-case 500 strings per call. */
interface UserScanIndex {
  ids: string[];
  users: ReadonlyUser[];
  firstLower: string[];
  lastLower: string[];
  emailLower: string[];
}

const scanIndexes = new WeakMap<RetailBase, UserScanIndex>();

function scanIndex(base: RetailBase): UserScanIndex {
  let index = scanIndexes.get(base);
  if (!index) {
    const ids: string[] = [];
    const users: ReadonlyUser[] = [];
    for (const [id, u] of base.tables.users) {
      ids.push(id);
      users.push(u);
    }
    index = {
      ids,
      users,
      firstLower: users.map((u) => u.name.first_name.toLowerCase()),
      lastLower: users.map((u) => u.name.last_name.toLowerCase()),
      emailLower: users.map((u) => u.email.toLowerCase()),
    };
    scanIndexes.set(base, index);
  }
  return index;
}

/**
 * Scans users in DB order with `match(i, user)`, where `user` is the episode's current record. Base-record lowercase
 * caches are valid unless the user was copied for writing (then the matcher gets the copy and `cached` is false).
 */
function scanUsers(db: RetailDb, match: (i: number, user: ReadonlyUser, cached: boolean) => boolean): string | undefined {
  const index = scanIndex(db.base);
  const anyOverlay = db.userOverlayCount > 0;
  for (let i = 0; i < index.ids.length; i++) {
    const id = index.ids[i];
    const overlaid = anyOverlay && db.hasUserOverlay(id);
    const user = overlaid ? db.getUser(id)! : index.users[i];
    if (match(i, user, !overlaid)) return id;
  }
  return undefined;
}

function findUserIdByNameZip(db: RetailDb, args: Record<string, unknown>): string {
  const { first_name: firstName, last_name: lastName, zip } = args;
  const index = scanIndex(db.base);
  if (index.ids.length > 0) {
    // Python evaluates `first_name.lower()` for the first user, but `last_name.lower()` only once a first name matched.
    const wantedFirst = pyLower(firstName);
    let wantedLast: string | undefined;
    const found = scanUsers(db, (i, user, cached) => {
      const first = cached ? index.firstLower[i] : user.name.first_name.toLowerCase();
      if (first !== wantedFirst) return false;
      wantedLast ??= pyLower(lastName);
      const last = cached ? index.lastLower[i] : user.name.last_name.toLowerCase();
      return last === wantedLast && user.address.zip === zip;
    });
    if (found !== undefined) return found;
  }
  throw new ToolError('User not found');
}

function findUserIdByEmail(db: RetailDb, args: Record<string, unknown>): string {
  const index = scanIndex(db.base);
  if (index.ids.length > 0) {
    const wanted = pyLower(args.email);
    const found = scanUsers(db, (i, user, cached) => (cached ? index.emailLower[i] : user.email.toLowerCase()) === wanted);
    if (found !== undefined) return found;
  }
  throw new ToolError('User not found');
}

const productTypesCache = new WeakMap<RetailBase, string>();

function listAllProductTypes(db: RetailDb): string {
  const render = (): string => {
    const byName = new Map<string, string>();
    for (const [, p] of db.products()) byName.set(p.name, p.product_id);
    return pyJsonDumps(byName, { sortKeys: true });
  };
  if (db.overlay('products').size > 0) return render();
  let text = productTypesCache.get(db.base);
  if (text === undefined) {
    text = render();
    productTypesCache.set(db.base, text);
  }
  return text;
}

/**
 * Rendered JSON of base records, which never change (episode writes go to copies). Records an episode copied for
 * writing are rendered afresh each time.
 */
const renderedBase = new WeakMap<object, string>();

function renderRead(db: RetailDb, table: 'orders' | 'users' | 'products', id: string, rec: object): string {
  if (db.overlay(table).has(id)) return pyJsonDumps(rec);
  let text = renderedBase.get(rec);
  if (text === undefined) {
    text = pyJsonDumps(rec);
    renderedBase.set(rec, text);
  }
  return text;
}

const PRODUCT_ID_PARAM: ParamSpec = {
  name: 'product_id',
  type: 'string',
  description: "The product id, e.g. '6086499569'. A product id is not the same thing as an item id.",
};
const ITEM_ID_PARAM: ParamSpec = {
  name: 'item_id',
  type: 'string',
  description: "The item id, e.g. '6086499569'. An item id is not the same thing as a product id.",
};
const USER_ID_PARAM: ParamSpec = { name: 'user_id', type: 'string', description: "The user id, e.g. 'sara_doe_496'." };

export const findUserIdByNameZipTool: Tool<RetailDb> = defineTool({
  name: 'find_user_id_by_name_zip',
  kind: 'read',
  summary: "Look up a user's id from their first name, last name and zip code.",
  details:
    'Look users up by email first; use this only when the email lookup finds nobody or the user cannot remember ' +
    'their email. Returns an error when no user matches.',
  params: [
    { name: 'first_name', type: 'string', description: "The user's first name, e.g. 'John'." },
    { name: 'last_name', type: 'string', description: "The user's last name, e.g. 'Doe'." },
    { name: 'zip', type: 'string', description: "The user's zip code, e.g. '12345'." },
  ],
  run: findUserIdByNameZip,
});

export const findUserIdByEmailTool: Tool<RetailDb> = defineTool({
  name: 'find_user_id_by_email',
  kind: 'read',
  summary: "Look up a user's id from their email address.",
  details: 'Returns an error when no user has that email.',
  params: [{ name: 'email', type: 'string', description: "The user's email address, e.g. 'someone@example.com'." }],
  run: findUserIdByEmail,
});

export const getOrderDetailsTool: Tool<RetailDb> = defineTool({
  name: 'get_order_details',
  kind: 'read',
  summary: 'Get the status and all details of an order.',
  params: [ORDER_ID_PARAM],
  run: (db, args) => renderRead(db, 'orders', args.order_id as string, getOrder(db, args.order_id)),
});

export const getProductDetailsTool: Tool<RetailDb> = defineTool({
  name: 'get_product_details',
  kind: 'read',
  summary: 'Get the details of a product, including every item (variant) of it with options, availability and price.',
  params: [PRODUCT_ID_PARAM],
  run: (db, args) => renderRead(db, 'products', args.product_id as string, getProduct(db, args.product_id)),
});

export const getItemDetailsTool: Tool<RetailDb> = defineTool({
  name: 'get_item_details',
  kind: 'read',
  summary: 'Get the details of one item: its options, whether it is available, and its price.',
  params: [ITEM_ID_PARAM],
  run: (db, args) => getItem(db, args.item_id),
});

export const getUserDetailsTool: Tool<RetailDb> = defineTool({
  name: 'get_user_details',
  kind: 'read',
  summary: "Get a user's profile: name, default address, email, payment methods and order ids.",
  params: [USER_ID_PARAM],
  run: (db, args) => renderRead(db, 'users', args.user_id as string, getUser(db, args.user_id)),
});

export const listAllProductTypesTool: Tool<RetailDb> = defineTool({
  name: 'list_all_product_types',
  kind: 'read',
  summary: 'List every product type the store sells, with its product id.',
  details:
    'The store has only 50 product types; each comes in several items with their own item ids and options. ' +
    'Returns a JSON object that maps product names (sorted alphabetically) to product ids.',
  params: [],
  run: (db) => listAllProductTypes(db),
});

export { USER_ID_PARAM };
