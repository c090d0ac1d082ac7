import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { isSuccess } from '../../../src/tooluse/metrics.ts';
import { createRetailDomain } from '../../../src/domains/retail/domain.ts';
import { EpisodeRunner } from '../../../src/domains/retail/synth/episode.ts';
import { ExpertAgent, itemEntries, itemNote } from '../../../src/domains/retail/synth/expert.ts';
import { SynthRng } from '../../../src/domains/retail/synth/rng.ts';
import type { Message } from '../../../src/tooluse/messages.ts';
import { RandomAgent } from '../../../src/domains/retail/synth/random-agent.ts';
import { runRollouts } from '../../../src/domains/retail/synth/rollouts.ts';
import { TASK_FAMILIES } from '../../../src/domains/retail/synth/scenario.ts';
import { generateTasks } from '../../../src/domains/retail/synth/task-gen.ts';
import { ScriptedRetailUser } from '../../../src/domains/retail/synth/user-sim.ts';
import { generateWorld } from '../../../src/domains/retail/synth/world.ts';

/** 1,000 tasks over two worlds, every family, difficulties 1–3. */
const sets = [11, 12].map((seed) => {
  const world = generateWorld(seed);
  return { world, domain: createRetailDomain({ db: world, policy: 'policy' }), tasks: generateTasks(world, seed * 7, { count: 500 }).tasks };
});

describe('expert and random agents against the scripted user', () => {
  it('the expert solves at least 99% of 1,000 generated tasks across all families', async () => {
    let episodes = 0;
    let successes = 0;
    const failures: string[] = [];
    const families = new Set<string>();
    for (const { domain, tasks } of sets) {
      const summary = await runRollouts({
        domain,
        tasks,
        agent: new ExpertAgent(),
        user: new ScriptedRetailUser(),
        seed: 3,
        onEpisode: (t, task) => {
          families.add(task.longrun.family);
          if (!isSuccess(t.reward)) failures.push(`${t.taskId} ${task.longrun.family} ${t.terminationReason}`);
        },
      });
      episodes += summary.episodes;
      successes += Math.round(summary.metrics.successRate * summary.episodes);
    }
    assert.equal(episodes, 1000);
    assert.deepEqual([...families].sort(), [...TASK_FAMILIES].sort());
    assert.ok(successes / episodes >= 0.99, `expert success ${successes}/${episodes}; failures: ${failures.slice(0, 10).join('; ')}`);
  });

  it('restate: the first reply names the request in the words of the later messages; every episode is otherwise the expert’s', async () => {
    const { domain, tasks } = sets[0]!;
    const runner = new EpisodeRunner({ domain, tasks: tasks.slice(0, 200), user: new ScriptedRetailUser() });
    const plain = new ExpertAgent();
    const restating = new ExpertAgent({ restate: true });
    const seen = new Set<string>();
    for (const [i, task] of tasks.slice(0, 200).entries()) {
      const a = await runner.run(plain, task.id, 40 + i);
      const b = await runner.run(restating, task.id, 40 + i);
      assert.equal(b.reward, a.reward, task.id);
      assert.equal(b.messages.length, a.messages.length, `${task.id}: the same turns`);
      const first = (t: typeof a) => t.messages.find((m) => m.role === 'assistant' && typeof m.content === 'string' && m.content.includes('verify your identity'));
      const [fa, fb] = [first(a), first(b)];
      assert.ok(fa && fb, `${task.id}: both ask for the identity`);
      const said = /^I can help with that: you would like to (.+?)\. First, /.exec(String(fb.content));
      assert.ok(said, `${task.id}: ${String(fb.content)}`);
      assert.equal(String(fb.content).replace(`: you would like to ${said[1]}.`, '.'), fa.content, 'the rest of the reply is unchanged');
      seen.add(said[1]!);
      // The phrase is the one the later proposal starts with (the words a decision far back can copy).
      const proposal = b.messages.find((m) => m.role === 'assistant' && typeof m.content === 'string' && m.content.includes('(yes/no)'));
      const kind = task.longrun.requests[0]?.kind;
      if (proposal && task.longrun.family !== 'multi' && task.longrun.family !== 'forbidden') {
        const words: Record<string, [string, RegExp]> = {
          cancel: ['cancel an order', /details: cancel order/],
          modify_payment: ['pay for an order with another payment method', /change: pay for order/],
          modify_address: ['set the shipping address of an order', /change: set the shipping address/],
          modify_user_address: ['update your default address', /change: update your default address/],
          modify_items: ['modify items in an order', /details: modify in order/],
          exchange: ['exchange items in an order', /details: exchange in order/],
          return: ['return items from an order', /details: return from order/],
        };
        const [phrase, re] = words[String(kind)] ?? [];
        assert.ok(phrase && re, `${task.id}: a proposal for ${String(kind)}`);
        assert.equal(said[1], phrase, task.id);
        assert.match(String(proposal.content), re, task.id);
      }
    }
    await runner.close();
    assert.ok(seen.size >= 10, `restatements seen: ${[...seen].join(' | ')}`);
  });

  it('notes: the expert writes, before each copy, the tool text its ids follow; every episode is otherwise the expert’s', async () => {
    const { domain, tasks } = sets[0]!;
    const runner = new EpisodeRunner({ domain, tasks: tasks.slice(0, 200), user: new ScriptedRetailUser() });
    const plain = new ExpertAgent({ restate: true });
    const noting = new ExpertAgent({ restate: true, notes: true });
    const where = new Map<string, number>();
    const ids = (text: string) => [...text.matchAll(/"(product_id|item_id|user_id)": "([^"]+)"/g)].map((m) => [m[1]!, m[2]!] as const);
    for (const [i, task] of tasks.slice(0, 200).entries()) {
      const a = await runner.run(plain, task.id, 40 + i);
      const b = await runner.run(noting, task.id, 40 + i);
      assert.equal(b.reward, a.reward, task.id);
      // Strip the notes: the same conversation, message for message.
      assert.deepEqual(b.messages.map((m) => (m.role === 'assistant' ? { ...m, reasoning: undefined } : m)), a.messages.map((m) => (m.role === 'assistant' ? { ...m, reasoning: undefined } : m)), task.id);
      assert.ok(a.messages.every((m) => m.role !== 'assistant' || m.reasoning === undefined), 'no notes unless asked');
      b.messages.forEach((m, k) => {
        if (m.role !== 'assistant' || m.reasoning === undefined) return;
        const before = b.messages.slice(0, k).filter((x) => x.role === 'tool').map((x) => String(x.content)).join('\n');
        const action = m.toolCalls?.[0]?.name ?? (/Here are the details: (\w+)/.exec(String(m.content))?.[1] ?? 'other');
        where.set(action, (where.get(action) ?? 0) + 1);
        for (const line of m.reasoning.split('\n')) {
          // The old item (or the user id) exactly as the tools printed it: every id follows the same text there.
          const head = line.split(' -> ')[0]!;
          assert.ok(before.includes(head.slice(1, -1)), `${task.id}: note ${head} not in the tool results before it`);
          // A proposal names every id of its note; a call takes its id argument from the note.
          const call = m.toolCalls?.[0];
          if (call) {
            const key = call.name === 'get_product_details' ? 'product_id' : 'user_id';
            assert.ok(ids(line).some(([k, id]) => k === key && call.arguments[key] === id), `${task.id}: ${call.name} ${JSON.stringify(call.arguments)} after ${line}`);
          } else for (const [key, id] of ids(line)) if (key !== 'product_id') assert.ok(String(m.content).includes(id), `${task.id}: the proposal after the note names ${key} ${id}`);
          // The new variant: its options, then its id, as the product details list it.
          const to = line.split(' -> ')[1];
          if (to !== undefined) {
            const [, options, newId] = /^\{"options": (\{.*\}), "item_id": "(\d+)"\}$/.exec(to) ?? [];
            assert.ok(options && newId, `${task.id}: ${to}`);
            assert.ok(before.includes(`"${newId}": {"item_id": "${newId}", "options": ${options}`), `${task.id}: variant ${newId} ${options}`);
          }
        }
      });
    }
    await runner.close();
    for (const action of ['get_product_details', 'exchange', 'modify', 'return', 'modify_user_address']) assert.ok((where.get(action) ?? 0) > 0, `notes by action: ${JSON.stringify([...where])}`);
  });

  it('walk: before an item proposal the note repeats the product\'s variants as printed, up to the one wanted, then names it id first', async () => {
    const { domain, tasks } = sets[0]!;
    const items = tasks.filter((t) => t.longrun.family === 'exchange' || t.longrun.family === 'modify_items').slice(0, 40);
    assert.ok(items.length >= 20);
    const runner = new EpisodeRunner({ domain, tasks: items, user: new ScriptedRetailUser() });
    const noting = new ExpertAgent({ restate: true, notes: true });
    const walking = new ExpertAgent({ restate: true, notes: true, walk: true });
    let walks = 0;
    for (const [i, task] of items.entries()) {
      const a = await runner.run(noting, task.id, 70 + i);
      const b = await runner.run(walking, task.id, 70 + i);
      assert.equal(b.reward, a.reward, task.id);
      assert.deepEqual(b.messages.map((m) => (m.role === 'assistant' ? { ...m, reasoning: undefined } : m)), a.messages.map((m) => (m.role === 'assistant' ? { ...m, reasoning: undefined } : m)), task.id);
      b.messages.forEach((m, k) => {
        if (m.role !== 'assistant' || !/^Here are the details: (exchange|modify)/.test(String(m.content)) || m.reasoning === undefined) return;
        const before = b.messages.slice(0, k).filter((x) => x.role === 'tool').map((x) => String(x.content)).join('\n');
        const lines = m.reasoning.split('\n');
        // per pair: the item and the options wanted, the variants as printed up to the one wanted, the item and it
        let at = 0;
        while (at < lines.length) {
          const head = /^(\{.*\}) -> \{"options": (\{.*\})\}$/.exec(lines[at]!);
          assert.ok(head, `${task.id}: walk head ${lines[at]}`);
          let end = at + 1;
          while (end < lines.length && lines[end]!.startsWith('"')) {
            assert.ok(before.includes(lines[end]!), `${task.id}: walk entry ${lines[end]} is the printed text`);
            end++;
          }
          assert.ok(end > at + 1, `${task.id}: an empty walk`);
          const last = /^"(\d+)": \{"item_id": "(\d+)", "options": (\{.*\})$/.exec(lines[end - 1]!);
          assert.ok(last && last[1] === last[2] && last[3] === head[2], `${task.id}: the walk ends at the variant wanted: ${lines[end - 1]}`);
          assert.equal(lines[end], `${head[1]} -> {"item_id": "${last[1]}", "options": ${head[2]}}`);
          assert.ok(String(m.content).includes(last[1]!), `${task.id}: the proposal names ${last[1]}`);
          // the entries before it are the product's other variants, in the printed order
          const entries = lines.slice(at + 1, end);
          const printed = entries.map((e) => before.indexOf(e));
          assert.deepEqual([...printed].sort((x, y) => x - y), printed, `${task.id}: printed order`);
          walks++;
          at = end + 1;
        }
      });
    }
    await runner.close();
    assert.ok(walks >= 10, `walks: ${walks}`);
    assert.throws(() => new ExpertAgent({ walk: true }), /walk writes notes/);
  });

  it('itemWalk: before a product lookup the note repeats the order\'s items as printed, from the first up to the one named', async () => {
    const { domain, tasks } = sets[0]!;
    const items = [...tasks.filter((t) => t.longrun.family === 'exchange' || t.longrun.family === 'modify_items').slice(0, 40), ...tasks.filter((t) => t.longrun.family === 'return').slice(0, 30)];
    const runner = new EpisodeRunner({ domain, tasks: items, user: new ScriptedRetailUser() });
    const noting = new ExpertAgent({ restate: true, notes: true });
    const walking = new ExpertAgent({ restate: true, notes: true, itemWalk: true });
    let walks = 0, longer = 0, rereads = 0, returns = 0;
    for (const [i, task] of items.entries()) {
      const a = await runner.run(noting, task.id, 90 + i);
      const b = await runner.run(walking, task.id, 90 + i);
      assert.equal(b.reward, a.reward, task.id);
      // the same conversation, but for the orders read again right before a walk
      const bare = (ms: typeof a.messages) => ms.map((m) => (m.role === 'assistant' ? { ...m, reasoning: undefined } : m));
      const again = new Set<number>();
      b.messages.forEach((m, k) => {
        const c = m.role === 'assistant' ? m.toolCalls?.[0] : undefined;
        const next = b.messages[k + 2];
        const walksNext = next?.role === 'assistant' && (next.toolCalls?.[0]?.name === 'get_product_details' || /^Here are the details: return/.test(String(next.content)));
        if (c?.name === 'get_order_details' && walksNext && b.messages.slice(0, k).some((x) => x.role === 'assistant' && x.toolCalls?.[0]?.name === 'get_order_details' && x.toolCalls[0].arguments.order_id === c.arguments.order_id)) {
          again.add(k).add(k + 1);
          rereads++;
        }
      });
      const noIds = (ms: Message[]) => bare(ms).map((m) => (m.role === 'assistant' ? { ...m, toolCalls: m.toolCalls?.map((c) => ({ ...c, id: undefined })) } : { ...m, id: undefined }));
      assert.deepEqual(noIds(b.messages.filter((_, k) => !again.has(k))), noIds(a.messages), task.id);
      b.messages.forEach((m, k) => {
        if (m.role !== 'assistant') return;
        if (/^Here are the details: return/.test(String(m.content)) && m.reasoning !== undefined) {
          // the items as printed up to the last one returned, then the ones returned, whose ids the proposal names
          const lines = m.reasoning.split('\n');
          const printed = [...b.messages.slice(0, k)].reverse().find((x) => x.role === 'tool' && String(x.content).startsWith('{"order_id"'));
          const text = String(printed?.content);
          const entries = lines.filter((l) => l.includes('"price": '));
          const named = lines.slice(entries.length).map((l) => JSON.parse(l) as { name: string; product_id: string; item_id: string });
          assert.ok(entries.length >= 1 && named.length >= 1 && text.includes(`"items": [${entries.join(', ')}`), `${task.id}: a return walk from the first item`);
          const walked = (it: (typeof named)[number], e: string) => e.startsWith(`${itemNote(it).slice(0, -1)}, `);
          assert.ok(named.every((it) => String(m.content).includes(it.item_id) && entries.some((e) => walked(it, e))), `${task.id}: the items returned are walked and proposed`);
          assert.ok(named.some((it) => walked(it, entries[entries.length - 1]!)), `${task.id}: the walk stops at an item returned`);
          returns++;
          return;
        }
        const c = m.toolCalls?.[0];
        if (c?.name !== 'get_product_details' || m.reasoning === undefined) return;
        const orderText = b.messages[k - 1];
        assert.ok(orderText?.role === 'tool' && String(orderText.content).startsWith('{"order_id"'), `${task.id}: the order's details right before the walk`);
        const printed = String(orderText.content);
        const lines = m.reasoning.split('\n');
        // the items as printed, in order, from the first; the last is the item looked up
        const at = lines.map((l) => printed.indexOf(l));
        assert.ok(at.every((p) => p >= 0), `${task.id}: every entry is printed text`);
        assert.ok(printed.startsWith(`"items": [${lines[0]}`, printed.indexOf('"items": [')), `${task.id}: the walk starts at the first item`);
        assert.ok(printed.includes(lines.join(', ')), `${task.id}: consecutive items`);
        const last = JSON.parse(lines[lines.length - 1]!) as { product_id: string; name: string };
        assert.equal(last.product_id, c.arguments.product_id);
        const asked = b.messages.slice(0, k).filter((x) => x.role === 'user').map((x) => String(x.content).toLowerCase()).join('\n');
        assert.ok(asked.includes(last.name.toLowerCase()), `${task.id}: the customer named ${last.name}`);
        walks++;
        if (lines.length > 1) longer++;
      });
    }
    await runner.close();
    assert.ok(walks >= 10 && longer >= 3 && rereads >= 1 && returns >= 10, `walks: ${walks}, longer than one entry: ${longer}, orders read again: ${rereads}, return walks: ${returns}`);
    assert.throws(() => new ExpertAgent({ itemWalk: true }), /itemWalk writes notes/);
    assert.deepEqual(itemEntries('{"order_id": "#W1", "items": [{"name": "A", "options": {"x": "}"}}, {"name": "B"}], "status": "x"}', 1), ['{"name": "A", "options": {"x": "}"}}', '{"name": "B"}']);
    assert.equal(itemEntries('{"order_id": "#W1", "items": [{"name": "A"}]}', 1), null);
    assert.equal(itemEntries('Error: Order not found', 0), null);
  });

  it("itemWalk 'printed': the walk is the order details' own text from the first item to the one named, the episodes otherwise the line walk's", async () => {
    const { domain, tasks } = sets[0]!;
    const items = [...tasks.filter((t) => t.longrun.family === 'exchange' || t.longrun.family === 'modify_items').slice(0, 20), ...tasks.filter((t) => t.longrun.family === 'return').slice(0, 15)];
    const runner = new EpisodeRunner({ domain, tasks: items, user: new ScriptedRetailUser() });
    const lines = new ExpertAgent({ restate: true, notes: true, itemWalk: true });
    const printed = new ExpertAgent({ restate: true, notes: true, itemWalk: 'printed' });
    let lookups = 0, returns = 0, several = 0;
    for (const [i, task] of items.entries()) {
      const a = await runner.run(lines, task.id, 300 + i);
      const b = await runner.run(printed, task.id, 300 + i);
      assert.equal(b.reward, a.reward, task.id);
      assert.equal(b.messages.length, a.messages.length, task.id);
      b.messages.forEach((m, k) => {
        const n = a.messages[k]!;
        assert.equal(m.role, n.role);
        if (m.role !== 'assistant' || n.role !== 'assistant') return assert.equal(m.content, n.content, `${task.id} message ${k}`);
        assert.equal(m.content, n.content, `${task.id} message ${k}`);
        assert.deepEqual(m.toolCalls?.map((c) => [c.name, c.arguments]), n.toolCalls?.map((c) => [c.name, c.arguments]));
        if (m.reasoning === n.reasoning) return;
        // Only the walk differs: the line walk's entries joined with ', ' instead of newlines.
        const isReturn = /^Here are the details: return/.test(String(m.content));
        const walkLines = String(n.reasoning).split('\n').filter((l) => !isReturn || l.includes('"price": '));
        const walk = walkLines.join(', ');
        assert.ok(String(m.reasoning).startsWith(walk), `${task.id}: the printed walk is the line walk joined`);
        const orderText = [...b.messages.slice(0, k)].reverse().find((x) => x.role === 'tool' && String(x.content).startsWith('{"order_id"'));
        assert.ok(String(orderText?.content).includes(`"items": [${walk}`), `${task.id}: a verbatim substring from the first item`);
        if (isReturn) {
          assert.equal(String(m.reasoning).split('\n').length, String(n.reasoning).split('\n').length - walkLines.length + 1);
          returns++;
        } else {
          assert.equal(m.reasoning, walk);
          lookups++;
        }
        if (walkLines.length > 1) several++;
      });
    }
    await runner.close();
    assert.ok(lookups >= 5 && returns >= 5 && several >= 3, `lookup walks ${lookups}, return walks ${returns}, of several items ${several}`);
  });

  it('the expert also solves long multi-request conversations (difficulty 4–5)', async () => {
    const { domain, world } = sets[1]!;
    const long = generateTasks(world, 40, { count: 110, difficulty: [4, 5] }).tasks;
    assert.ok(long.filter((t) => t.longrun.family === 'multi').every((t) => t.longrun.requests.length >= 4));
    const summary = await runRollouts({ domain, tasks: long, agent: new ExpertAgent(), user: new ScriptedRetailUser(), seed: 8 });
    assert.ok(summary.metrics.successRate >= 0.99, `success ${summary.metrics.successRate}`);
    assert.ok(summary.meanSteps > 20, `mean steps ${summary.meanSteps}`);
  });

  it('the expert asks for confirmation before every write and makes at most one write per request', async () => {
    const { domain, tasks } = sets[0]!;
    const runner = new EpisodeRunner({ domain, tasks, user: new ScriptedRetailUser() });
    const writes = new Set(domain.tools.filter((t) => t.kind === 'write').map((t) => t.name));
    for (const task of tasks.slice(0, 120)) {
      const t = await runner.run(new ExpertAgent(), task.id, 1);
      let confirmedSinceWrite = false;
      let writeCount = 0;
      for (const m of t.messages) {
        if (m.role === 'user' && /^(Yes)/.test(m.content ?? '')) confirmedSinceWrite = true;
        if (m.role === 'assistant' && m.toolCalls) {
          assert.equal(m.toolCalls.length, 1, 'one tool call at a time');
          assert.equal(m.content, null, 'no text with a tool call');
          if (writes.has(m.toolCalls[0]!.name)) {
            assert.ok(confirmedSinceWrite, `task ${task.id}: ${m.toolCalls[0]!.name} without a fresh yes`);
            confirmedSinceWrite = false;
            writeCount++;
          }
        }
      }
      assert.ok(writeCount <= task.longrun.requests.length);
    }
  });

  it('a random agent scores near 0 (it only gets tasks whose right outcome is to change nothing)', async () => {
    const { domain, tasks } = sets[1]!;
    const summary = await runRollouts({ domain, tasks: tasks.slice(0, 220), agent: new RandomAgent(), user: new ScriptedRetailUser(), seed: 5 });
    assert.ok(summary.metrics.avgReward < 0.15, `random mean reward ${summary.metrics.avgReward}`);
    for (const [family, v] of Object.entries(summary.byFamily)) if (family !== 'failed_auth') assert.ok(v.successRate <= 0.05, `${family}: ${v.successRate}`);
  });

  it('episodes are deterministic given the seed', async () => {
    const { domain, tasks } = sets[0]!;
    const runner = new EpisodeRunner({ domain, tasks, user: new ScriptedRetailUser() });
    for (const agent of [new ExpertAgent(), new RandomAgent()]) {
      const a = await runner.run(agent, tasks[5]!.id, 77);
      const b = await runner.run(agent, tasks[5]!.id, 77);
      assert.deepEqual(a.messages, b.messages);
    }
  });

  it('the expert copes with wrong tool results and odd user texts without throwing', () => {
    const rng = new SynthRng(21);
    const junk = ['', 'null', '[]', '{}', '{"order_id": 5}', '{"user_id": "x", "orders": "no"}', 'Error: Order not found', 'Transfer successful', '{"name": "T", "product_id": "1", "variants": 3}'];
    const texts = ['', 'yes', 'no', 'cancel #W1234567 because', 'my email is a@b.co', 'I\'m Ann Lee, zip code 12345', 'exchange "x"', '\u0000\uffff'];
    for (let episode = 0; episode < 200; episode++) {
      const session = new ExpertAgent().start({ task: sets[0]!.tasks[0]!, tools: [], seed: episode });
      let observed: Message[] = [{ role: 'user', content: rng.pick(texts), toolCalls: null }];
      for (let turn = 0; turn < 30; turn++) {
        const t = session.act(observed);
        const calls = t.toolCalls ?? [];
        assert.ok((typeof t.content === 'string' && t.content.length > 0) !== calls.length > 0, 'a text or a tool call, not both');
        observed = calls.length
          ? [{ role: 'tool', id: 'c', content: rng.pick(junk), requestor: 'assistant', error: rng.chance(0.3) }]
          : [{ role: 'user', content: rng.pick(texts), toolCalls: null }];
      }
    }
  });
});
