/**
 * examples/help-desk/env.ts as a user's module: the default export (the final-state reward, an exact demonstrator)
 * and the `costly` variant (a cost per tool call beyond the gold ones; half the demonstrations list the tickets
 * first), its options checked, and the reward of episodes played by hand.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { demonstrationEpisodes, loadEnvModule, type AnyEnvDefinition } from '../../../src/index.ts';

const MODULE = join('examples', 'help-desk', 'env.ts');
const call = (name: string, args: Record<string, unknown>) => ({ content: null, toolCalls: [{ name, arguments: args }] });

interface HelpDeskTaskShape { id: string; gold: { name: string; arguments: Record<string, unknown> }[] }

/** Plays `turns` on the task and returns the episode's reward and reward info. */
async function play(def: AnyEnvDefinition, task: HelpDeskTaskShape, turns: object[]): Promise<{ reward: number; info: Record<string, unknown> }> {
  const env = def.makeEnv({ tasks: [task] });
  await env.reset({ seed: 5, options: { taskId: task.id } });
  let reward = 0;
  let info: Record<string, unknown> = {};
  for (const turn of turns) {
    const [, r, terminated, truncated, stepInfo] = await env.step(turn as never);
    reward = r;
    info = stepInfo as Record<string, unknown>;
    if (terminated || truncated) break;
  }
  return { reward, info };
}

describe('examples/help-desk as a module', () => {
  it('the default export: every demonstration scores 1; the costly variant: 1 without the extra lookup, 0.75 with it', async () => {
    const plain = await loadEnvModule(MODULE);
    assert.equal(plain.id, 'examples/help-desk-v0');
    const plainDemos = await demonstrationEpisodes(plain, 'val');
    assert.equal(plainDemos.length, 32);
    assert.ok(plainDemos.every((d) => d.reward === 1));

    const costly = await loadEnvModule(MODULE, 'costly');
    assert.equal(costly.id, 'examples/help-desk-v0-cost0.25-list0.5');
    const demos = await demonstrationEpisodes(costly, 'val');
    const listsFirst = (d: (typeof demos)[number]) => d.messages.some((m) => m.role === 'assistant' && (m.toolCalls ?? []).some((c) => c.name === 'list_tickets'));
    const listed = demos.filter(listsFirst);
    assert.ok(listed.length >= 8 && listed.length <= 24, `about half the demonstrations list first: ${listed.length} of 32`);
    for (const d of demos) assert.equal(d.reward, listsFirst(d) ? 0.75 : 1, d.taskId);
    // The same tasks, the same gold changes: only the extra call differs.
    assert.deepEqual(demos.map((d) => d.taskId), plainDemos.map((d) => d.taskId));
  });

  it("the costly reward: a wrong change scores 0 whatever the calls; a failed call counts as a call", async () => {
    const costly = await loadEnvModule(MODULE, 'costly');
    const task = (await costly.tasks('test'))[0] as HelpDeskTaskShape;
    const [lookup, change] = task.gold;
    const done = { content: 'Done.' };
    const right = await play(costly, task, [call(lookup!.name, lookup!.arguments), call(change!.name, change!.arguments), done]);
    assert.equal(right.reward, 1);
    const badCall = await play(costly, task, [call('find_customer', { email: 'nobody@nowhere' }), call(lookup!.name, lookup!.arguments), call(change!.name, change!.arguments), done]);
    assert.equal(badCall.reward, 0.75);
    const wrong = await play(costly, task, [call(lookup!.name, lookup!.arguments), call('close_ticket', { ticket_id: 'T0' }), call('close_ticket', change!.arguments), done]);
    assert.equal(wrong.reward, change!.name === 'close_ticket' ? 0.75 : 0, 'closing a ticket that does not exist changes nothing; closing the right one is right only for a close task');
    const changed = await play(costly, task, [call(lookup!.name, lookup!.arguments), call('escalate_ticket', { ticket_id: change!.arguments.ticket_id, team: 'security' }), call('set_priority', { ticket_id: change!.arguments.ticket_id, priority: 'low' }), done]);
    assert.equal(changed.reward, 0);
  });

  it('helpDesk(options) names an unknown option and a share outside [0, 1]', async () => {
    await assert.rejects(loadEnvModule(MODULE, 'helpDesk', { callCosts: 0.1 }), /unknown option\(s\) callCosts/);
    await assert.rejects(loadEnvModule(MODULE, 'helpDesk', { callCost: 2 }), /callCost must be a number in \[0, 1\], got 2/);
    await assert.rejects(loadEnvModule(MODULE, 'helpDesk', { listFirst: 'half' }), /listFirst must be a number in \[0, 1\]/);
    const def = await loadEnvModule(MODULE, 'helpDesk', { callCost: 0.5 });
    assert.equal(def.id, 'examples/help-desk-v0-cost0.5-list0');
  });
});
