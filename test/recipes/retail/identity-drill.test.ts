import assert from 'node:assert/strict';
import { test } from 'node:test';
import { FIRST_NAMES, LAST_NAMES } from '../../../src/domains/retail/synth/catalog-data.ts';
import { identityDrillRecords, identityOpening } from '../../../src/recipes/retail/identity-drill.ts';
import { parseRunFile } from '../../../src/recipes/train-setup.ts';
import type { TrajectoryRecord } from '../../../src/rl/sft-data.ts';

const ask = 'I can help with that. First, could you please provide your email address, or your first and last name and zip code, so I can verify your identity?';
const expert = (request: string, first: string): TrajectoryRecord => ({
  taskId: request,
  messages: [
    { role: 'assistant', content: 'Hi! How can I help you today?' },
    { role: 'user', content: request },
    { role: 'assistant', content: ask },
    { role: 'user', content: 'My email is mason.moore5889@example.com.' },
    { role: 'assistant', content: null, toolCalls: [{ id: 'call_0', name: first, arguments: { email: 'mason.moore5889@example.com' } }] },
    { role: 'tool', id: 'call_0', content: 'mason_moore_5889' },
    { role: 'assistant', content: 'Done.' },
  ],
});

test('identity opening: the messages before the identity answer, only when the first tool call checks identity', () => {
  const e = expert('Cancel #W1234567, please.', 'find_user_id_by_email');
  assert.deepEqual(identityOpening(e), e.messages.slice(0, 3));
  assert.equal(identityOpening(expert('x', 'get_order_details')), undefined);
  assert.equal(identityOpening({ messages: [{ role: 'user', content: 'hi' }] }), undefined);
});

test('identity drill: fresh people, the expert moves with their details copied, deterministic for a seed', () => {
  const experts = [expert('Cancel #W1234567, please.', 'find_user_id_by_email'), expert('Return #W7654321.', 'find_user_id_by_name_zip'), expert('no', 'get_order_details')];
  const a = identityDrillRecords(experts, { documents: 300, seed: 3 });
  assert.deepEqual(a, identityDrillRecords(experts, { documents: 300, seed: 3 }));
  assert.notDeepEqual(a, identityDrillRecords(experts, { documents: 300, seed: 4 }));
  const firsts = new Set(FIRST_NAMES), lasts = new Set(LAST_NAMES);
  let byEmail = 0, byName = 0;
  const people = new Set<string>();
  for (const r of a) {
    const m = r.messages;
    assert.equal(m.length, 7);
    assert.ok(m[1].content === 'Cancel #W1234567, please.' || m[1].content === 'Return #W7654321.', 'opening from an identity-checking expert');
    const said = m[3].content!;
    const [find] = m[4].toolCalls!;
    const userId = m[5].content!;
    assert.match(userId, /^[a-z]+_[a-z]+_[1-9]\d{3}$/);
    assert.deepEqual(m[6].toolCalls, [{ id: 'call_1', name: 'get_user_details', arguments: { user_id: userId } }]);
    const [first, last, digits] = userId.split('_');
    people.add(userId);
    if (find.name === 'find_user_id_by_email') {
      byEmail++;
      assert.equal(find.arguments.email, `${first}.${last}${digits}@example.com`);
      assert.ok(said.includes(find.arguments.email as string), said);
    } else {
      byName++;
      assert.equal(find.name, 'find_user_id_by_name_zip');
      const { first_name: f, last_name: l, zip } = find.arguments as Record<string, string>;
      assert.ok(firsts.has(f) && lasts.has(l), `${f} ${l}`);
      assert.equal(`${f}_${l}`.toLowerCase(), `${first}_${last}`);
      assert.match(zip, /^\d{5}$/);
      assert.ok(said.includes(`${f} ${l}`) && said.includes(zip), said);
    }
  }
  assert.ok(byEmail > 100 && byName > 100, `${byEmail} by email, ${byName} by name`);
  assert.ok(people.size > 250, `${people.size} distinct people`);
  assert.throws(() => identityDrillRecords([experts[2]], { documents: 1 }), /no expert trajectory starts with an identity check/);
  assert.throws(() => identityDrillRecords(experts, { documents: 0 }), /documents must be a positive integer/);
});

test('identity drill byName: the share of name-and-zip identifications; unset draws as before', () => {
  const experts = [expert('Cancel #W1234567, please.', 'find_user_id_by_email')];
  const byName = (rs: TrajectoryRecord[]) => rs.filter((r) => r.messages[4].toolCalls![0].name === 'find_user_id_by_name_zip').length;
  assert.equal(byName(identityDrillRecords(experts, { documents: 200, seed: 5, byName: 1 })), 200);
  assert.equal(byName(identityDrillRecords(experts, { documents: 200, seed: 5, byName: 0 })), 0);
  const most = byName(identityDrillRecords(experts, { documents: 400, seed: 5, byName: 0.8 }));
  assert.ok(most > 280 && most < 360, `${most} of 400 by name at 0.8`);
  // A person who knows the email may still give name and zip; one who does not says so first.
  const all = identityDrillRecords(experts, { documents: 200, seed: 5, byName: 1 });
  assert.ok(all.some((r) => r.messages[3].content!.startsWith("I don't remember my email.")) && all.some((r) => !r.messages[3].content!.startsWith("I don't remember")));
  assert.throws(() => identityDrillRecords(experts, { documents: 1, byName: 2 }), /byName must be a probability/);
});

test('run file: retail.drills.identity is validated', () => {
  const base = { task: 'retail-synth', policy: { type: 'gpt-oss', preset: 'tiny-1m', tokenizer: 't.json' }, grpo: { data: { trainBatchSize: 1 }, trainer: { totalSteps: 1 }, rollout: { n: 2 } } };
  const sft = (identity: unknown) => ({ ...base, sft: { data: 'x.jsonl', outDir: 'out' }, retail: { drills: { identity } } });
  assert.deepEqual(parseRunFile(sft({ documents: 10 })).run.retail?.drills?.identity, { documents: 10, seed: 0 });
  assert.throws(() => parseRunFile(sft({ documents: 0 })), /documents/);
  assert.throws(() => parseRunFile(sft({ documents: 5, people: 1 })), /people|Unrecognized/i);
});
