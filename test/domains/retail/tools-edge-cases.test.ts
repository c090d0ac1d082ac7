/** The tricky tool edge cases of tau2.md §13.2, with τ²'s exact result texts. */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { INITIAL_HASH, call, callJson, retailData, retailDomain } from './fixture.ts';

const domain = retailDomain();

test('#1 an order id without its # is not found', () => {
  const db = domain.freshDb();
  assert.deepEqual(call(domain, db, 'get_order_details', { order_id: 'W5918442' }), { output: 'Error: Order not found', error: true });
});

test('#2/#3 cancel checks the status before the reason', () => {
  const db = domain.freshDb();
  assert.equal(call(domain, db, 'cancel_pending_order', { order_id: '#W2611340', reason: 'changed my mind' }).output, 'Error: Non-pending order cannot be cancelled');
  assert.equal(call(domain, db, 'cancel_pending_order', { order_id: '#W5918442', reason: 'changed my mind' }).output, 'Error: Invalid reason');
  assert.equal(domain.hashDb(db), INITIAL_HASH);
});

test('#4 modify-items refuses an item swapped for itself', () => {
  const db = domain.freshDb();
  const r = call(domain, db, 'modify_pending_order_items', {
    order_id: '#W5918442',
    item_ids: ['1725100896'],
    new_item_ids: ['1725100896'],
    payment_method_id: 'credit_card_5051208',
  });
  assert.deepEqual(r, { output: 'Error: The new item id should be different from the old item id', error: true });
});

test('#5 quantity-check messages differ per tool', () => {
  const db = domain.freshDb();
  const exchange = { order_id: '#W4817420', item_ids: ['0'], new_item_ids: ['1'], payment_method_id: 'gift_card_8168843' };
  assert.equal(call(domain, db, 'exchange_delivered_order_items', exchange).output, 'Error: Number of 0 not found.');
  const modify = { order_id: '#W5918442', item_ids: ['0'], new_item_ids: ['1'], payment_method_id: 'credit_card_5051208' };
  assert.equal(call(domain, db, 'modify_pending_order_items', modify).output, 'Error: 0 not found');
  const ret = { order_id: '#W4817420', item_ids: ['0'], payment_method_id: 'gift_card_8168843' };
  assert.equal(call(domain, db, 'return_delivered_order_items', ret).output, 'Error: Some item not found');
  // Requesting an item twice when the order has it once fails the same way.
  const twice = { ...exchange, item_ids: ['6777246137', '6777246137'], new_item_ids: ['6777246137', '6777246137'] };
  assert.equal(call(domain, db, 'exchange_delivered_order_items', twice).output, 'Error: Number of 6777246137 not found.');
});

test('#6 length mismatch: exchange message has a period, modify-items has none', () => {
  const db = domain.freshDb();
  const exchange = { order_id: '#W4817420', item_ids: ['6777246137'], new_item_ids: [], payment_method_id: 'gift_card_8168843' };
  assert.equal(call(domain, db, 'exchange_delivered_order_items', exchange).output, 'Error: The number of items to be exchanged should match.');
  const modify = { order_id: '#W5918442', item_ids: ['1725100896'], new_item_ids: [], payment_method_id: 'credit_card_5051208' };
  assert.equal(call(domain, db, 'modify_pending_order_items', modify).output, 'Error: The number of items to be exchanged should match');
});

test('#7/#8 unavailable variant vs unknown item id', () => {
  const db = domain.freshDb();
  const base = { order_id: '#W5918442', item_ids: ['1725100896'], payment_method_id: 'credit_card_5051208' };
  assert.equal(call(domain, db, 'modify_pending_order_items', { ...base, new_item_ids: ['1002370030'] }).output, 'Error: New item 1002370030 not found or available');
  assert.equal(call(domain, db, 'modify_pending_order_items', { ...base, new_item_ids: ['9999999999'] }).output, 'Error: Variant not found');
});

test('#9 a gift card too small for the order total', () => {
  const db = domain.freshDb();
  const r = call(domain, db, 'modify_pending_order_payment', { order_id: '#W2443586', payment_method_id: 'gift_card_2742113' });
  assert.equal(r.output, 'Error: Insufficient gift card balance to pay for the order');
});

test('#10 empty modify-items succeeds (0.0 refund row), then the payment can no longer change', () => {
  const db = domain.freshDb();
  const order = callJson(domain, db, 'modify_pending_order_items', {
    order_id: '#W2443586',
    item_ids: [],
    new_item_ids: [],
    payment_method_id: 'paypal_7859314',
  });
  assert.equal(order.status, 'pending (item modified)');
  assert.deepEqual(order.payment_history.at(-1), { transaction_type: 'refund', amount: 0, payment_method_id: 'paypal_7859314' });
  const text = call(domain, db, 'get_order_details', { order_id: '#W2443586' }).output;
  assert.ok(text.includes('{"transaction_type": "refund", "amount": 0.0, "payment_method_id": "paypal_7859314"}'));
  const r = call(domain, db, 'modify_pending_order_payment', { order_id: '#W2443586', payment_method_id: 'gift_card_2742113' });
  assert.equal(r.output, 'Error: There should be exactly one payment for a pending order');
});

test('#11 after modify-items: address still changes (substring test), items and cancel do not', () => {
  const db = domain.freshDb();
  // any other available variant of the same perfume
  const product = callJson(domain, db, 'get_product_details', { product_id: '6858788497' });
  const other = Object.values(product.variants as Record<string, { item_id: string; available: boolean }>).find(
    (v) => v.available && v.item_id !== '1725100896',
  )!;
  const modify = { order_id: '#W5918442', item_ids: ['1725100896'], new_item_ids: [other.item_id], payment_method_id: 'credit_card_5051208' };
  assert.equal(callJson(domain, db, 'modify_pending_order_items', modify).status, 'pending (item modified)');
  const address = { order_id: '#W5918442', address1: '1 Main St', address2: '', city: 'Austin', state: 'TX', country: 'USA', zip: '78701' };
  const changed = callJson(domain, db, 'modify_pending_order_address', address);
  assert.deepEqual(changed.address, { address1: '1 Main St', address2: '', city: 'Austin', country: 'USA', state: 'TX', zip: '78701' });
  assert.equal(call(domain, db, 'modify_pending_order_items', modify).output, 'Error: Non-pending order cannot be modified');
  assert.equal(call(domain, db, 'cancel_pending_order', { order_id: '#W5918442', reason: 'no longer needed' }).output, 'Error: Non-pending order cannot be cancelled');
});

test('#12 a return must go to the original method or a gift card', () => {
  const db = domain.freshDb();
  // a delivered order whose user has a non-gift-card method other than the original one
  const { db: tables } = retailData();
  let found: { orderId: string; other: string } | undefined;
  for (const [orderId, o] of tables.orders) {
    if (o.status !== 'delivered') continue;
    const methods = tables.users.get(o.user_id)!.payment_methods;
    const other = [...methods.values()].find((m) => m.source !== 'gift_card' && m.id !== o.payment_history[0].payment_method_id);
    if (other) {
      found = { orderId, other: other.id };
      break;
    }
  }
  assert.ok(found);
  const r = call(domain, db, 'return_delivered_order_items', { order_id: found.orderId, item_ids: [], payment_method_id: found.other });
  assert.equal(r.output, 'Error: Payment method should be the original payment method');
});

test('#13 exchanging an item for the same item id is accepted', () => {
  const db = domain.freshDb();
  const order = callJson(domain, db, 'exchange_delivered_order_items', {
    order_id: '#W4817420',
    item_ids: ['6777246137'],
    new_item_ids: ['6777246137'],
    payment_method_id: 'gift_card_8168843',
  });
  assert.equal(order.status, 'exchange requested');
  assert.equal(order.exchange_price_difference, 0);
  assert.ok(call(domain, db, 'get_order_details', { order_id: '#W4817420' }).output.includes('"exchange_price_difference": 0.0,'));
});

test('#14 return then exchange on the same order', () => {
  const db = domain.freshDb();
  const ret = callJson(domain, db, 'return_delivered_order_items', { order_id: '#W4817420', item_ids: ['6777246137'], payment_method_id: 'gift_card_8168843' });
  assert.equal(ret.status, 'return requested');
  assert.deepEqual(ret.return_items, ['6777246137']);
  const r = call(domain, db, 'exchange_delivered_order_items', {
    order_id: '#W4817420',
    item_ids: ['6777246137'],
    new_item_ids: ['6777246137'],
    payment_method_id: 'gift_card_8168843',
  });
  assert.equal(r.output, 'Error: Non-delivered order cannot be exchanged');
});

test('#15 calculate', () => {
  const db = domain.freshDb();
  const out = (expression: string) => call(domain, db, 'calculate', { expression }).output;
  assert.deepEqual(['2**3', '2+2', '1/3', '1/0', 'abs(-1)'].map(out), ['8.0', '4.0', '0.33', 'Error: division by zero', 'Error: Invalid characters in expression']);
});

test('#16 user lookups ignore case; the zip must match exactly', () => {
  const db = domain.freshDb();
  assert.deepEqual(call(domain, db, 'find_user_id_by_name_zip', { first_name: 'SOFIA', last_name: 'rossi', zip: '78784' }), { output: 'sofia_rossi_8776', error: false });
  assert.equal(call(domain, db, 'find_user_id_by_email', { email: 'SOFIA.ROSSI2645@EXAMPLE.COM' }).output, 'sofia_rossi_8776');
  assert.equal(call(domain, db, 'find_user_id_by_name_zip', { first_name: 'Sofia', last_name: 'Rossi', zip: '78785' }).output, 'Error: User not found');
});

test('#17 unknown tool; #18 an item id is not a product id', () => {
  const db = domain.freshDb();
  assert.deepEqual(call(domain, db, 'foo'), { output: "Error: Tool 'foo' not found.", error: true });
  assert.equal(call(domain, db, 'get_product_details', { product_id: '1725100896' }).output, 'Error: Product not found');
  assert.equal(call(domain, db, 'get_item_details', { item_id: '6858788497' }).output, 'Error: Item not found');
});

test('#19 cancelling a gift-card order refunds the card at once (rounded)', () => {
  const db = domain.freshDb();
  const order = callJson(domain, db, 'cancel_pending_order', { order_id: '#W6779827', reason: 'ordered by mistake' });
  assert.equal(order.status, 'cancelled');
  assert.equal(order.cancel_reason, 'ordered by mistake');
  assert.deepEqual(order.payment_history, [
    { transaction_type: 'payment', amount: 4079.45, payment_method_id: 'gift_card_7219486' },
    { transaction_type: 'refund', amount: 4079.45, payment_method_id: 'gift_card_7219486' },
  ]);
  const user = callJson(domain, db, 'get_user_details', { user_id: 'ethan_lopez_6291' });
  assert.equal(user.payment_methods.gift_card_7219486.balance, 4128.45);
  assert.ok(call(domain, db, 'get_user_details', { user_id: 'ethan_lopez_6291' }).output.includes('"balance": 4128.45}'));
});

test('#20 list_all_product_types: 50 names, sorted keys, Python separators', () => {
  const db = domain.freshDb();
  const r = call(domain, db, 'list_all_product_types');
  assert.ok(r.output.startsWith('{"Action Camera": "3377618313", "Air Purifier": '));
  const parsed = JSON.parse(r.output) as Record<string, string>;
  assert.equal(Object.keys(parsed).length, 50);
  assert.deepEqual(Object.keys(parsed), Object.keys(parsed).sort());
});

test('read outputs are model-ordered JSON with nulls kept and floats in Python repr', () => {
  const db = domain.freshDb();
  const text = call(domain, db, 'get_order_details', { order_id: '#W5918442' }).output;
  assert.ok(text.startsWith('{"order_id": "#W5918442", "user_id": "sofia_rossi_8776", "address": {"address1": '));
  assert.ok(
    text.endsWith(
      '"cancel_reason": null, "exchange_items": null, "exchange_new_items": null, "exchange_payment_method_id": null, ' +
        '"exchange_price_difference": null, "return_items": null, "return_payment_method_id": null}',
    ),
  );
  assert.ok(text.includes('"payment_history": [{"transaction_type": "payment", "amount": 1463.7, "payment_method_id": "credit_card_5051208"}]'));
  const user = call(domain, db, 'get_user_details', { user_id: 'ethan_lopez_6291' }).output;
  assert.ok(user.includes('"gift_card_7219486": {"source": "gift_card", "id": "gift_card_7219486", "balance": 49.0}'));
  const item = call(domain, db, 'get_item_details', { item_id: '1002370030' }).output;
  assert.ok(/^\{"item_id": "1002370030", "options": \{.*\}, "available": false, "price": [0-9.]+\}$/.test(item));
});

test('wrong argument types behave as in Python', () => {
  const db = domain.freshDb();
  const out = (name: string, args: Record<string, unknown>) => call(domain, db, name, args).output;
  assert.equal(out('get_order_details', { order_id: 5918442 }), 'Error: Order not found');
  assert.equal(out('get_order_details', { order_id: ['#W5918442'] }), "Error: unhashable type: 'list'");
  assert.equal(out('get_user_details', { user_id: { a: 1 } }), "Error: unhashable type: 'dict'");
  assert.equal(out('find_user_id_by_email', { email: 5 }), "Error: 'int' object has no attribute 'lower'");
  assert.equal(out('find_user_id_by_name_zip', { first_name: null, last_name: 'x', zip: '1' }), "Error: 'NoneType' object has no attribute 'lower'");
  // last_name is only lower-cased once a first name matched
  assert.equal(out('find_user_id_by_name_zip', { first_name: 'Nobody', last_name: 1, zip: '1' }), 'Error: User not found');
  assert.equal(out('find_user_id_by_name_zip', { first_name: 'Sofia', last_name: 1, zip: '1' }), "Error: 'int' object has no attribute 'lower'");
  assert.equal(out('calculate', { expression: 12 }), "Error: 'int' object is not iterable");
  assert.equal(out('calculate', { expression: ['1', '+'] }), 'Error: eval() arg 1 must be a string, bytes or code object');
  assert.equal(out('calculate', { expression: [1] }), "Error: 'in <string>' requires string as left operand, not int");
  // a string item list is iterated character by character
  const exchange = { order_id: '#W4817420', item_ids: '6777246137', new_item_ids: ['x'], payment_method_id: 'gift_card_8168843' };
  assert.equal(out('exchange_delivered_order_items', exchange), 'Error: Number of 6 not found.');
  assert.equal(out('exchange_delivered_order_items', { ...exchange, item_ids: 7 }), "Error: 'int' object is not iterable");
  assert.equal(out('exchange_delivered_order_items', { ...exchange, item_ids: [], new_item_ids: null }), "Error: object of type 'NoneType' has no len()");
  const addr = { user_id: 'sofia_rossi_8776', address1: 'a', address2: '', city: 'c', state: 's', country: 'USA', zip: 12345 };
  assert.equal(
    out('modify_user_address', addr),
    'Error: 1 validation error for UserAddress\nzip\n  Input should be a valid string [type=string_type, input_value=12345, input_type=int]\n' +
      '    For further information visit https://errors.pydantic.dev/2.13/v/string_type',
  );
  assert.ok(out('modify_user_address', { ...addr, city: null }).startsWith('Error: 2 validation errors for UserAddress\ncity\n'));
  assert.equal(domain.hashDb(db), INITIAL_HASH);
});

test('argument binding errors come from the executor in Python wording', () => {
  const db = domain.freshDb();
  assert.equal(call(domain, db, 'get_order_details', {}).output, "Error: RetailTools.get_order_details() missing 1 required positional argument: 'order_id'");
  assert.equal(call(domain, db, 'get_order_details', { order_id: '#W5918442', foo: 1 }).output, "Error: RetailTools.get_order_details() got an unexpected keyword argument 'foo'");
});
