import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createRetailDomain } from '../../../src/domains/retail/domain.ts';
import type { AgentSession, SynthAgent } from '../../../src/domains/retail/synth/agent.ts';
import { EpisodeRunner, type Trajectory } from '../../../src/domains/retail/synth/episode.ts';
import { ExpertAgent } from '../../../src/domains/retail/synth/expert.ts';
import { CONFIRM_MARKER, VALID_REASONS } from '../../../src/domains/retail/synth/protocol.ts';
import { changesMind } from '../../../src/domains/retail/synth/scenario.ts';
import { generateTaskSet, writeTaskSet } from '../../../src/domains/retail/synth/taskset.ts';
import { ScriptedRetailUser, scenarioOf } from '../../../src/domains/retail/synth/user-sim.ts';
import { COMPACT_RETAIL_POLICY } from '../../../src/recipes/retail/prepare.ts';
import { evalFolderProposalTable, familyProposalTable, firstProposalSuccess, formatFamilyProposalTable, proposalCounts } from '../../../src/recipes/retail/proposals.ts';
import { isSuccess } from '../../../src/tooluse/metrics.ts';
import { REPO_ROOT } from '../../helpers/paths.ts';

/**
 * The expert, except that its first cancellation proposal of an episode names the other valid reason: the enumeration
 * "propose, switch if refused". After the customer's no it sends the expert's own (right) proposal.
 */
class WrongReasonFirst implements SynthAgent {
  readonly name = 'wrong-reason-first';
  start(context: Parameters<SynthAgent['start']>[0]): AgentSession {
    const expert = new ExpertAgent().start(context);
    let stashed: ReturnType<AgentSession['act']> | null = null;
    let done = false;
    return {
      act(observed) {
        if (stashed) {
          const t = stashed;
          stashed = null;
          return t;
        }
        const turn = expert.act(observed);
        const text = turn.content ?? '';
        const reason = VALID_REASONS.find((r) => text.includes(r));
        if (!done && text.includes(CONFIRM_MARKER) && /cancel/i.test(text) && reason) {
          done = true;
          stashed = turn;
          return { ...turn, content: text.replace(reason, VALID_REASONS.find((r) => r !== reason)!) };
        }
        return turn;
      },
    };
  }
}

const set = generateTaskSet({ worldSeed: 41, taskSeed: 5, count: 40, sizes: { products: 30, users: 40, orders: 90 }, difficulty: 2 });
const family = (id: string) => scenarioOf(set.tasks.find((t) => t.id === id)!)!.family;

async function play(agent: SynthAgent): Promise<Trajectory[]> {
  const domain = createRetailDomain({ db: set.world, policy: COMPACT_RETAIL_POLICY });
  const runner = new EpisodeRunner({ domain, tasks: set.tasks, user: new ScriptedRetailUser(new Map(set.tasks.map((t) => [t.id, t.longrun]))) });
  const out: Trajectory[] = [];
  for (const t of set.tasks) out.push(await runner.run(agent, t.id, 7));
  await runner.close();
  return out;
}

describe('first-proposal success (reading versus enumeration)', () => {
  it('the expert reads every request: no proposal turned down, its changes of mind are not refusals, first-proposal success = success', async () => {
    const eps = await play(new ExpertAgent());
    let revised = 0, proposals = 0;
    for (const e of eps) {
      const c = proposalCounts(e.messages);
      assert.equal(c.turnedDown, 0, `${e.taskId}: ${JSON.stringify(c)}`);
      assert.equal(c.accepted + c.changesOfMind, c.proposals, `${e.taskId}: every proposal answered yes or revised`);
      assert.equal(firstProposalSuccess(e.reward, c), isSuccess(e.reward));
      proposals += c.proposals;
      const scenario = scenarioOf(set.tasks.find((t) => t.id === e.taskId)!)!;
      if (scenario.requests.some(changesMind)) {
        assert.ok(c.changesOfMind >= 1, `${e.taskId}: the customer revised its request`);
        revised++;
      }
    }
    assert.ok(proposals >= 20 && revised >= 1, `${proposals} proposals, ${revised} episodes with a change of mind`);
    const table = familyProposalTable(eps.map((e) => ({ taskId: e.taskId, family: family(e.taskId), reward: e.reward, messages: e.messages })));
    for (const r of table) assert.equal(r.firstProposalSuccess.mean, r.meanAt1.mean, r.family);
  });

  it('an agent that enumerates cancel reasons still succeeds, but not at the first proposal', async () => {
    const eps = (await play(new WrongReasonFirst())).filter((e) => family(e.taskId) === 'cancel');
    assert.ok(eps.length >= 3, `${eps.length} cancellations`);
    for (const e of eps) {
      const c = proposalCounts(e.messages);
      assert.equal(c.turnedDown, 1, `${e.taskId}: ${JSON.stringify(c)}`);
      assert.equal(c.turnedDownBeforeAccepted, 1);
      assert.ok(c.accepted >= 1);
      assert.ok(isSuccess(e.reward), `${e.taskId}: the customer restates and the second proposal is accepted (reward ${e.reward})`);
      assert.equal(firstProposalSuccess(e.reward, c), false);
    }
    const [row] = familyProposalTable(eps.map((e) => ({ taskId: e.taskId, family: 'cancel', reward: e.reward, messages: e.messages })));
    assert.deepEqual([row.meanAt1.mean, row.firstProposalSuccess.mean, row.turnedDown, row.withTurnedDown], [1, 0, 1, 1]);
  });

  it('counts from the customer\'s replies: yes, no, a change of mind, and a proposal left unanswered', () => {
    const m = (role: 'user' | 'assistant' | 'tool', content: string) => ({ role, content });
    const c = proposalCounts([
      m('assistant', 'Hi! How can I help you today?'), m('user', 'Cancel my order.'),
      m('assistant', `Cancel #W0000001 because no longer needed? ${CONFIRM_MARKER}`), m('user', "No, that's not right. Please cancel #W0000001."),
      m('assistant', `Cancel #W0000001 because ordered by mistake? ${CONFIRM_MARKER}`), m('user', 'Yes, go ahead.'),
      m('assistant', `Return the charger? ${CONFIRM_MARKER}`), m('user', 'No, wait, I changed my mind. Only the lamp.'),
      m('assistant', `Return the lamp? ${CONFIRM_MARKER}`), m('user', "No, that's not what I asked for. Never mind, I'll sort this out another time. ###STOP###"),
      m('assistant', `One more? ${CONFIRM_MARKER}`),
    ]);
    assert.deepEqual(c, { proposals: 5, accepted: 1, turnedDown: 2, changesOfMind: 1, turnedDownBeforeAccepted: 1 });
    assert.equal(firstProposalSuccess(1, c), false);
    assert.equal(firstProposalSuccess(1, proposalCounts([])), true, 'no proposal to turn down (an info task)');
  });

  it('`longrun eval --user scripted` prints mean@1 and first-proposal success by family beside its summary', () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-proposals-cli-'));
    try {
      writeTaskSet(join(dir, 'set'), generateTaskSet({ worldSeed: 3, taskSeed: 4, count: 6, sizes: { products: 30, users: 80, orders: 200 }, families: ['cancel', 'info'] }), COMPACT_RETAIL_POLICY);
      const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'eval', '--agent', 'expert', '--user', 'scripted', '--tasks', join(dir, 'set', 'tasks.json'), '--trials', '2', '--out', join(dir, 'out'), '--no-progress'], { cwd: REPO_ROOT, encoding: 'utf8' });
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /avg reward: 1\.0000 /);
      assert.match(r.stdout, /by family: mean@1 and first-proposal success/);
      assert.match(r.stdout, /\| cancel \| \d+ \| \d+ \| 1\.000 ± 0\.000 \| 1\.000 ± 0\.000 \| 1\.00 \| 0\.00 \| 0\.000 \|/);
      assert.match(r.stdout, /\| all \| 6 \| 12 \| 1\.000 ± 0\.000 \| 1\.000 ± 0\.000 \|/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reads an eval folder: families from its tasks file, only finished episodes; a folder of another user is refused', () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-proposals-'));
    try {
      const tasksFile = join(dir, 'tasks.json');
      writeFileSync(tasksFile, JSON.stringify([{ id: 'a', longrun: { family: 'cancel' } }, { id: 'b', longrun: { family: 'info' } }]));
      const yes = [{ role: 'assistant', content: `Cancel? ${CONFIRM_MARKER}` }, { role: 'user', content: 'Yes.' }];
      const no = [{ role: 'assistant', content: `Cancel? ${CONFIRM_MARKER}` }, { role: 'user', content: "No, that's not right. Cancel it." }, ...yes];
      const rows = [
        { taskId: 'a', trial: 0, status: 'ok', reward: 1, messages: yes },
        { taskId: 'a', trial: 1, status: 'ok', reward: 1, messages: no },
        { taskId: 'b', trial: 0, status: 'ok', reward: 0, messages: [] },
        { taskId: 'b', trial: 1, status: 'infrastructure_error', reward: null, messages: [] },
      ];
      writeFileSync(join(dir, 'trajectories.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
      writeFileSync(join(dir, 'config.json'), JSON.stringify({ tasksFile, user: 'scripted' }));
      const table = evalFolderProposalTable(dir);
      assert.deepEqual(table.map((r) => [r.family, r.episodes, r.meanAt1.mean, r.firstProposalSuccess.mean]), [['cancel', 2, 1, 0.5], ['info', 1, 0, 0], ['all', 3, 0.5, 0.25]]);
      const md = formatFamilyProposalTable(table);
      assert.match(md, /^\| family \| tasks \| episodes \| mean@1 \| first-proposal success \|/);
      assert.match(md, /\| cancel \| 1 \| 2 \| 1\.000 ± 0\.000 \| 0\.500 ± 0\.000 \| 1\.50 \| 0\.50 \| 0\.500 \|/);
      writeFileSync(join(dir, 'config.json'), JSON.stringify({ tasksFile, user: 'llm' }));
      assert.throws(() => evalFolderProposalTable(dir), /reads the scripted customer's replies; this eval used --user llm/);
      writeFileSync(join(dir, 'config.json'), JSON.stringify({ tasksFile, user: 'scripted' }));
      writeFileSync(join(dir, 'trajectories.jsonl'), '{"taskId": "a", "status": "ok", "reward": 1, "messages": []}\nnot json\n');
      assert.throws(() => evalFolderProposalTable(dir), /trajectories\.jsonl line 2 is not JSON/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
