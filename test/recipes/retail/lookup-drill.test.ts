import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { createRetailDomain } from '../../../src/domains/retail/domain.ts';
import { EpisodeRunner } from '../../../src/domains/retail/synth/episode.ts';
import { ExpertAgent } from '../../../src/domains/retail/synth/expert.ts';
import { SynthRng } from '../../../src/domains/retail/synth/rng.ts';
import { generateTaskSet } from '../../../src/domains/retail/synth/taskset.ts';
import { ScriptedRetailUser } from '../../../src/domains/retail/synth/user-sim.ts';
import { COMPACT_RETAIL_POLICY } from '../../../src/recipes/retail/prepare.ts';
import { freshOrderLookupRecord, lookupDrillRecord } from '../../../src/recipes/retail/lookup-drill.ts';
import { TrajectoryRecordSchema, type TrajectoryRecord } from '../../../src/rl/sft-data.ts';
import { executeToolCall } from '../../../src/tooluse/execute.ts';

type Message = TrajectoryRecord['messages'][number];
type ToolCall = NonNullable<Message['toolCalls']>[number];

async function episodes() {
  const set = generateTaskSet({ worldSeed: 41, taskSeed: 2, count: 8, sizes: { products: 20, users: 20, orders: 60 }, difficulty: 1 });
  const domain = createRetailDomain({ db: set.world, policy: COMPACT_RETAIL_POLICY });
  const runner = new EpisodeRunner({ domain, tasks: set.tasks, user: new ScriptedRetailUser(new Map(set.tasks.map((t) => [t.id, t.longrun]))) });
  const records: TrajectoryRecord[] = [];
  for (const t of set.tasks) records.push(TrajectoryRecordSchema.parse(JSON.parse(JSON.stringify(await runner.run(new ExpertAgent(), t.id, 5)))));
  await runner.close();
  return { domain, records };
}

describe('lookup drill (order and product ids copied out of tool results)', () => {
  it('continues an expert conversation after get_user_details with lookups of the user\'s own orders and their products, real outputs', async () => {
    const { domain, records } = await episodes();
    let drills = 0, productCalls = 0;
    for (const r of records) {
      const d = lookupDrillRecord(r, domain, new SynthRng(7), { maxOrders: 4, products: 0.6 });
      if (!d) continue;
      drills++;
      const at = d.messages.findIndex((m) => (m.toolCalls ?? []).some((c) => c.name === 'get_user_details')) + 1;
      assert.deepEqual(d.messages.slice(0, at + 1), r.messages.slice(0, at + 1), 'the conversation up to the user details is the expert\'s');
      const user = JSON.parse(d.messages[at].content!) as { orders: string[] };
      const looked: string[] = [];
      const db = domain.freshDb();
      let lastOrder: { items: { product_id: string }[] } | undefined;
      for (let i = at + 1; i < d.messages.length; i += 2) {
        const call: ToolCall = d.messages[i].toolCalls![0];
        const answer: Message = d.messages[i + 1];
        assert.equal(answer.role, 'tool');
        assert.equal(answer.id, call.id);
        assert.equal(answer.content, executeToolCall(domain, db, call).output, 'the tool\'s own output');
        assert.ok(!answer.content!.startsWith('Error'), answer.content!);
        if (call.name === 'get_order_details') {
          looked.push(call.arguments.order_id as string);
          lastOrder = JSON.parse(answer.content!);
        } else {
          assert.equal(call.name, 'get_product_details');
          productCalls++;
          assert.ok(lastOrder!.items.some((it) => it.product_id === call.arguments.product_id), 'a product of the order just read');
        }
      }
      assert.equal(looked.length, Math.min(4, user.orders.length));
      assert.equal(new Set(looked).size, looked.length, 'each order once');
      assert.ok(looked.every((o) => user.orders.includes(o)), 'the user\'s own orders');
      assert.deepEqual(lookupDrillRecord(r, domain, new SynthRng(7), { maxOrders: 4, products: 0.6 }), d, 'deterministic for a seed');
    }
    assert.ok(drills >= records.length - 1, `${drills} of ${records.length} expert conversations read the user's details`);
    // With notes, each product lookup follows the note of one item of the order just read: the same draws otherwise.
    let noted = 0;
    for (const r of records) {
      const plain = lookupDrillRecord(r, domain, new SynthRng(7), { maxOrders: 4, products: 0.6 });
      const d = lookupDrillRecord(r, domain, new SynthRng(7), { maxOrders: 4, products: 0.6, notes: true });
      if (!d || !plain) continue;
      assert.deepEqual(d.messages.map((m) => ({ ...m, reasoning: undefined })), plain.messages.map((m) => ({ ...m, reasoning: undefined })));
      d.messages.forEach((m, i) => {
        const call = m.toolCalls?.[0];
        if (call?.name !== 'get_product_details') return assert.equal(i < r.messages.length ? m.reasoning : undefined, r.messages[i]?.reasoning);
        const order = JSON.parse(d.messages[i - 1].content!) as { items: { name: string; product_id: string; item_id: string }[] };
        const item = order.items.find((it) => it.product_id === call.arguments.product_id)!;
        assert.equal(m.reasoning, `{"name": ${JSON.stringify(item.name)}, "product_id": "${item.product_id}", "item_id": "${item.item_id}"}`);
        assert.ok(d.messages[i - 1].content!.includes(m.reasoning!.slice(1, -1)), 'the note is the order\'s own text');
        noted++;
      });
    }
    assert.ok(noted >= 3, `${noted} product lookups with notes`);
    assert.ok(productCalls > 0);
    // Another seed, another order of lookups somewhere.
    const orderOf = (seed: number) => records.map((r) => lookupDrillRecord(r, domain, new SynthRng(seed))?.messages.map((m) => JSON.stringify(m.toolCalls ?? null)).join());
    assert.notDeepEqual(orderOf(1), orderOf(2));
  });

  it('recall: after each order lookup, a note of items of all the orders read so far, by their order-details text, then a lookup of the last', async () => {
    const { domain, records } = await episodes();
    let drills = 0, farther = 0, lines = 0;
    for (const r of records) {
      const opts = { maxOrders: 4, products: 0.6, notes: true };
      const plain = lookupDrillRecord(r, domain, new SynthRng(9), opts);
      const d = lookupDrillRecord(r, domain, new SynthRng(9), { ...opts, recall: 3 });
      if (!d || !plain) continue;
      drills++;
      const at = d.messages.findIndex((m) => (m.toolCalls ?? []).some((c) => c.name === 'get_user_details')) + 1;
      assert.deepEqual(d.messages.slice(0, at + 1), r.messages.slice(0, at + 1), 'the conversation up to the user details is the expert\'s');
      const db = domain.freshDb();
      const orders: { items: { name: string; product_id: string; item_id: string }[] }[] = [];
      let expectRecall = false;
      for (let i = at + 1; i < d.messages.length; i += 2) {
        const call: ToolCall = d.messages[i].toolCalls![0];
        assert.equal(d.messages[i + 1].content, executeToolCall(domain, db, call).output, 'the tool\'s own output');
        if (call.name === 'get_order_details') {
          assert.equal(expectRecall, false, 'each order lookup is followed by one recall');
          orders.push(JSON.parse(d.messages[i + 1].content!));
          expectRecall = true;
          continue;
        }
        assert.equal(call.name, 'get_product_details');
        assert.ok(expectRecall, 'a product lookup follows an order lookup');
        expectRecall = false;
        const read = orders.flatMap((o) => o.items.map((it) => `{"name": ${JSON.stringify(it.name)}, "product_id": "${it.product_id}", "item_id": "${it.item_id}"}`));
        const note: string[] = d.messages[i].reasoning!.split('\n');
        assert.equal(note.length, Math.min(3, read.length));
        assert.equal(new Set(note).size, note.length, 'each item once');
        for (const line of note) assert.ok(read.includes(line), `an item read so far: ${line}`);
        assert.equal(call.arguments.product_id, JSON.parse(note[note.length - 1]).product_id, 'the last line is the one looked up');
        if (note.some((l: string) => !orders.at(-1)!.items.some((it) => l.includes(it.item_id)))) farther++;
        lines += note.length;
      }
      assert.equal(orders.length, plain.messages.filter((m) => m.toolCalls?.[0]?.name === 'get_order_details').length, 'the same orders looked up');
      assert.deepEqual(lookupDrillRecord(r, domain, new SynthRng(9), { ...opts, recall: 3 }), d, 'deterministic for a seed');
    }
    assert.ok(drills >= 3, `${drills} drills`);
    assert.ok(farther >= 1 && lines >= 6, `${farther} notes reach an earlier order, ${lines} lines`);
    // recallTurns: that many recall turns more after the last order lookup, the drill before them drawn as without.
    for (const r of records) {
      const opts = { maxOrders: 4, notes: true, recall: 3 };
      const d = lookupDrillRecord(r, domain, new SynthRng(9), opts);
      const more = lookupDrillRecord(r, domain, new SynthRng(9), { ...opts, recallTurns: 2 });
      if (!d || !more) continue;
      assert.deepEqual(more.messages.slice(0, d.messages.length), d.messages);
      assert.equal(more.messages.length, d.messages.length + 4);
      for (const m of more.messages.slice(d.messages.length).filter((x) => x.role === 'assistant')) {
        assert.equal(m.toolCalls![0].name, 'get_product_details');
        assert.equal(m.toolCalls![0].arguments.product_id, JSON.parse(m.reasoning!.split('\n').at(-1)!).product_id);
      }
    }
    // variants: lines naming an item and another variant of its product, from product details read before the turn.
    let variantLines = 0;
    for (const r of records) {
      const d = lookupDrillRecord(r, domain, new SynthRng(9), { maxOrders: 4, notes: true, recall: 3, recallTurns: 2, variants: 2 });
      if (!d) continue;
      const text = (upTo: number) => d.messages.slice(0, upTo).filter((m) => m.role === 'tool').map((m) => m.content).join('\n');
      d.messages.forEach((m, i) => {
        for (const line of m.reasoning?.split('\n') ?? []) {
          const at = line.indexOf(' -> ');
          if (at < 0) continue;
          variantLines++;
          const item = JSON.parse(line.slice(0, at)) as { name: string; product_id: string; item_id: string };
          const to = JSON.parse(line.slice(at + 4)) as { options: Record<string, string>; item_id: string };
          const read = text(i);
          assert.ok(read.includes(line.slice(1, at - 1)), 'the item is an order\'s text read before');
          const product: { variants: Record<string, { item_id: string; options: Record<string, string> }> } | undefined = d.messages.slice(0, i).filter((x) => x.role === 'tool' && x.content!.startsWith(`{"name": ${JSON.stringify(item.name)}, "product_id": "${item.product_id}", "variants"`)).map((x) => JSON.parse(x.content!) as { variants: Record<string, { item_id: string; options: Record<string, string> }> })[0];
          assert.ok(product, 'its product\'s details were read before');
          assert.deepEqual(product.variants[to.item_id].options, to.options, 'the variant\'s own options');
          assert.notEqual(to.item_id, item.item_id, 'another variant');
          assert.equal(line.slice(at), ` -> {"options": ${JSON.stringify(to.options).replace(/","/g, '", "').replace(/":"/g, '": "')}, "item_id": "${to.item_id}"}`, 'the tools\' JSON spacing');
        }
      });
    }
    assert.ok(variantLines >= 3, `${variantLines} variant lines`);
    assert.throws(() => lookupDrillRecord(records[0], domain, new SynthRng(1), { notes: true, variants: 1 }), /variants needs recall/);
    assert.throws(() => lookupDrillRecord(records[0], domain, new SynthRng(1), { notes: true, recallTurns: 1 }), /recallTurns needs recall/);
    assert.throws(() => lookupDrillRecord(records[0], domain, new SynthRng(1), { recall: 2 }), /notes/);
    assert.throws(() => lookupDrillRecord(records[0], domain, new SynthRng(1), { recall: 1.5, notes: true }), /recall/);
  });

  it('skips a conversation without user details and rejects bad options', async () => {
    const { domain, records } = await episodes();
    const opening: TrajectoryRecord = { messages: records[0].messages.slice(0, 2) };
    assert.equal(lookupDrillRecord(opening, domain, new SynthRng(1)), undefined);
    assert.throws(() => lookupDrillRecord(records[0], domain, new SynthRng(1), { maxOrders: 0 }), /maxOrders/);
    assert.throws(() => lookupDrillRecord(records[0], domain, new SynthRng(1), { products: 2 }), /products/);
  });
});

describe('lookup drill, short form (fresh order ids, one lookup)', () => {
  it('replaces every order id of the user details by a fresh one and looks one of them up, nothing else changed', async () => {
    const { records } = await episodes();
    const picked = new Set<number>();
    for (const r of records) {
      const d = freshOrderLookupRecord(r, new SynthRng(3));
      if (!d) continue;
      const at = d.messages.length - 2;
      assert.deepEqual(d.messages.slice(0, at), r.messages.slice(0, at), 'the opening is the expert\'s');
      const before = JSON.parse(r.messages[at].content!) as { orders: string[] };
      const after = JSON.parse(d.messages[at].content!) as { orders: string[] };
      assert.deepEqual({ ...after, orders: before.orders }, before, 'only the order ids differ');
      assert.equal(after.orders.length, before.orders.length);
      assert.ok(after.orders.every((o) => /^#W[1-9]\d{6}$/.test(o) && !before.orders.includes(o)), after.orders.join());
      const call = d.messages[at + 1].toolCalls![0];
      assert.equal(call.name, 'get_order_details');
      const i = after.orders.indexOf(call.arguments.order_id as string);
      assert.ok(i >= 0, 'one of the fresh ids');
      picked.add(i);
      assert.deepEqual(freshOrderLookupRecord(r, new SynthRng(3)), d, 'deterministic for a seed');
    }
    assert.ok(picked.size >= 2, 'not always the same place in the list');
  });
});
