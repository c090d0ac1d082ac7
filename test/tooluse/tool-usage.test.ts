import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { formatToolUsage, toolUsageOf } from '../../src/tooluse/tool-usage.ts';

const root = mkdtempSync(join(tmpdir(), 'tool-usage-'));
after(() => rmSync(root, { recursive: true, force: true }));

const call = (...names: string[]) => ({ role: 'assistant', content: null, toolCalls: names.map((name, i) => ({ id: `c${i}`, name, arguments: {} })) });
const result = (error = false) => ({ role: 'tool', content: error ? 'Error: no' : 'ok', error });

function evalFolder(name: string, rows: object[]): string {
  const dir = join(root, name);
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'trajectories.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  return dir;
}

describe('tool usage of recorded episodes (longrun analyze tools)', () => {
  it('counts calls, failed calls (the tool result after each call, in order), first calls and final-state matches', () => {
    const dir = evalFolder('a', [
      // list first, then a failed lookup and a good one in one message, then the change
      { taskId: 't1', status: 'ok', reward: 0.75, rewardInfo: { info: { match: true } }, messages: [{ role: 'user', content: 'x' }, call('list'), result(), call('find', 'find'), result(true), result(), call('set'), result(), { role: 'assistant', content: 'done' }] },
      { taskId: 't2', status: 'ok', reward: 0, rewardInfo: { info: { match: false } }, messages: [{ role: 'user', content: 'x' }, call('find'), result(true), { role: 'assistant', content: 'sorry' }] },
      { taskId: 't3', status: 'ok', reward: 0, rewardInfo: null, messages: [{ role: 'user', content: 'x' }, { role: 'assistant', content: 'no tools' }] },
      { taskId: 't4', status: 'env_error', reward: 0, messages: [] },
    ]);
    const u = toolUsageOf(dir);
    assert.equal(u.episodes, 3, 'the env_error row is left out');
    assert.equal(u.meanReward, 0.25);
    assert.equal(u.finalStateMatch, 0.5, 'of the two rows that record a match');
    assert.equal(u.callsPerEpisode, 5 / 3);
    assert.equal(u.errorsPerEpisode, 2 / 3);
    assert.equal(u.noCall, 1);
    assert.deepEqual(Object.fromEntries(u.tools), { list: { calls: 1, errors: 0, first: 1 }, find: { calls: 3, errors: 2, first: 1 }, set: { calls: 1, errors: 0, first: 0 } });
    const text = formatToolUsage([u, toolUsageOf(join(dir, 'trajectories.jsonl'))]);
    assert.match(text, /\| a \| 3 \| 0\.250 \| 0\.500 \| 1\.67 \| 0\.67 \| 1 \|/);
    assert.match(text, /\| find \| 1\.00, 0\.667, 0\.333 \| 1\.00, 0\.667, 0\.333 \|/);
  });

  it('a run without final-state info shows —; a tool one run never called shows 0', () => {
    const a = toolUsageOf(evalFolder('b', [{ taskId: 't', status: 'ok', reward: 1, messages: [call('find'), result()] }]));
    const b = toolUsageOf(evalFolder('c', [{ taskId: 't', status: 'ok', reward: 1, messages: [call('list'), result()] }]));
    assert.equal(a.finalStateMatch, null);
    const text = formatToolUsage([a, b]);
    assert.match(text, /\| b \| 1 \| 1\.000 \| — \|/);
    assert.match(text, /\| list \| 0 \| 1\.00, 0\.000, 1\.000 \|/);
  });

  it('names the file and line of a row it cannot read, and a folder that is not an eval folder', () => {
    assert.throws(() => toolUsageOf(join(root, 'missing')), /missing: no trajectories\.jsonl/);
    const bad = evalFolder('bad', []);
    writeFileSync(join(bad, 'trajectories.jsonl'), '{"taskId":"t","status":"ok","reward":1,"messages":[]}\n{oops\n');
    assert.throws(() => toolUsageOf(bad), /trajectories\.jsonl:2: not JSON/);
    writeFileSync(join(bad, 'trajectories.jsonl'), '{"taskId":"t","status":"ok","reward":1}\n');
    assert.throws(() => toolUsageOf(bad), /trajectories\.jsonl:1: the row has no messages/);
    writeFileSync(join(bad, 'trajectories.jsonl'), '{"taskId":"t","status":"ok","reward":"1","messages":[]}\n');
    assert.throws(() => toolUsageOf(bad), /needs a numeric reward/);
    writeFileSync(join(bad, 'trajectories.jsonl'), '\n');
    assert.throws(() => toolUsageOf(bad), /no finished episodes/);
  });
});
