import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { Orchestrator } from '../../../src/tooluse/orchestrator.ts';
import { isUserStop, STOP_TOKEN, TRANSFER_MESSAGE, TRANSFER_TOKEN, userEpisodeContext, type UserViewTurn } from '../../../src/tooluse/user.ts';
import { createRetailDomain } from '../../../src/domains/retail/domain.ts';
import { SynthRng } from '../../../src/domains/retail/synth/rng.ts';
import { generateTasks } from '../../../src/domains/retail/synth/task-gen.ts';
import { changesMind, initialVersion } from '../../../src/domains/retail/synth/scenario.ts';
import { proposalMatches, ScriptedRetailUser } from '../../../src/domains/retail/synth/user-sim.ts';
import { generateWorld } from '../../../src/domains/retail/synth/world.ts';

const world = generateWorld(31, { products: 40, users: 150, orders: 400 });
const domain = createRetailDomain({ db: world, policy: 'policy' });
const tasks = generateTasks(world, 17, { count: 66 }).tasks;

function fuzzText(rng: SynthRng): string {
  switch (rng.int(0, 7)) {
    case 0:
      return '';
    case 1:
      return '   \n\t ';
    case 2:
      return Array.from({ length: rng.int(1, 40) }, () => String.fromCharCode(rng.int(0, 0xffff))).join('');
    case 3:
      return `Please confirm (yes/no)? cancel #W${rng.digits(7)} ${rng.digits(10)} gift_card_${rng.digits(7)}`;
    case 4:
      return 'What is your email and zip code?';
    case 5:
      return "I'm sorry, I can't do that.";
    case 6:
      return 'What is the reason? Which payment method? Which order id?';
    default:
      return '{"order_id": "#W0000000"} Error: Order not found';
  }
}

describe('scripted user', () => {
  it('survives fuzzed agent texts without throwing, always answers with text, and ends within its turn bound', () => {
    const user = new ScriptedRetailUser(undefined, { maxTurns: 25 });
    const rng = new SynthRng(4);
    for (const task of tasks) {
      const session = user.start(userEpisodeContext(task, rng.nextU32()));
      const convo: UserViewTurn[] = [{ role: 'user', content: 'Hi! How can I help you today?' }];
      let ended = false;
      for (let turn = 0; turn < 40 && !ended; turn++) {
        const reply = session.respond(convo);
        assert.equal(typeof reply, 'string');
        assert.ok(reply.trim().length > 0, 'never an empty message');
        convo.push({ role: 'assistant', content: reply }, { role: 'user', content: fuzzText(rng) });
        ended = isUserStop(reply);
      }
      assert.ok(ended, `task ${task.id}: the user ended the episode`);
    }
  });

  it('ends real episodes against an agent that sends garbage texts and wrong tool calls', async () => {
    const rng = new SynthRng(9);
    for (const task of tasks.slice(0, 30)) {
      const o = new Orchestrator(domain, task, new ScriptedRetailUser(), { maxSteps: 400, maxErrors: 1000, seed: rng.nextU32() });
      await o.start();
      while (!o.done) {
        if (rng.chance(0.4)) await o.act({ toolCalls: [{ name: rng.pick(['get_order_details', 'cancel_pending_order', 'no_such_tool']), arguments: { order_id: rng.digits(5) } }] });
        else {
          const text = fuzzText(rng);
          // The orchestrator itself rejects blank agent turns; the user sees blank texts in the first test.
          await o.act({ content: text.trim() ? text : 'hm' });
        }
      }
      assert.equal(o.terminationReason, 'user_stop', `task ${task.id}`);
    }
  });

  it('hands off with ###TRANSFER### after the transfer message', () => {
    const session = new ScriptedRetailUser().start(userEpisodeContext(tasks[0]!, 1));
    session.respond([{ role: 'user', content: 'Hi!' }]);
    const reply = session.respond([{ role: 'user', content: 'Hi!' }, { role: 'assistant', content: 'x' }, { role: 'user', content: TRANSFER_MESSAGE }]);
    assert.equal(reply, TRANSFER_TOKEN);
  });

  it('reveals identity only when asked, and says yes only to the action it wants', () => {
    const task = tasks.find((t) => t.longrun.family === 'cancel' && t.longrun.identity.knowsEmail)!;
    const s = task.longrun;
    const r = s.requests[0]!;
    assert.equal(r.kind, 'cancel');
    if (r.kind !== 'cancel') return;
    const session = new ScriptedRetailUser().start(userEpisodeContext(task, 2));
    const convo: UserViewTurn[] = [{ role: 'user', content: 'Hi! How can I help you today?' }];
    const say = (agent: string): string => {
      const reply = session.respond(convo);
      convo.push({ role: 'assistant', content: reply }, { role: 'user', content: agent });
      return reply;
    };
    const opening = say('Could you give me your email address?');
    assert.ok(!opening.includes(s.identity.email) && !opening.includes(s.identity.zip), 'no identity in the opening');
    assert.ok(say('Which order?').includes(s.identity.email));
    const wrong = `Please confirm: cancel order #W0000000 with the reason '${r.reason}' ${'(yes/no)'}?`;
    say(wrong);
    assert.match(say(`Please confirm: cancel order ${r.order.orderId} with the reason '${r.reason}' (yes/no)?`), /^No/);
    assert.match(say('Done.'), /^Yes/);
    const last = session.respond(convo);
    assert.ok(last.includes(STOP_TOKEN), 'stops after its only request is done');
  });

  it('with maxRefusals, leaves at the proposal it turns down that many times, and not for a change of mind', () => {
    const task = tasks.find((t) => t.longrun.family === 'cancel')!;
    const r = task.longrun.requests[0]!;
    assert.equal(r.kind, 'cancel');
    if (r.kind !== 'cancel') return;
    const wrong = `Please confirm: cancel order #W0000000 with the reason '${r.reason}' (yes/no)?`;
    const play = (user: ScriptedRetailUser, proposals: number): string[] => {
      const session = user.start(userEpisodeContext(task, 3));
      const convo: UserViewTurn[] = [{ role: 'user', content: 'Hi! How can I help you today?' }];
      const replies = [session.respond(convo)];
      for (let i = 0; i < proposals; i++) {
        convo.push({ role: 'assistant', content: replies[replies.length - 1]! }, { role: 'user', content: wrong });
        replies.push(session.respond(convo));
      }
      return replies;
    };
    const patient = play(new ScriptedRetailUser(), 6);
    assert.ok(patient.slice(1).every((x) => /^No/.test(x) && !isUserStop(x)), 'the default user turns proposals down as often as they come');
    const leaves = play(new ScriptedRetailUser(undefined, { maxRefusals: 3 }), 3);
    assert.ok(leaves.slice(1, 3).every((x) => /^No/.test(x) && !isUserStop(x)));
    assert.match(leaves[3]!, /^No/);
    assert.ok(isUserStop(leaves[3]!), 'the third refusal ends the episode');
    // The same seed gives the same words until it leaves.
    assert.deepEqual(leaves.slice(0, 3), patient.slice(0, 3));
    assert.throws(() => new ScriptedRetailUser(undefined, { maxRefusals: 0 }), /maxRefusals must be at least 1/);

    // The first version of a request whose user changes its mind is not turned down: it does not count.
    const revising = tasks.find((t) => t.longrun.authenticates && changesMind(t.longrun.requests[0]!))!;
    const first = initialVersion(revising.longrun.requests[0]!);
    const right = revising.longrun.requests[0]!;
    const proposal = (q: typeof first): string => {
      switch (q.kind) {
        case 'modify_items':
        case 'exchange':
          return `${q.kind === 'exchange' ? 'exchange' : 'modify'} in order ${q.order.orderId}: ${q.changes.map((c) => `${c.itemId} -> ${c.newItemId}`).join('; ')}, paid with ${q.payment.paymentMethodId} (yes/no)`;
        case 'return':
          return `return in order ${q.order.orderId}: ${q.items.map((i) => i.itemId).join(', ')}, refund to ${q.payment.paymentMethodId} (yes/no)`;
        default:
          throw new Error(`no proposal written for ${q.kind}`);
      }
    };
    assert.ok(proposalMatches(first, proposal(first)) && proposalMatches(right, proposal(right)));
    const session = new ScriptedRetailUser(undefined, { maxRefusals: 1 }).start(userEpisodeContext(revising, 5));
    const convo: UserViewTurn[] = [{ role: 'user', content: 'Hi! How can I help you today?' }];
    const say = (agent: string): string => {
      const reply = session.respond(convo);
      convo.push({ role: 'assistant', content: reply }, { role: 'user', content: agent });
      return reply;
    };
    say(proposal(first));
    const changed = say(proposal(right));
    assert.ok(!isUserStop(changed), 'a change of mind is not a refusal');
    assert.match(say('Done.'), /^Yes/);
  });

  it('matches proposals on order, items, payment method, address and reason', () => {
    for (const task of tasks) {
      for (const r of task.longrun.requests) {
        if (r.kind === 'modify_items' || r.kind === 'exchange') {
          const ids = r.changes.map((c) => `${c.itemId} -> ${c.newItemId}`).join('; ');
          const verb = r.kind === 'exchange' ? 'exchange' : 'modify';
          const good = `${verb} in order ${r.order.orderId}: ${ids}, paid with ${r.payment.paymentMethodId} (yes/no)`;
          assert.ok(proposalMatches(r, good));
          assert.ok(!proposalMatches(r, good.replace(r.payment.paymentMethodId, 'paypal_0000000')));
          assert.ok(!proposalMatches(r, good.replace(r.changes[0]!.newItemId, '0000000001')));
          assert.ok(!proposalMatches(r, good.replace(verb, r.kind === 'exchange' ? 'return' : 'exchange')));
        }
        if (r.kind === 'modify_user_address') {
          const a = r.address;
          const good = `update your default address to ${a.address1}, ${a.address2}, ${a.city}, ${a.state} ${a.zip}, ${a.country} (yes/no)`;
          assert.ok(proposalMatches(r, good));
          assert.ok(!proposalMatches(r, good.replace(a.zip, '00000')));
        }
      }
    }
  });
});
