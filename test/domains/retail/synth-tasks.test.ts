import { strict as assert } from 'node:assert';
import { describe, it } from 'node:test';
import { evaluateEpisode } from '../../../src/tooluse/evaluator.ts';
import { runGoldEpisode, writeActionIndices } from '../../../src/tooluse/replay.ts';
import { parseTasks } from '../../../src/tooluse/tasks.ts';
import { createRetailDomain } from '../../../src/domains/retail/domain.ts';
import { TASK_FAMILIES } from '../../../src/domains/retail/synth/scenario.ts';
import { generateTasks } from '../../../src/domains/retail/synth/task-gen.ts';
import { assertDisjointWorlds, generateSplits } from '../../../src/domains/retail/synth/taskset.ts';
import { generateWorld } from '../../../src/domains/retail/synth/world.ts';

const world = generateWorld(2024);
const domain = createRetailDomain({ db: world, policy: 'policy' });
const generated = generateTasks(world, 99, { count: 330 });

describe('synthetic task generator', () => {
  it('is deterministic by seed and differs across seeds', () => {
    const a = JSON.stringify(generateTasks(world, 5, { count: 33 }).tasks);
    assert.equal(JSON.stringify(generateTasks(world, 5, { count: 33 }).tasks), a);
    assert.notEqual(JSON.stringify(generateTasks(world, 6, { count: 33 }).tasks), a);
  });

  it('produces valid τ² tasks over every family, with structured instructions and DB+COMMUNICATE basis', () => {
    const parsed = parseTasks(generated.tasks);
    assert.equal(parsed.length, 330);
    const families = new Set(generated.tasks.map((t) => t.longrun.family));
    assert.deepEqual([...families].sort(), [...TASK_FAMILIES].sort());
    for (const t of generated.tasks) {
      const ins = t.user_scenario.instructions;
      assert.ok(typeof ins === 'object' && ins.reason_for_call.length > 0 && ins.known_info !== null && ins.task_instructions.length > 0);
      assert.deepEqual(t.evaluation_criteria!.reward_basis, ['DB', 'COMMUNICATE']);
    }
    assert.ok(generated.tasks.some((t) => (t.evaluation_criteria!.communicate_info ?? []).length > 0));
  });

  it('every task replays its gold actions to reward 1 (DB and COMMUNICATE), and loses the DB reward without its last write', async () => {
    let checkedDrop = 0;
    for (const task of generated.tasks) {
      const gold = runGoldEpisode(domain, task);
      const said = (task.evaluation_criteria!.communicate_info ?? []).join(' ; ');
      const messages = said ? [...gold.messages.slice(0, -1), { role: 'assistant' as const, content: said, toolCalls: null }, gold.messages.at(-1)!] : gold.messages;
      const info = await evaluateEpisode(domain, task, { messages, terminationReason: 'user_stop' });
      assert.equal(info.reward, 1, `task ${task.id} (${task.longrun.family})`);
      const writes = writeActionIndices(domain, task);
      if (writes.length > 0) {
        const actions = task.evaluation_criteria!.actions!.filter((_, i) => i !== writes.at(-1));
        const partial = runGoldEpisode(domain, task, actions);
        const dropped = await evaluateEpisode(domain, task, { messages: partial.messages, terminationReason: 'user_stop' });
        assert.equal(dropped.rewardBreakdown.DB, 0, `task ${task.id} without its last write`);
        checkedDrop++;
      }
    }
    assert.ok(checkedDrop > 150);
  });

  it('changes the DB exactly for tasks that ask for a change', () => {
    const initial = domain.hashDb(domain.freshDb());
    for (const task of generated.tasks) {
      const final = domain.hashDb(runGoldEpisode(domain, task).db);
      const s = task.longrun;
      const wantsChange = s.authenticates && s.requests.some((r) => r.outcome === 'do' && r.kind !== 'info');
      assert.equal(final !== initial, wantsChange, `task ${task.id} (${s.family})`);
      if (s.family === 'forbidden' || s.family === 'failed_auth') assert.ok(s.requests.some((r) => r.outcome !== 'do'));
    }
  });

  it('makes harder tasks longer: more sub-goals and more gold actions', () => {
    const byLevel = (d: number) => generated.tasks.filter((t) => t.longrun.difficulty === d);
    const meanActions = (ts: typeof generated.tasks) => ts.reduce((s, t) => s + t.evaluation_criteria!.actions!.length, 0) / ts.length;
    assert.ok(meanActions(byLevel(3)) > meanActions(byLevel(1)) + 1);
    for (const t of generated.tasks.filter((x) => x.longrun.family === 'multi')) assert.equal(t.longrun.requests.length, t.longrun.difficulty >= 3 ? 3 : 2);
    const easy = generateTasks(world, 3, { count: 22, difficulty: 1 });
    assert.ok(easy.tasks.every((t) => t.longrun.difficulty === 1 && t.longrun.requests.every((r) => !('order' in r) || r.order === null || r.order.byId)));
  });

  it('some harder tasks make the user change its mind at the confirmation; the gold action leaves the dropped item out', () => {
    const hard = generateTasks(world, 12, { count: 110, families: ['modify_items', 'exchange', 'return'], difficulty: 3 }).tasks;
    let changes = 0;
    for (const t of hard) {
      const r = t.longrun.requests[0]!;
      const dropped = r.kind === 'return' ? r.droppedItem?.itemId : r.kind === 'modify_items' || r.kind === 'exchange' ? r.droppedChange?.itemId : undefined;
      if (dropped === undefined) continue;
      changes++;
      const write = t.evaluation_criteria!.actions!.at(-1)!;
      assert.ok(!(write.arguments.item_ids as string[]).includes(dropped), `task ${t.id}`);
      assert.match((t.user_scenario.instructions as { reason_for_call: string }).reason_for_call, /change your mind/);
    }
    assert.ok(changes >= 10, `${changes} changes of mind`);
  });

  it('honours the family filter and rejects bad options', () => {
    const only = generateTasks(world, 1, { count: 6, families: ['cancel', 'info'] });
    assert.deepEqual(new Set(only.tasks.map((t) => t.longrun.family)), new Set(['cancel', 'info']));
    assert.throws(() => generateTasks(world, 1, { count: 1, families: ['nope' as never] }), /Unknown task family/);
    assert.throws(() => generateTasks(world, 1, { count: 1, difficulty: 6 }), /difficulty/);
    assert.throws(() => generateTasks(world, 1, { count: 1, difficulty: [3, 2] }), /difficulty/);
    assert.throws(() => generateTasks(world, 1, { count: -1 }), /count/);
  });

  it('builds train/validation/test splits that never share a world seed', () => {
    const splits = generateSplits(8, { train: 6, validation: 3, test: 3 }, { sizes: { products: 30, users: 80, orders: 200 } });
    const seeds = Object.values(splits).map((s) => s.meta.worldSeed);
    assert.equal(new Set(seeds).size, 3);
    for (const [name, set] of Object.entries(splits)) {
      assert.equal(set.meta.split, name);
      assert.ok(set.tasks.every((t) => t.longrun.worldSeed === set.meta.worldSeed && t.id.startsWith(`${name}_`)));
    }
    const metas = Object.values(splits).map((s) => s.meta);
    assert.throws(() => assertDisjointWorlds([metas[0]!, { ...metas[1]!, worldSeed: metas[0]!.worldSeed }]), /share world seed/);
  });
});
