import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { executeToolCall } from '../../../src/tooluse/execute.ts';
import { createRetailDomain } from '../../../src/domains/retail/domain.ts';
import { parseRetailDb } from '../../../src/domains/retail/load.ts';
import { ORDER_STATUSES } from '../../../src/domains/retail/schema.ts';
import { generateWorld } from '../../../src/domains/retail/synth/world.ts';
import { worldToJson } from '../../../src/domains/retail/synth/world-json.ts';

const SMALL = { products: 20, users: 60, orders: 150 };

describe('synthetic world generator', () => {
  it('is deterministic by seed (byte-identical db.json) and differs across seeds', () => {
    const a = worldToJson(generateWorld(42, SMALL));
    assert.equal(worldToJson(generateWorld(42, SMALL)), a);
    assert.notEqual(worldToJson(generateWorld(43, SMALL)), a);
  });

  it('passes the τ² loader schema checks and round-trips through it unchanged', () => {
    const text = worldToJson(generateWorld(7));
    const loaded = parseRetailDb(text, 'generated db.json');
    assert.equal(worldToJson(loaded), text);
    assert.equal(loaded.products.size, 50);
    assert.equal(loaded.users.size, 500);
    assert.equal(loaded.orders.size, 1000);
  });

  it('has τ²-like statistics and regularities at the default size', () => {
    const w = generateWorld(11);
    const statuses = new Map<string, number>();
    for (const o of w.orders.values()) statuses.set(o.status, (statuses.get(o.status) ?? 0) + 1);
    for (const s of ORDER_STATUSES) assert.ok((statuses.get(s) ?? 0) > 0, `status ${s} present`);
    assert.ok(statuses.get('pending')! > 330 && statuses.get('pending')! < 500, 'about 42% pending');
    assert.ok(statuses.get('delivered')! > 280 && statuses.get('delivered')! < 450, 'about 37% delivered');
    let variants = 0;
    for (const p of w.products.values()) {
      assert.match(p.product_id, /^\d{10}$/);
      assert.ok(p.variants.size >= 5 && p.variants.size <= 20, `${p.name} has 5–20 variants`);
      variants += p.variants.size;
      for (const [id, v] of p.variants) {
        assert.equal(id, v.item_id);
        assert.match(id, /^\d{10}$/);
        assert.ok(!w.products.has(id), 'no id is both a product and an item');
      }
    }
    assert.ok(variants > 400 && variants < 800);
    const emails = new Set<string>();
    const nameZips = new Set<string>();
    for (const u of w.users.values()) {
      assert.match(u.user_id, /^[a-z]+_[a-z]+_\d{4}$/);
      assert.equal(u.address.country, 'USA');
      assert.ok(u.payment_methods.size >= 1 && u.payment_methods.size <= 4);
      assert.ok(u.orders.length <= 9);
      for (const [id, pm] of u.payment_methods) {
        assert.equal(id, pm.id);
        assert.match(id, /^(credit_card|gift_card|paypal)_\d{7}$/);
        if (pm.source === 'gift_card') assert.ok(Number.isInteger(pm.balance) && pm.balance >= 0 && pm.balance <= 100);
      }
      emails.add(u.email.toLowerCase());
      nameZips.add(`${u.name.first_name}|${u.name.last_name}|${u.address.zip}`.toLowerCase());
    }
    assert.equal(emails.size, w.users.size, 'emails unique ignoring case');
    assert.equal(nameZips.size, w.users.size, '(first, last, zip) unique');
    for (const o of w.orders.values()) {
      assert.match(o.order_id, /^#W\d{7}$/);
      assert.ok(w.users.get(o.user_id)!.orders.includes(o.order_id));
      assert.ok(o.items.length >= 1 && o.items.length <= 5);
      for (const item of o.items) {
        const v = w.products.get(item.product_id)!.variants.get(item.item_id)!;
        assert.equal(item.price, v.price);
        assert.deepEqual([...item.options], [...v.options]);
      }
      if (o.status.startsWith('pending')) assert.equal(o.fulfillments.length, 0);
      else {
        assert.equal(o.fulfillments.length, 1);
        assert.equal(o.fulfillments[0]!.tracking_id.length, 1);
      }
      const types = o.payment_history.map((p) => p.transaction_type).join(',');
      if (o.status === 'cancelled') assert.equal(types, 'payment,refund');
      else if (o.status !== 'pending (item modified)') assert.equal(types, 'payment');
      for (const p of o.payment_history) assert.ok(w.users.get(o.user_id)!.payment_methods.has(p.payment_method_id));
    }
  });

  it('writes every number as a Python float', () => {
    const text = worldToJson(generateWorld(3, SMALL));
    assert.match(text, /"balance": \d+\.0[,}]/);
    assert.doesNotMatch(text, /"(price|amount|balance)": -?\d+[,}]/);
  });

  it('builds a working retail domain over the generated DB', () => {
    const w = generateWorld(5, SMALL);
    const domain = createRetailDomain({ db: w, policy: 'policy' });
    const user = [...w.users.values()][0]!;
    const r = executeToolCall(domain, domain.freshDb(), { name: 'find_user_id_by_email', arguments: { email: user.email.toUpperCase() } });
    assert.deepEqual(r, { output: user.user_id, error: false });
    const list = executeToolCall(domain, domain.freshDb(), { name: 'list_all_product_types', arguments: {} });
    assert.equal(Object.keys(JSON.parse(list.output) as object).length, SMALL.products);
  });

  it('rejects bad sizes with a clear error', () => {
    assert.throws(() => generateWorld(1, { products: 0, users: 10, orders: 10 }), /products/);
    assert.throws(() => generateWorld(1, { products: 51, users: 10, orders: 10 }), /products/);
    assert.throws(() => generateWorld(1, { products: 5, users: 2, orders: 100 }), /orders per user/);
    assert.throws(() => generateWorld(1.5, SMALL), /seed/);
  });
});
