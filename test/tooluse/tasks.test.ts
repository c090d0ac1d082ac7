import assert from 'node:assert/strict';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { DEFAULT_REWARD_BASIS, getTask, indentText, loadSplits, loadTasks, parseTasks, renderUserScenario, rewardBasisOf, selectSplit } from '../../src/tooluse/tasks.ts';
import { TAU2_RETAIL_DIR } from '../helpers/paths.ts';

const v1 = loadTasks(join(TAU2_RETAIL_DIR, 'tasks.json'));
const v0 = loadTasks(join(TAU2_RETAIL_DIR, 'v0.x', 'tasks.json'));
const splits = loadSplits(join(TAU2_RETAIL_DIR, 'split_tasks.json'));

describe('τ² task files', () => {
  it('parse 114 tasks each with ids 0..113', () => {
    for (const tasks of [v0, v1]) {
      assert.equal(tasks.length, 114);
      assert.deepEqual(tasks.map((t) => t.id), Array.from({ length: 114 }, (_, i) => String(i)));
    }
  });

  it('default the v0.x reward basis to DB × COMMUNICATE and read the v1.0 one', () => {
    assert.ok(v0.every((t) => rewardBasisOf(t).join() === DEFAULT_REWARD_BASIS.join()));
    const v1Bases = v1.map((t) => rewardBasisOf(t).join());
    assert.equal(v1Bases.filter((b) => b === 'DB,NL_ASSERTION').length, 112);
    assert.deepEqual(v1.filter((t) => rewardBasisOf(t).join() === 'DB').map((t) => t.id), ['33', '34']);
  });

  it('fill Action defaults and keep compare_args', () => {
    const a = getTask(v0, '0').evaluation_criteria!.actions![0]!;
    assert.equal(a.requestor, 'assistant');
    assert.equal(a.compare_args, null);
    assert.deepEqual(a.arguments, { first_name: 'Yusuf', last_name: 'Rossi', zip: '19122' });
    const withEmpty = getTask(v1, '10').evaluation_criteria!.actions!.filter((x) => x.compare_args !== null);
    assert.ok(withEmpty.length > 0 && withEmpty.every((x) => x.compare_args!.length === 0));
    assert.equal(v1.reduce((s, t) => s + (t.evaluation_criteria?.actions?.length ?? 0), 0), 550);
    assert.equal(v0.reduce((s, t) => s + (t.evaluation_criteria?.actions?.length ?? 0), 0), 553);
  });

  it('split into disjoint train (74) and test (40) whose union is base (all 114)', () => {
    const train = selectSplit(v1, splits, 'train').map((t) => t.id);
    const test = selectSplit(v1, splits, 'test').map((t) => t.id);
    const base = selectSplit(v1, splits).map((t) => t.id);
    assert.equal(train.length, 74);
    assert.equal(test.length, 40);
    assert.equal(base.length, 114);
    assert.ok(train.every((id) => !test.includes(id)));
    assert.deepEqual([...train, ...test].sort(), [...base].sort());
    assert.ok(test.includes('5') && test.includes('111') && !test.includes('0'));
  });

  it('reject an unknown split, listing the valid ones, and an unknown task id', () => {
    assert.throws(() => selectSplit(v1, splits, 'dev'), /Unknown task split 'dev'. Valid splits: train, test, base/);
    assert.throws(() => selectSplit(v1, null, 'train'), /only 'base'/);
    assert.equal(selectSplit(v1, null).length, 114);
    assert.throws(() => getTask(v1, '999'), /Unknown task id '999' \(114 tasks available/);
  });

  it('report which task and field is malformed', () => {
    assert.throws(() => parseTasks([{ id: '7', user_scenario: { instructions: 3 } }]), /task #0 \(id "7"\) is invalid: user_scenario.instructions/);
    assert.throws(() => parseTasks({}), /expected a JSON array/);
    assert.throws(() => loadTasks(join(TAU2_RETAIL_DIR, 'nope.json')), /Cannot read Task file/);
  });
});

describe('user scenario rendering', () => {
  it('indents like textwrap.indent (blank lines untouched)', () => {
    assert.equal(indentText('a\n\nb\n', '\t'), '\ta\n\n\tb\n');
  });

  it('renders Instructions with the structured fields tab-indented twice', () => {
    const text = renderUserScenario(getTask(v1, '0').user_scenario);
    assert.equal(
      text,
      [
        'Instructions:',
        '\tDomain: retail',
        '\tReason for call:',
        `\t\t${(getTask(v1, '0').user_scenario.instructions as { reason_for_call: string }).reason_for_call}`,
        '\tKnown info:',
        '\t\tYou are Yusuf Rossi in zip code 19122.',
        '\tUnknown info:',
        '\t\tYou do not remember your email address.',
        '\tTask instructions:',
        '\t\tYou are detail-oriented and want to make sure everything is addressed in one go.',
      ].join('\n'),
    );
    const withPersona = renderUserScenario({ persona: 'Calm.\nPolite.', instructions: 'Buy a hat.' });
    assert.equal(withPersona, 'Persona:\n\tCalm.\n\tPolite.\nInstructions:\n\tBuy a hat.');
  });
});
