import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync, copyFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TAU2_RETAIL_DIR } from '../../helpers/paths.ts';
import { RetailDataError, loadRetailData, parseRetailDb } from '../../../src/domains/retail/load.ts';
import { hashRetailTables } from '../../../src/domains/retail/hash.ts';
import { INITIAL_HASH, retailData } from './fixture.ts';

test('db.json loads with the documented counts', () => {
  const { db, tasks, policy, splits } = retailData();
  assert.equal(db.products.size, 50);
  const variants = [...db.products.values()].flatMap((p) => [...p.variants.values()]);
  assert.equal(variants.length, 591);
  assert.equal(variants.filter((v) => v.available).length, 379);
  assert.equal(db.users.size, 500);
  assert.equal(db.orders.size, 1000);
  assert.equal([...db.users.values()].reduce((n, u) => n + u.payment_methods.size, 0), 695);
  const statuses: Record<string, number> = {};
  for (const o of db.orders.values()) statuses[o.status] = (statuses[o.status] ?? 0) + 1;
  assert.deepEqual(statuses, { pending: 423, delivered: 373, processed: 102, cancelled: 102 });
  assert.ok(Array.isArray(tasks) && tasks.length === 114);
  assert.ok(policy.length > 1000);
  assert.equal((splits as { base: string[] }).base.length, 114);
});

test('records keep file order and get the optional order fields as null', () => {
  const { db } = retailData();
  assert.equal([...db.products.keys()][0], '9523456873');
  const firstVariants = [...db.products.get('9523456873')!.variants.keys()];
  assert.deepEqual(firstVariants.slice(0, 3), ['9612497925', '8124970213', '9354168549']);
  const order = db.orders.get('#W5918442')!;
  assert.deepEqual(Object.keys(order), [
    'order_id', 'user_id', 'address', 'items', 'status', 'fulfillments', 'payment_history', 'cancel_reason', 'exchange_items',
    'exchange_new_items', 'exchange_payment_method_id', 'exchange_price_difference', 'return_items', 'return_payment_method_id',
  ]);
  assert.equal(order.cancel_reason, null);
  assert.equal(order.return_payment_method_id, null);
});

test('the initial DB hashes to the τ² value', () => {
  assert.equal(hashRetailTables(retailData().db), INITIAL_HASH);
});

function withDataCopy(mutate: (dir: string) => void): string {
  const dir = mkdtempSync(join(tmpdir(), 'retail-data-'));
  for (const f of ['db.json', 'tasks.json', 'policy.md', 'split_tasks.json']) copyFileSync(join(TAU2_RETAIL_DIR, f), join(dir, f));
  mutate(dir);
  return dir;
}

function expectLoadError(mutate: (dir: string) => void, pattern: RegExp): void {
  const dir = withDataCopy(mutate);
  try {
    assert.throws(() => loadRetailData(dir), (err: unknown) => err instanceof RetailDataError && pattern.test(err.message), pattern.source);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('missing or broken data files give errors that name the file', () => {
  expectLoadError((d) => rmSync(join(d, 'db.json')), /Cannot read retail DB .*db\.json: file not found/);
  expectLoadError((d) => rmSync(join(d, 'policy.md')), /Cannot read policy .*policy\.md: file not found/);
  expectLoadError((d) => writeFileSync(join(d, 'tasks.json'), '[{"id": '), /tasks\.json is not valid JSON/);
  expectLoadError((d) => writeFileSync(join(d, 'split_tasks.json'), '[]'), /split_tasks\.json: expected a JSON object/);
  expectLoadError((d) => writeFileSync(join(d, 'db.json'), '{"products": {}, "users": {}'), /db\.json is not valid JSON/);
});

test('DB validation is strict and reports the JSON path of the first problem', () => {
  const raw = JSON.parse(readFileSync(join(TAU2_RETAIL_DIR, 'db.json'), 'utf8'));
  const check = (edit: (db: any) => void, pattern: RegExp) => {
    const copy = structuredClone(raw);
    edit(copy);
    assert.throws(() => parseRetailDb(JSON.stringify(copy), 'db.json'), (err: unknown) => err instanceof RetailDataError && pattern.test(err.message), pattern.source);
  };
  check((db) => (db.orders['#W5918442'].items[0].price = '289.66'), /db\.json: invalid retail DB at \$\.orders\["#W5918442"\]\.items\[0\]\.price: .*expected number/);
  check((db) => (db.orders['#W5918442'].surprise = 1), /\$\.orders\["#W5918442"\]: Unrecognized key: "surprise"/);
  check((db) => delete db.users.sofia_rossi_8776.email, /\$\.users\.sofia_rossi_8776\.email/);
  check((db) => (db.orders['#W5918442'].status = 'shipped'), /\$\.orders\["#W5918442"\]\.status/);
  check((db) => (db.users.sofia_rossi_8776.payment_methods.credit_card_5051208.source = 'bitcoin'), /payment_methods\.credit_card_5051208/);
  check((db) => (db.extra = {}), /Unrecognized key: "extra"/);
});
