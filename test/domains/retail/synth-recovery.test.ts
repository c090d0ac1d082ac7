import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { createRetailDomain } from '../../../src/domains/retail/domain.ts';
import { EpisodeRunner, type Trajectory } from '../../../src/domains/retail/synth/episode.ts';
import { ExpertAgent } from '../../../src/domains/retail/synth/expert.ts';
import { RecoveringAgent, SLIPPING_TOOLS } from '../../../src/domains/retail/synth/recovery.ts';
import { generateTasks } from '../../../src/domains/retail/synth/task-gen.ts';
import { ScriptedRetailUser } from '../../../src/domains/retail/synth/user-sim.ts';
import { generateWorld } from '../../../src/domains/retail/synth/world.ts';
import { createChatFormat } from '../../../src/llm/index.ts';
import { buildSftDocuments, renderTrajectory, toChatConversation, trainSftTokenizer, TrajectoryRecordSchema } from '../../../src/rl/sft-data.ts';

const world = generateWorld(41);
const domain = createRetailDomain({ db: world, policy: 'policy' });
const tasks = generateTasks(world, 7, { count: 60 }).tasks;

type AnyCall = { name: string; arguments: Record<string, unknown> };
const callsOf = (t: Trajectory, skip: ReadonlySet<number> = new Set()): AnyCall[] =>
  t.messages.flatMap((m, i) => (m.role === 'assistant' && !skip.has(i) ? (m.toolCalls ?? []).map((c) => ({ name: c.name, arguments: c.arguments as Record<string, unknown> })) : []));
const textsOf = (t: Trajectory) => t.messages.filter((m) => m.role !== 'tool' && m.content).map((m) => `${m.role}: ${m.content}`);

describe('slips and recoveries (the recovery knob)', () => {
  it('slips only on reads, out of the loss, and the episode is otherwise the expert’s own (same reward, calls and texts)', async () => {
    const runner = new EpisodeRunner({ domain, tasks, user: new ScriptedRetailUser() });
    const expert = new ExpertAgent();
    const recovering = new RecoveringAgent(expert, { rate: 0.5, maxPerEpisode: 3 });
    let slipped = 0;
    const errors: number[] = [];
    for (const [i, task] of tasks.entries()) {
      const a = await runner.run(expert, task.id, 500 + i);
      const b = await runner.run(recovering, task.id, 500 + i);
      assert.equal(b.reward, a.reward, task.id);
      assert.equal(a.reward, 1, task.id);
      const skip = new Set(b.contextOnly ?? []);
      assert.equal(skip.size, b.slips?.length ?? 0);
      assert.deepEqual(callsOf(b, skip), callsOf(a), `${task.id}: without its slips, the episode makes the expert's calls`);
      assert.deepEqual(textsOf(b), textsOf(a), `${task.id}: and says the same`);
      assert.ok((b.slips?.length ?? 0) <= 3);
      for (const at of skip) {
        const m = b.messages[at]!;
        assert.equal(m.role, 'assistant');
        const slip = m.role === 'assistant' ? m.toolCalls![0]! : null;
        assert.ok(slip && (SLIPPING_TOOLS as readonly string[]).includes(slip.name), `only reads slip, not ${slip?.name}`);
        const next = b.messages[at + 2]!;
        assert.ok(next.role === 'assistant' && next.toolCalls?.[0]?.name === slip.name, 'the recovery calls the same tool');
        assert.notDeepEqual(next.role === 'assistant' ? next.toolCalls![0]!.arguments : null, slip.arguments, 'with other arguments');
      }
      slipped += skip.size;
      errors.push(b.toolErrors - a.toolErrors);
    }
    await runner.close();
    assert.ok(slipped >= 40, `slips at rate 0.5 on 60 episodes: ${slipped}`);
    assert.ok(errors.some((e) => e > 0), 'some slips get the tool’s error');
    assert.ok(errors.every((e) => e >= 0 && e <= 3));
  });

  it('the same seed gives the same slips; rate 0 is the expert message for message', async () => {
    const runner = new EpisodeRunner({ domain, tasks, user: new ScriptedRetailUser() });
    const r = new RecoveringAgent(new ExpertAgent(), { rate: 0.4 });
    const a = await runner.run(r, tasks[3]!.id, 9);
    const b = await runner.run(r, tasks[3]!.id, 9);
    assert.deepEqual(b, a);
    const zero = await runner.run(new RecoveringAgent(new ExpertAgent(), { rate: 0 }), tasks[3]!.id, 9);
    assert.deepEqual(zero, await runner.run(new ExpertAgent(), tasks[3]!.id, 9));
    await runner.close();
    assert.throws(() => new RecoveringAgent(new ExpertAgent(), { rate: 1.5 }), /recovery rate must be a number in \[0, 1\]/);
    assert.throws(() => new RecoveringAgent(new ExpertAgent(), { rate: 0.1, maxPerEpisode: 0 }), /maxPerEpisode must be a positive integer/);
  });

  it('names: a name lookup slips on another first or last name (same initial where there is one), gets "user not found", and the reward stays the expert’s', async () => {
    const runner = new EpisodeRunner({ domain, tasks, user: new ScriptedRetailUser() });
    const expert = new ExpertAgent();
    const named = new RecoveringAgent(expert, { rate: 1, maxPerEpisode: 2, names: true });
    const plain = new RecoveringAgent(expert, { rate: 1, maxPerEpisode: 2 });
    let nameSlips = 0;
    let plainNameSlips = 0;
    let sameInitial = 0;
    for (const [i, task] of tasks.entries()) {
      const e = await runner.run(expert, task.id, 700 + i);
      const b = await runner.run(named, task.id, 700 + i);
      const c = await runner.run(plain, task.id, 700 + i);
      assert.equal(b.reward, e.reward, task.id);
      for (const at of b.contextOnly ?? []) {
        const m = b.messages[at]!;
        const slip = m.role === 'assistant' ? m.toolCalls![0]! : null;
        if (slip?.name !== 'find_user_id_by_name_zip') continue;
        const next = b.messages[at + 2]!;
        const right = (next.role === 'assistant' ? next.toolCalls![0]!.arguments : {}) as Record<string, string>;
        const wrong = slip.arguments as Record<string, string>;
        for (const key of ['first_name', 'last_name'] as const) {
          if (wrong[key] === right[key]) continue;
          nameSlips++;
          if (wrong[key]![0] === right[key]![0]) sameInitial++;
          assert.equal(wrong.zip, right.zip, 'one field wrong at a time');
          const answer = b.messages[at + 1]!;
          assert.equal(answer.role, 'tool');
          assert.match(answer.content ?? '', /not found/i, 'the wrong name finds nobody');
        }
      }
      for (const at of c.contextOnly ?? []) {
        const m = c.messages[at]!;
        const slip = m.role === 'assistant' ? m.toolCalls![0]! : null;
        const next = c.messages[at + 2]!;
        if (slip?.name === 'find_user_id_by_name_zip' && next.role === 'assistant') {
          const right = next.toolCalls![0]!.arguments as Record<string, string>;
          const wrong = slip.arguments as Record<string, string>;
          if (wrong.first_name !== right.first_name || wrong.last_name !== right.last_name) plainNameSlips++;
        }
      }
    }
    await runner.close();
    assert.ok(nameSlips >= 5, `name slips at rate 1 on 60 episodes: ${nameSlips}`);
    assert.ok(sameInitial > 0, 'some wrong names share the initial');
    assert.equal(plainNameSlips, 0, 'without names, names never slip');
  });

  it('identity: false: the identity lookups never slip, the other reads slip as before, draw for draw', async () => {
    const runner = new EpisodeRunner({ domain, tasks, user: new ScriptedRetailUser() });
    const expert = new ExpertAgent();
    const on = new RecoveringAgent(expert, { rate: 0.6, maxPerEpisode: 3, names: true });
    const explicit = new RecoveringAgent(expert, { rate: 0.6, maxPerEpisode: 3, names: true, identity: true });
    const off = new RecoveringAgent(expert, { rate: 0.6, maxPerEpisode: 3, names: true, identity: false });
    const slipped = (t: Trajectory) => (t.contextOnly ?? []).map((i) => { const m = t.messages[i]!; return m.role === 'assistant' ? m.toolCalls![0]!.name : '?'; });
    let identityOn = 0;
    let otherOff = 0;
    for (const [i, task] of tasks.entries()) {
      const a = await runner.run(on, task.id, 900 + i);
      assert.deepEqual(await runner.run(explicit, task.id, 900 + i), a, 'identity: true is the default');
      const b = await runner.run(off, task.id, 900 + i);
      assert.equal(b.reward, a.reward, task.id);
      identityOn += slipped(a).filter((n) => n.startsWith('find_user_id')).length;
      const names = slipped(b);
      assert.ok(names.every((n) => !n.startsWith('find_user_id')), `${task.id}: ${names.join(', ')}`);
      otherOff += names.length;
    }
    await runner.close();
    assert.ok(identityOn >= 15, `identity slips with the option on: ${identityOn}`);
    assert.ok(otherOff >= 20, `other slips with it off: ${otherOff}`);
  });

  it('proposals: a wrong proposal goes out first, the customer says no, the right one follows, and the reward stays the expert’s', async () => {
    const runner = new EpisodeRunner({ domain, tasks, user: new ScriptedRetailUser() });
    const expert = new ExpertAgent();
    const slipping = new RecoveringAgent(expert, { rate: 1, maxPerEpisode: 8, proposals: true });
    const kinds = new Map<string, number>();
    let proposalSlips = 0;
    for (const [i, task] of tasks.entries()) {
      const a = await runner.run(expert, task.id, 300 + i);
      const b = await runner.run(slipping, task.id, 300 + i);
      assert.equal(b.reward, a.reward, task.id);
      for (const [j, at] of (b.contextOnly ?? []).entries()) {
        const m = b.messages[at]!;
        if (m.role !== 'assistant' || m.toolCalls?.length) continue;
        proposalSlips++;
        assert.match(String(m.content), /\(yes\/no\)/);
        const reply = b.messages[at + 1]!;
        assert.equal(reply.role, 'user');
        assert.match(String(reply.content), /^No\b/, `${task.id}: the customer rejects the wrong proposal`);
        const right = b.messages[at + 2]!;
        assert.ok(right.role === 'assistant' && /\(yes\/no\)/.test(String(right.content)) && right.content !== m.content, `${task.id}: then the right proposal`);
        const kind = /^proposal with (\w+)/.exec(b.slips![j]!.detail)?.[1] ?? '?';
        kinds.set(kind, (kinds.get(kind) ?? 0) + 1);
      }
    }
    await runner.close();
    assert.ok(proposalSlips >= 20, `proposal slips at rate 1 on 60 episodes: ${proposalSlips}`);
    assert.ok(kinds.size >= 2, `kinds of wrong proposals: ${JSON.stringify([...kinds])}`);
    // Off (the default), the draws are the earlier ones.
    const plain = await runner.run(new RecoveringAgent(expert, { rate: 0.5 }), tasks[5]!.id, 77);
    assert.deepEqual(await runner.run(new RecoveringAgent(expert, { rate: 0.5, proposals: false }), tasks[5]!.id, 77), plain);
  });

  it('SFT renders a slip as context: its tokens are in the document with no loss, the recovery has loss', async () => {
    const runner = new EpisodeRunner({ domain, tasks, user: new ScriptedRetailUser() });
    let t: Trajectory | undefined;
    for (let seed = 0; !t?.contextOnly?.length; seed++) t = await runner.run(new RecoveringAgent(new ExpertAgent(), { rate: 0.5 }), tasks[1]!.id, seed);
    await runner.close();
    const record = TrajectoryRecordSchema.parse(JSON.parse(JSON.stringify(t)));
    assert.deepEqual(record.contextOnly, t.contextOnly);
    const tokenizer = trainSftTokenizer([record], { vocabSize: 600, format: 'harmony' });
    const format = createChatFormat('harmony', tokenizer);
    const conversation = toChatConversation(record);
    assert.equal(conversation.contextOnly?.size, t.contextOnly!.length);
    const withSlip = renderTrajectory(format, conversation);
    const { contextOnly: _c, ...plain } = record;
    const asDemo = renderTrajectory(format, toChatConversation(plain));
    assert.deepEqual(withSlip.tokens, asDemo.tokens, 'the same tokens');
    const lossOf = (r: { lossMask: number[] }) => r.lossMask.reduce((a, b) => a + b, 0);
    const slipTokens = [...conversation.contextOnly!].reduce((n, i) => n + format.renderCompletion(conversation.messages[i]!).length, 0);
    assert.equal(lossOf(asDemo) - lossOf(withSlip), slipTokens, 'exactly the slips’ completion tokens leave the loss');
    assert.ok(lossOf(withSlip) < lossOf(asDemo) && lossOf(withSlip) > 0);
    assert.equal(withSlip.completions.length, asDemo.completions.length - t.contextOnly!.length);
    const docs = buildSftDocuments([record], format, { maxSeqLen: 100000 });
    assert.equal(docs.stats.lossTokens, lossOf(withSlip) - (withSlip.lossMask[0] ?? 0));
    assert.throws(() => toChatConversation({ ...record, contextOnly: [record.messages.findIndex((m) => m.role === 'user')] }), /only assistant messages can be context-only/);
    assert.throws(() => toChatConversation({ ...record, contextOnly: [record.messages.length + 3] }), /but the record has/);
  });
});
