import { test } from 'node:test';
import assert from 'node:assert/strict';
import { retailData, retailDomain } from './fixture.ts';

const V1_ORDER = [
  'calculate',
  'cancel_pending_order',
  'exchange_delivered_order_items',
  'find_user_id_by_name_zip',
  'find_user_id_by_email',
  'get_order_details',
  'get_product_details',
  'get_item_details',
  'get_user_details',
  'list_all_product_types',
  'modify_pending_order_address',
  'modify_pending_order_items',
  'modify_pending_order_payment',
  'modify_user_address',
  'return_delivered_order_items',
  'transfer_to_human_agents',
];

test('the domain: name, class name, policy and the 16 tools in class-definition order', () => {
  const domain = retailDomain();
  assert.equal(domain.name, 'retail');
  assert.equal(domain.toolsClassName, 'RetailTools');
  assert.equal(domain.policy, retailData().policy);
  assert.deepEqual(domain.tools.map((t) => t.name), V1_ORDER);
  const kinds = Object.fromEntries(domain.tools.map((t) => [t.name, t.kind]));
  assert.equal(Object.values(kinds).filter((k) => k === 'read').length, 7);
  assert.equal(Object.values(kinds).filter((k) => k === 'write').length, 7);
  assert.deepEqual([kinds.calculate, kinds.transfer_to_human_agents], ['generic', 'generic']);
});

test('the v0 tool set is the same list without get_item_details', () => {
  const names = retailDomain({ toolSet: 'v0' }).tools.map((t) => t.name);
  assert.deepEqual(names, V1_ORDER.filter((n) => n !== 'get_item_details'));
});

test('tool schemas have the shape τ² sends (pydantic-style parameters, all required, titles)', () => {
  const tools = Object.fromEntries(retailDomain().tools.map((t) => [t.name, t]));
  const exchange = tools.exchange_delivered_order_items;
  assert.deepEqual(exchange.params, ['order_id', 'item_ids', 'new_item_ids', 'payment_method_id']);
  const { type, function: fn } = exchange.schema;
  assert.equal(type, 'function');
  assert.equal(fn.name, 'exchange_delivered_order_items');
  const params = fn.parameters as any;
  assert.deepEqual(Object.keys(params), ['properties', 'required', 'title', 'type']);
  assert.equal(params.title, 'parameters');
  assert.equal(params.type, 'object');
  assert.deepEqual(params.required, exchange.params);
  assert.deepEqual(Object.keys(params.properties), exchange.params);
  assert.deepEqual(Object.keys(params.properties.item_ids), ['description', 'items', 'title', 'type']);
  assert.deepEqual(params.properties.item_ids.items, { type: 'string' });
  assert.equal(params.properties.item_ids.title, 'Item Ids');
  assert.equal(params.properties.order_id.title, 'Order Id');
  assert.equal(params.properties.order_id.type, 'string');
  assert.equal(tools.modify_user_address.schema.function.parameters.properties && (tools.modify_user_address.schema.function.parameters as any).properties.address1.title, 'Address1');
  // no parameters: no "required" key
  assert.deepEqual(tools.list_all_product_types.schema.function.parameters, { properties: {}, title: 'parameters', type: 'object' });
  for (const t of Object.values(tools)) {
    assert.ok(t.schema.function.description.length > 20, t.name);
    for (const p of Object.values((t.schema.function.parameters as any).properties) as { description: string }[]) assert.ok(p.description.length > 5);
  }
});

test('tool descriptions keep the behavioural hints agents rely on', () => {
  const d = Object.fromEntries(retailDomain().tools.map((t) => [t.name, JSON.stringify(t.schema.function)]));
  for (const name of ['cancel_pending_order', 'exchange_delivered_order_items', 'modify_pending_order_address', 'modify_pending_order_items', 'modify_pending_order_payment', 'modify_user_address', 'return_delivered_order_items']) {
    assert.match(d[name], /explicit yes\/no confirmation/, name);
  }
  assert.match(d.get_order_details, /start with a '#'/);
  assert.match(d.get_product_details, /not the same thing as an item id/);
  assert.match(d.get_item_details, /not the same thing as a product id/);
  assert.match(d.find_user_id_by_name_zip, /by email first/);
  assert.match(d.list_all_product_types, /only 50 product types/);
  assert.match(d.modify_pending_order_items, /only once per order/);
  assert.match(d.exchange_delivered_order_items, /returned or exchanged only once/);
  assert.match(d.return_delivered_order_items, /returned or exchanged only once/);
  assert.match(d.transfer_to_human_agents, /explicitly asks for a human agent/);
});

test('domains built from the same data share one base', () => {
  assert.equal(retailDomain().base, retailDomain({ toolSet: 'v0' }).base);
});
