/**
 * Whole-dataset self-consistency of the retail domain with the tool-use evaluator (tau2.md §13.1.3): for both task
 * files, every task's gold replay earns DB reward 1, and dropping its last successful write earns 0.
 */
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { replayCommand } from '../../../src/cli/tau2-replay.ts';
import { loadRetailTaskSet } from '../../../src/domains/retail/register.ts';
import { checkDb, evaluateEpisode, GoldHashCache } from '../../../src/tooluse/evaluator.ts';
import type { Message } from '../../../src/tooluse/messages.ts';
import { replayTask, runGoldEpisode, writeActionIndices } from '../../../src/tooluse/replay.ts';
import { REPO_ROOT, TAU2_RETAIL_DIR } from '../../helpers/paths.ts';

for (const version of ['v0', 'v1'] as const) {
  describe(`retail ${version} gold replay`, () => {
    const { domain, tasks } = loadRetailTaskSet({ dataDir: TAU2_RETAIL_DIR, version });
    const cache = new GoldHashCache();

    it('loads 114 tasks and the right tool set', () => {
      assert.equal(tasks.length, 114);
      assert.equal(domain.tools.length, version === 'v0' ? 15 : 16);
    });

    it('gives every task DB reward 1 for its gold actions, and 0 without its last successful write', () => {
      let dropped = 0;
      for (const task of tasks) {
        const replay = replayTask(domain, task, cache);
        assert.equal(replay.db_reward, 1, `task ${task.id}`);
        const actions = task.evaluation_criteria!.actions!;
        const lastWrite = writeActionIndices(domain, task).filter((i) => !replay.outputs[i]!.error).at(-1);
        if (lastWrite === undefined) continue;
        const shortened = runGoldEpisode(domain, task, actions.filter((_, i) => i !== lastWrite));
        const check = checkDb(domain, task, { messages: shortened.messages, terminationReason: 'user_stop', finalDbHash: domain.hashDb(shortened.db) }, cache);
        assert.equal(check.dbReward, 0, `task ${task.id} without action ${lastWrite}`);
        dropped++;
      }
      // 104 tasks have a write; a few of them only have writes that fail on purpose.
      assert.ok(dropped >= 100 && dropped <= 104, `dropped ${dropped}`);
    });

    if (version === 'v0') {
      it('scores total reward 1 when the agent also says every communicate_info string', async () => {
        let withInfo = 0;
        for (const task of tasks) {
          const episode = runGoldEpisode(domain, task);
          const infos = task.evaluation_criteria!.communicate_info ?? [];
          const say: Message = { role: 'assistant', content: `Summary: ${infos.join('; ')}`, toolCalls: null };
          const messages = [...episode.messages.slice(0, -1), say, episode.messages.at(-1)!];
          const r = await evaluateEpisode(domain, task, { messages, terminationReason: 'user_stop', finalDbHash: domain.hashDb(episode.db) }, { goldHashCache: cache });
          assert.equal(r.reward, 1, `task ${task.id}`);
          if (infos.length) {
            withInfo++;
            const silent = await evaluateEpisode(domain, task, { messages: episode.messages, terminationReason: 'user_stop' }, { goldHashCache: cache });
            assert.deepEqual(silent.rewardBreakdown, { DB: 1, COMMUNICATE: 0 }, `task ${task.id}`);
          }
          for (const reason of ['max_steps', 'too_many_errors'] as const) {
            assert.equal((await evaluateEpisode(domain, task, { messages, terminationReason: reason }, { goldHashCache: cache })).reward, 0);
          }
        }
        assert.equal(withInfo, 38);
      });
    }
  });
}

describe('longrun tau2 replay', () => {
  it('prints one JSON line per task of a task file', () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-replay-'));
    const all = JSON.parse(readFileSync(join(TAU2_RETAIL_DIR, 'tasks.json'), 'utf8')) as { id: string }[];
    const file = join(dir, 'two.json');
    writeFileSync(file, JSON.stringify(all.filter((t) => t.id === '0' || t.id === '64')));
    const lines: string[] = [];
    const code = replayCommand({ data: TAU2_RETAIL_DIR, tasks: file }, (l) => lines.push(l));
    assert.equal(code, 0);
    const rows = lines.map((l) => JSON.parse(l) as { task_id: string; final_db_hash: string; outputs: { output: string; error: boolean }[]; db_reward: number });
    assert.deepEqual(rows.map((r) => Object.keys(r)), [
      ['task_id', 'final_db_hash', 'outputs', 'db_reward'],
      ['task_id', 'final_db_hash', 'outputs', 'db_reward'],
    ]);
    assert.deepEqual(rows.map((r) => [r.task_id, r.db_reward]), [['0', 1], ['64', 1]]);
    assert.equal(rows[0]!.outputs[0]!.output, 'yusuf_rossi_9620');
    assert.match(rows[0]!.final_db_hash, /^[0-9a-f]{64}$/);
    // Task 64's gold exchange fails on purpose (tau2.md §5).
    assert.ok(rows[1]!.outputs.some((o) => o.error && o.output === 'Error: Non-delivered order cannot be exchanged'));
    const train: string[] = [];
    replayCommand({ data: TAU2_RETAIL_DIR, tasks: file, split: 'train' }, (l) => train.push(l));
    assert.deepEqual(train.map((l) => (JSON.parse(l) as { task_id: string }).task_id), ['0']);
  });

  it('runs from the command line', () => {
    const out = execFileSync(join(REPO_ROOT, 'bin', 'longrun'), ['tau2', 'replay', '--data', TAU2_RETAIL_DIR, '--split', 'test'], { encoding: 'utf8' });
    const rows = out.trim().split('\n').map((l) => JSON.parse(l) as { task_id: string; db_reward: number });
    assert.equal(rows.length, 40);
    assert.ok(rows.every((r) => r.db_reward === 1));
  });
});
