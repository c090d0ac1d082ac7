import assert from 'node:assert/strict';
import { test } from 'node:test';
import { PLACES, STREET_NAMES } from '../../../src/domains/retail/synth/catalog-data.ts';
import { renderAddress } from '../../../src/domains/retail/synth/protocol.ts';
import { addressDrillRecords, addressPrefix } from '../../../src/recipes/retail/address-drill.ts';
import { writeDrillRecords } from '../../../src/recipes/retail/write-drill.ts';
import { parseRunFile } from '../../../src/recipes/train-setup.ts';
import type { TrajectoryRecord } from '../../../src/rl/sft-data.ts';

const old = { address1: '549 Maple Drive', address2: 'Suite 133', city: 'Charlotte', state: 'NC', country: 'USA', zip: '28971' };
const plain = { address1: '721 River Road', address2: '', city: 'Indianapolis', state: 'IN', country: 'USA', zip: '46978' };

function expert(write: string, a: typeof old, stated = true): TrajectoryRecord {
  const text = renderAddress(a);
  return {
    taskId: write,
    messages: [
      { role: 'assistant', content: 'Hi! How can I help you today?' },
      { role: 'user', content: stated ? `Please change the shipping address of #W5449546 to ${text}.` : 'Please change my address.' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'call_0', name: 'get_order_details', arguments: { order_id: '#W5449546' } }] },
      { role: 'tool', id: 'call_0', content: '{"order_id": "#W5449546", "address": {"city": "San Diego"}}' },
      { role: 'assistant', content: `Here is the change: set the shipping address of order #W5449546 to ${text}. Do you confirm that you want me to proceed (yes/no)?` },
      { role: 'user', content: 'Yes.' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'call_1', name: write, arguments: { order_id: '#W5449546', ...a } }] },
      { role: 'tool', id: 'call_1', content: `{"address": ${JSON.stringify(a)}}` },
      { role: 'assistant', content: 'Done.' },
    ],
  };
}

test('address prefix: up to and including the first address write, with the address written; none without a stated address', () => {
  const e = expert('modify_pending_order_address', old);
  const p = addressPrefix(e)!;
  assert.equal(p.messages.length, 7);
  assert.deepEqual(p.messages, e.messages.slice(0, 7));
  assert.deepEqual(p.address, old);
  assert.equal(addressPrefix(expert('modify_pending_order_address', old, false)), undefined, 'the customer never said it');
  assert.equal(addressPrefix({ messages: e.messages.slice(0, 5) }), undefined, 'no write');
});

test('address drill: a fresh address everywhere the old one was (text and call), same shape, deterministic for a seed', () => {
  const experts = [expert('modify_pending_order_address', old), expert('modify_user_address', plain), expert('modify_user_address', old, false)];
  const a = addressDrillRecords(experts, { documents: 400, seed: 2 });
  assert.deepEqual(a, addressDrillRecords(experts, { documents: 400, seed: 2 }));
  assert.notDeepEqual(a, addressDrillRecords(experts, { documents: 400, seed: 3 }));
  const streets = new Set<string>(), cities = new Set<string>();
  for (const r of a) {
    assert.equal(r.messages.length, 7);
    const call = r.messages[6].toolCalls![0];
    const args = call.arguments as Record<string, string>;
    const was = call.name === 'modify_pending_order_address' ? old : plain;
    const now = { address1: args.address1, address2: args.address2, city: args.city, state: args.state, country: args.country, zip: args.zip };
    const text = renderAddress(now);
    assert.ok(r.messages[1].content!.includes(text), 'the customer states the new address');
    assert.ok(r.messages[4].content!.includes(text), 'the confirmation repeats it');
    assert.ok(!JSON.stringify(r.messages).includes(renderAddress(was)), 'the old address is gone');
    assert.equal(args.order_id, '#W5449546', 'other arguments kept');
    assert.equal(r.messages[3].content, experts[0].messages[3].content, 'tool results before the write kept');
    assert.equal(now.address2 === '', was.address2 === '', 'suite kept or absent as before');
    assert.match(now.address1, /^\d{3} /);
    const place = PLACES.find((p) => p.city === now.city)!;
    assert.equal(now.state, place.state);
    assert.ok(now.zip.startsWith(place.zipPrefix) && now.zip.length === 5);
    streets.add(now.address1.slice(4));
    cities.add(now.city);
  }
  assert.ok(streets.size >= STREET_NAMES.length - 2 && cities.size >= PLACES.length - 2, `${streets.size} streets, ${cities.size} cities`);
  assert.throws(() => addressDrillRecords([expert('modify_user_address', old, false)], { documents: 1 }), /no expert trajectory writes an address/);
  assert.throws(() => addressDrillRecords(experts, { documents: 0 }), /documents must be a positive integer/);
});

test('run file: retail.drills.address is validated', () => {
  const base = { task: 'retail-synth', policy: { type: 'gpt-oss', preset: 'tiny-1m', tokenizer: 't.json' }, grpo: { data: { trainBatchSize: 1 }, trainer: { totalSteps: 1 }, rollout: { n: 2 } } };
  const sft = (address: unknown) => ({ ...base, sft: { data: 'x.jsonl', outDir: 'out' }, retail: { drills: { address } } });
  assert.deepEqual(parseRunFile(sft({ documents: 10 })).run.retail?.drills?.address, { documents: 10, seed: 0 });
  assert.throws(() => parseRunFile(sft({ documents: 0 })), /documents/);
  assert.throws(() => parseRunFile(sft({ documents: 5, extra: 1 })), /extra|Unrecognized/i);
});

test('write drill: every writing conversation cut after its first write; fresh addresses only in address writes', () => {
  const cancel: TrajectoryRecord = {
    taskId: 'cancel',
    messages: [
      { role: 'assistant', content: 'Hi! How can I help you today?' },
      { role: 'user', content: 'Cancel #W1234567, I no longer need it.' },
      { role: 'assistant', content: 'Here is the change: cancel order #W1234567. Do you confirm that you want me to proceed (yes/no)?' },
      { role: 'user', content: 'Yes.' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'call_0', name: 'cancel_pending_order', arguments: { order_id: '#W1234567', reason: 'no longer needed' } }] },
      { role: 'tool', id: 'call_0', content: '{}' },
      { role: 'assistant', content: null, toolCalls: [{ id: 'call_1', name: 'modify_user_address', arguments: { user_id: 'x', ...plain } }] },
    ],
  };
  const reads: TrajectoryRecord = { taskId: 'info', messages: [{ role: 'user', content: 'What is my order status?' }, { role: 'assistant', content: 'Delivered.' }] };
  const experts = [cancel, expert('modify_pending_order_address', old), reads];
  const a = writeDrillRecords(experts, { documents: 200, seed: 1 });
  assert.deepEqual(a, writeDrillRecords(experts, { documents: 200, seed: 1 }));
  let cancels = 0, addresses = 0;
  for (const r of a) {
    const last = r.messages.at(-1)!;
    assert.equal(last.toolCalls?.length, 1, 'ends with the first write call');
    if (last.toolCalls![0].name === 'cancel_pending_order') {
      cancels++;
      assert.deepEqual(r.messages, cancel.messages.slice(0, 5), 'no address: the expert prefix as it was');
    } else {
      addresses++;
      assert.equal(last.toolCalls![0].name, 'modify_pending_order_address');
      assert.ok(!JSON.stringify(r.messages).includes(renderAddress(old)), 'address writes get a fresh address');
    }
  }
  assert.ok(cancels > 50 && addresses > 50, `${cancels} cancels, ${addresses} address writes`);
  assert.throws(() => writeDrillRecords([reads], { documents: 1 }), /no expert trajectory calls a write tool/);
});
