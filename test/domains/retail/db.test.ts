import { test } from 'node:test';
import assert from 'node:assert/strict';
import { hashRetailTables } from '../../../src/domains/retail/hash.ts';
import { INITIAL_HASH, call, callJson, retailData, retailDomain } from './fixture.ts';

const domain = retailDomain();

test('a fresh DB hashes to the initial hash and reads the base records', () => {
  const db = domain.freshDb();
  assert.equal(domain.hashDb(db), INITIAL_HASH);
  assert.equal(db.getOrder('#W5918442'), retailData().db.orders.get('#W5918442'));
  assert.equal(db.overlay('orders').size, 0);
});

test('copy-on-write: writes stay in their own episode', () => {
  const a = domain.freshDb();
  const b = domain.freshDb();
  callJson(domain, a, 'cancel_pending_order', { order_id: '#W6779827', reason: 'ordered by mistake' });
  // a changed; b and the base did not
  assert.equal(a.getOrder('#W6779827')!.status, 'cancelled');
  assert.equal(b.getOrder('#W6779827')!.status, 'pending');
  assert.equal(retailData().db.orders.get('#W6779827')!.status, 'pending');
  const balance = (db: typeof a) => (db.getUser('ethan_lopez_6291')!.payment_methods.get('gift_card_7219486') as { balance: number }).balance;
  assert.equal(balance(a), 4128.45);
  assert.equal(balance(b), 49);
  assert.equal(domain.hashDb(b), INITIAL_HASH);
  assert.notEqual(domain.hashDb(a), INITIAL_HASH);
  // a third episode started afterwards is clean as well
  assert.equal(domain.hashDb(domain.freshDb()), INITIAL_HASH);
});

test('the incremental hash equals hashing the whole DB, also after further writes', () => {
  const db = domain.freshDb();
  const full = () => hashRetailTables(db.snapshot());
  callJson(domain, db, 'modify_user_address', { user_id: 'sofia_rossi_8776', address1: '1 Main St', address2: '', city: 'Austin', state: 'TX', country: 'USA', zip: '78701' });
  assert.equal(domain.hashDb(db), full());
  callJson(domain, db, 'return_delivered_order_items', { order_id: '#W4817420', item_ids: ['6777246137'], payment_method_id: 'gift_card_8168843' });
  const h1 = domain.hashDb(db);
  assert.equal(h1, full());
  callJson(domain, db, 'cancel_pending_order', { order_id: '#W6779827', reason: 'no longer needed' });
  assert.notEqual(domain.hashDb(db), h1);
  assert.equal(domain.hashDb(db), full());
});

test('a record copied for writing but left unchanged does not change the hash', () => {
  const db = domain.freshDb();
  db.getOrderForWrite('#W5918442');
  db.getUserForWrite('sofia_rossi_8776');
  assert.equal(domain.hashDb(db), INITIAL_HASH);
  // a failed write leaves no trace either
  call(domain, db, 'modify_pending_order_payment', { order_id: '#W2443586', payment_method_id: 'gift_card_2742113' });
  assert.equal(domain.hashDb(db), INITIAL_HASH);
});

test('iteration keeps DB order with episode copies substituted', () => {
  const db = domain.freshDb();
  const before = [...db.users()].map(([id]) => id);
  const user = db.getUserForWrite(before[3])!;
  user.address.zip = '00001';
  const after = [...db.users()];
  assert.deepEqual(after.map(([id]) => id), before);
  assert.equal(after[3][1].address.zip, '00001');
  assert.equal(call(domain, db, 'find_user_id_by_name_zip', { first_name: user.name.first_name, last_name: user.name.last_name, zip: '00001' }).output, before[3]);
});

/** All orderings of a list. */
function permutations<T>(xs: T[]): T[][] {
  if (xs.length <= 1) return [xs];
  return xs.flatMap((x, i) => permutations([...xs.slice(0, i), ...xs.slice(i + 1)]).map((rest) => [x, ...rest]));
}

function task20ModifyItems(): Record<string, unknown> & { item_ids: string[]; new_item_ids: string[] } {
  const tasks = retailData().tasks as { id: string; evaluation_criteria: { actions: { name: string; arguments: any }[] } }[];
  const action = tasks.find((t) => t.id === '20')!.evaluation_criteria.actions.find((a) => a.name === 'modify_pending_order_items')!;
  return action.arguments;
}

function permutationHashes(tau2Compat: boolean): Set<string> {
  const d = retailDomain({ tau2Compat });
  const args = task20ModifyItems();
  const pairs = args.item_ids.map((id, i) => [id, args.new_item_ids[i]] as const);
  const hashes = new Set<string>();
  for (const perm of permutations([...pairs])) {
    const db = d.freshDb();
    const r = call(d, db, 'modify_pending_order_items', { ...args, item_ids: perm.map((p) => p[0]), new_item_ids: perm.map((p) => p[1]) });
    assert.equal(r.error, false, r.output);
    hashes.add(d.hashDb(db));
  }
  return hashes;
}

test("modify-items order sensitivity (τ²'s last-variant bug): task 20's 24 permutations give 4 hashes", () => {
  assert.equal(task20ModifyItems().item_ids.length, 4);
  assert.equal(permutationHashes(true).size, 4);
});

test('with tau2Compat off the bug is fixed: every permutation gives the same DB', () => {
  assert.equal(permutationHashes(false).size, 1);
});

test('modify-items stores the unrounded difference; exchange rounds it', () => {
  const db = domain.freshDb();
  const args = task20ModifyItems();
  const order = callJson(domain, db, 'modify_pending_order_items', args);
  const row = order.payment_history.at(-1);
  const before = retailData().db.orders.get(args.order_id as string)!;
  let diff = 0;
  for (let k = 0; k < args.item_ids.length; k++) {
    const oldItem = before.items.find((i) => i.item_id === args.item_ids[k])!;
    const variant = retailData().db.products.get(oldItem.product_id)!.variants.get(args.new_item_ids[k])!;
    diff += variant.price - oldItem.price;
  }
  assert.equal(row.amount, Math.abs(diff));
  assert.equal(row.transaction_type, diff > 0 ? 'payment' : 'refund');
});

test('tau2Compat off: stricter item lists and exact pending status', () => {
  const d = retailDomain({ tau2Compat: false });
  const db = d.freshDb();
  const same = { order_id: '#W4817420', item_ids: ['6777246137'], new_item_ids: ['6777246137'], payment_method_id: 'gift_card_8168843' };
  assert.equal(call(d, db, 'exchange_delivered_order_items', same).output, 'Error: The new item id should be different from the old item id');
  assert.equal(call(d, db, 'return_delivered_order_items', { order_id: '#W4817420', item_ids: [], payment_method_id: 'gift_card_8168843' }).output, 'Error: item_ids must name at least one item');
  assert.match(call(d, db, 'exchange_delivered_order_items', { ...same, item_ids: '6777246137' }).output, /^Error: item_ids must be a list of item id strings/);
  const args = task20ModifyItems();
  callJson(d, db, 'modify_pending_order_items', args);
  const address = { order_id: args.order_id, address1: '1 Main St', address2: '', city: 'Austin', state: 'TX', country: 'USA', zip: '78701' };
  assert.equal(call(d, db, 'modify_pending_order_address', address).output, 'Error: Non-pending order cannot be modified');
});
