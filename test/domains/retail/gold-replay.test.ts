/** Whole-dataset checks on the v1.0 gold trajectories (tau2.md §5 and §13.1). */
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { INITIAL_HASH, call, retailData, retailDomain } from './fixture.ts';

interface RawTask {
  id: string;
  evaluation_criteria: { actions: { name: string; arguments: Record<string, unknown> }[] };
}

test('gold replay: 550 actions, 18 failing on purpose, 11 tasks leave the DB unchanged', () => {
  const domain = retailDomain();
  const tasks = retailData().tasks as RawTask[];
  let actions = 0;
  const failures: { task: string; name: string; output: string }[] = [];
  const unchanged: string[] = [];
  for (const task of tasks) {
    const db = domain.freshDb();
    for (const a of task.evaluation_criteria.actions) {
      actions++;
      const r = call(domain, db, a.name, a.arguments);
      if (r.error) failures.push({ task: task.id, name: a.name, output: r.output });
    }
    if (domain.hashDb(db) === INITIAL_HASH) unchanged.push(task.id);
  }
  assert.equal(actions, 550);
  assert.equal(failures.length, 18);
  assert.deepEqual(unchanged.map(Number).sort((a, b) => a - b), [10, 12, 24, 25, 50, 57, 62, 65, 67, 68, 105]);
  assert.ok(failures.some((f) => f.task === '64' && f.output === 'Error: Non-delivered order cannot be exchanged'));
  assert.ok(failures.some((f) => f.task === '105' && f.output === 'Error: Insufficient gift card balance to pay for the price difference'));
  for (const f of failures) assert.match(f.output, /^Error: /);
});
