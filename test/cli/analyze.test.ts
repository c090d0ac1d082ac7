import { after, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  advantageWeights, advantageWeightsTable, compareRuns, episodeFailures, episodeLinesOf, episodeMarkdown, parseEpisodes,
  proposalKind, readHeldoutRun, selectEpisodes, transcripts, type EpisodeRow,
} from '../../src/cli/analyze.ts';
import { NO_REPLIES, YES_REPLIES } from '../../src/domains/retail/synth/user-phrasing.ts';
import { formatPairedTable, formatProposalRows, pairedProposalTable, parseProposalRows, proposalRowsOfEvalFolder, readProposalRun } from '../../src/recipes/retail/paired-proposals.ts';
import { formatSinkKl, readTokenEpisodes, sinkKl } from '../../src/recipes/sink-kl.ts';
import { saveModel } from '../../src/model/checkpoint/index.ts';
import { GptOssModel } from '../../src/model/model.ts';
import { validateConfig } from '../../src/model/config.ts';

const run = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'longrun-analyze-'));
after(() => rmSync(dir, { recursive: true, force: true }));

/** A `longrun eval --out` folder: config.json naming a tasks file, and one trajectory row per episode. */
function evalFolder(name: string, tasks: unknown[], rows: unknown[]): string {
  const out = join(dir, name);
  mkdirSync(out, { recursive: true });
  const tasksFile = join(out, 'tasks.json');
  writeFileSync(tasksFile, JSON.stringify(tasks));
  writeFileSync(join(out, 'config.json'), JSON.stringify({ tasksFile }));
  writeFileSync(join(out, 'trajectories.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  return out;
}

const cancelTask = (id: string) => ({
  id, longrun: { family: 'cancel', requests: [{ kind: 'cancel' }] },
  evaluation_criteria: { actions: [{ name: 'cancel_pending_order', arguments: { order_id: '#W1' } }] },
});
const exchangeTask = (id: string) => ({
  id, longrun: { family: 'exchange', requests: [{ kind: 'exchange' }] },
  evaluation_criteria: { actions: [
    { name: 'get_product_details', arguments: { product_id: '111' } },
    { name: 'exchange_delivered_order_items', arguments: { item_ids: ['501'], new_item_ids: ['502'] } },
  ] },
});
const msg = {
  propose: (what: string) => ({ role: 'assistant', content: `Here are the details: ${what}. Shall I go ahead? (yes/no)` }),
  call: (name: string, args: unknown) => ({ role: 'assistant', content: '', toolCalls: [{ name, arguments: args }] }),
  tool: (content: string, error = false) => ({ role: 'tool', content, error }),
  no: (i: number) => ({ role: 'user', content: NO_REPLIES[i % NO_REPLIES.length] }),
};

describe('longrun analyze compare', () => {
  it('pairs per-episode files by task: the difference and its standard error over tasks, per-family means, pass@k', () => {
    // Four tasks, two trials each; the other run gains 0.5 on t1 and t2 and nothing on t3, t4.
    const lines = (rewards: number[][]) => rewards.flatMap((rs, i) => rs.map((r, trial) => `=== t${i + 1} (${i < 2 ? 'cancel' : 'info'}) reward ${r} trial ${trial} user_stop`)).join('\n');
    const a = join(dir, 'a.heldout.txt');
    const b = join(dir, 'b.heldout.txt');
    writeFileSync(a, lines([[0, 0], [0, 1], [1, 1], [0, 0]]));
    writeFileSync(b, lines([[1, 0], [1, 1], [1, 1], [0, 0]]));
    const out = compareRuns([a, b].map(readHeldoutRun)).split('\n');
    // Base: task means 0, 0.5, 1, 0: mean 0.375. Differences 0.5, 0.5, 0, 0: mean 0.25, sd √(1/12), se √(1/12)/2.
    assert.match(out[0]!, /^a\.heldout\.txt: mean 0\.3750 ± 0\.2394 over 4 tasks \| cancel 0\.25, info 0\.50$/);
    assert.equal(out[1], '  8 episodes, 2+ a task: pass@2 0.500, pass^2 0.250; ended: user_stop 8');
    assert.equal(out[3], '  8 episodes, 2+ a task: pass@2 0.750, pass^2 0.500; ended: user_stop 8');
    assert.match(out[2]!, new RegExp(`^b\\.heldout\\.txt: mean 0\\.6250 ± 0\\.2394, difference \\+0\\.2500 ± ${(Math.sqrt(1 / 12) / 2).toFixed(4)} \\(paired over tasks\\) \\| cancel 0\\.75, info 0\\.50$`));
  });

  it('refuses runs of other tasks, and says what is wrong with a bad path', () => {
    const a = join(dir, 'c.heldout.txt');
    const b = join(dir, 'd.heldout.txt');
    writeFileSync(a, '=== t1 (x) reward 1\n=== t2 (x) reward 0\n');
    writeFileSync(b, '=== t1 (x) reward 1\n=== t3 (x) reward 0\n');
    assert.throws(() => compareRuns([a, b].map(readHeldoutRun)), /d\.heldout\.txt: not the same tasks as c\.heldout\.txt \(1 of the baseline's missing/);
    assert.throws(() => compareRuns([readHeldoutRun(a)]), /a baseline and at least one other run/);
    assert.throws(() => readHeldoutRun(join(dir, 'nope.txt')), /cannot read .*nope\.txt/);
    writeFileSync(join(dir, 'empty.txt'), 'no episodes here\n');
    assert.throws(() => readHeldoutRun(join(dir, 'empty.txt')), /empty\.txt: no episode lines/);
  });

  it('reads eval folders: families from the tasks file, pass@k at the smallest trial count, tool calls and endings', () => {
    const tasks = [cancelTask('v1'), cancelTask('v2')];
    const row = (taskId: string, trial: number, reward: number, extra: object = {}) => ({ taskId, trial, status: 'ok', reward, terminationReason: 'user_stop', toolErrors: 0, messages: [], ...extra });
    const base = evalFolder('eval-base', tasks, [row('v1', 0, 0), row('v1', 1, 0), row('v2', 0, 1), row('v2', 1, 0), { taskId: 'v2', status: 'error', reward: 0 }]);
    const other = evalFolder('eval-other', tasks, [
      row('v1', 0, 1, { messages: [msg.call('find_user_id_by_email', { email: 'a@b' }), msg.tool('u1')] }),
      row('v1', 1, 1), row('v2', 0, 1),
      row('v2', 1, 0, { terminationReason: 'max_turns', toolErrors: 1, messages: [msg.call('find_user_id_by_email', { email: 'x' }), msg.tool('Error: user not found', true)] }),
    ]);
    const out = compareRuns([base, other].map(readHeldoutRun)).split('\n');
    assert.match(out[0]!, /^eval-base: mean 0\.2500 ± 0\.2500 over 2 tasks \| cancel 0\.25$/);
    assert.equal(out[1], '  4 episodes, 2+ a task: pass@2 0.500, pass^2 0.000; 0 tool calls, 0 errors; first identity lookups that found the user (user exists) 0/0; ended: user_stop 4');
    assert.match(out[2]!, /^eval-other: mean 0\.7500 ± 0\.2500, difference \+0\.5000 ± 0\.5000 \(paired over tasks\) \| cancel 0\.75$/);
    assert.equal(out[3], '  4 episodes, 2+ a task: pass@2 1.000, pass^2 0.500; 2 tool calls, 1 errors; first identity lookups that found the user (user exists) 1/2; ended: user_stop 3, max_turns 1');
  });
});

describe('longrun analyze episode-lines', () => {
  it("writes an eval folder's episodes as per-episode lines that compare reads back", () => {
    const folder = evalFolder('eval-lines', [cancelTask('validation_10'), { id: 'validation_2' }], [
      { taskId: 'validation_10', trial: 0, status: 'ok', reward: 1, terminationReason: 'user_stop' },
      { taskId: 'validation_2', trial: 1, status: 'ok', reward: 0, terminationReason: 'max_turns' },
      { taskId: 'validation_2', trial: 0, status: 'ok', reward: 0.5 },
    ]);
    const text = episodeLinesOf(folder);
    assert.equal(text, [
      '=== validation_2 (task) reward 0.5 trial 0 unknown',
      '=== validation_2 (task) reward 0 trial 1 max_turns',
      '=== validation_10 (cancel) reward 1 trial 0 user_stop',
      '',
    ].join('\n'));
    const file = join(dir, 'lines.heldout.txt');
    writeFileSync(file, text);
    assert.deepEqual([...readHeldoutRun(file).byTask], [['validation_2', [0.5, 0]], ['validation_10', [1]]]);
  });

  it('names the missing file of a folder that is not an eval folder', () => {
    const notEval = join(dir, 'not-eval');
    mkdirSync(notEval, { recursive: true });
    writeFileSync(join(notEval, 'config.json'), '{}');
    assert.throws(() => episodeLinesOf(notEval), /not-eval is not a `longrun eval --out` folder: it has no trajectories\.jsonl/);
    writeFileSync(join(notEval, 'trajectories.jsonl'), '');
    assert.throws(() => episodeLinesOf(notEval), /config\.json names no readable tasks file/);
  });
});

describe('longrun analyze failures', () => {
  it('classifies proposals by the expert wording', () => {
    assert.equal(proposalKind('Here are the details: cancel order #W1 because …'), 'cancel');
    assert.equal(proposalKind('Here are the details: exchange in order #W2 …'), 'exchange');
    assert.equal(proposalKind('Here is the change: pay for order #W3 with …'), 'modify_payment');
    assert.equal(proposalKind('Shall I do it?'), 'unrecognised');
  });

  it('tabulates first proposals, products, items, tool errors, refusals and endings per family', () => {
    const rows = [
      // cancel, right action at once.
      { taskId: 'c1', reward: 1, terminationReason: 'user_stop', messages: [msg.propose('cancel order #W1'), { role: 'user', content: 'yes' }] },
      // cancel, proposes an exchange first, turned down three times, ends at the turn limit.
      { taskId: 'c2', reward: 0, terminationReason: 'max_turns', messages: [
        msg.call('get_order_details', { order_id: '#W9' }), msg.tool('Error: order not found', true),
        msg.propose('exchange in order #W1'), msg.no(0), msg.propose('cancel order #W2'), msg.no(1), msg.propose('cancel order #W3'), msg.no(2),
      ] },
      // exchange: looks up the gold product, names both gold items.
      { taskId: 'e1', reward: 1, terminationReason: 'user_stop', messages: [
        msg.call('get_product_details', { product_id: '111' }), msg.tool('{}'), msg.propose('exchange in order #W5: item 501 for 502'),
      ] },
      // exchange: the wrong product, and the proposal misses the new item.
      { taskId: 'e2', reward: 0, terminationReason: 'user_stop', messages: [
        msg.call('get_product_details', { product_id: '999' }), msg.tool('{}'), msg.propose('exchange in order #W5: item 501 for 777'), msg.no(0),
      ] },
    ];
    const folder = evalFolder('eval-failures', [cancelTask('c1'), cancelTask('c2'), exchangeTask('e1'), exchangeTask('e2')], rows);
    const out = episodeFailures(folder).split('\n');
    assert.equal(out[0], `${folder}: 4 episodes`);
    assert.equal(out[3], '| cancel | 2 | 0.500 | 1/2 | — | — | 1 | cancel 1, exchange 1 | get_order_details: Error: order not found 1 | user_stop 1, max_turns 1 |');
    assert.equal(out[4], '| exchange | 2 | 0.500 | 2/2 | 1/2 | 1/2 | 0 | exchange 2 | — | user_stop 2 |');
    assert.equal(out[5], "first proposals that name the task's action (write families): 3/4");
    const buckets = out.slice(out.indexOf('| proposals turned down | episodes | mean reward | ended at the turn limit |') + 2, -1);
    assert.deepEqual(buckets, ['| 0 | 2 | 1.000 | 0 |', '| 1 | 1 | 0.000 | 0 |', '| 3 or more | 1 | 0.000 | 1 |']);
  });

  it('stops on a trajectory row without messages, naming the line', () => {
    const folder = evalFolder('eval-bad', [cancelTask('c1')], [{ taskId: 'c1', reward: 1 }]);
    assert.throws(() => episodeFailures(folder), /trajectories\.jsonl line 1: needs a taskId, a numeric reward and messages/);
  });
});

describe('longrun analyze transcripts', () => {
  const row = (step: number, sample: number, reward: number, withMessages = true): EpisodeRow => ({
    kind: 'val', step, taskId: 't1', sample, family: 'cancel', reward, termination: 'user_stop',
    messages: withMessages
      ? [
        { role: 'assistant', content: 'Hi! How can I help you today?' },
        { role: 'user', content: 'Cancel #W1, please.' },
        { role: 'assistant', content: '', toolCalls: [{ name: 'cancel_pending_order', arguments: { order_id: '#W1', reason: 'no longer needed' } }] },
        { role: 'tool', name: 'cancel_pending_order', content: 'x'.repeat(50) },
      ]
      : undefined,
  });

  it('episodeMarkdown keeps calls whole and cuts tool results', () => {
    const md = episodeMarkdown(row(4, 0, 1), 10);
    assert.match(md, /^#### t1 \(cancel\), val, step 4, sample 0: reward 1, ended by user_stop/);
    assert.ok(md.includes('- **agent** calls `cancel_pending_order({"order_id":"#W1","reason":"no longer needed"})`'));
    assert.ok(md.includes('- **user**: Cancel #W1, please.'));
    assert.ok(md.includes(`\`${'x'.repeat(10)}…\``));
    assert.ok(!md.includes('x'.repeat(11)));
  });

  it('selectEpisodes keeps rows with messages of the asked tasks and steps, in task, step, sample order', () => {
    const rows: EpisodeRow[] = [row(4, 0, 1), row(0, 1, 0, false), row(0, 0, 0), { ...row(0, 0, 1), taskId: 'other' }, { ...row(2, 0, 1), kind: 'train' }];
    const picked = selectEpisodes(rows, { tasks: ['t1'], steps: [0, 4] });
    assert.deepEqual(picked.map((r) => [r.step, r.sample]), [[0, 0], [4, 0]]);
    assert.deepEqual(selectEpisodes(rows, { tasks: ['t1'], steps: [], kind: 'train' }).map((r) => r.step), [2]);
  });

  it('reads a file or an eval folder, and refuses bad options and files with a clear error', () => {
    const file = join(dir, 'episodes.jsonl');
    writeFileSync(file, [row(0, 0, 0), row(4, 0, 1)].map((r) => JSON.stringify(r)).join('\n'));
    const md = transcripts(file, { task: ['t1'], step: ['4'], toolChars: '5' });
    assert.match(md, /^#### t1 \(cancel\), val, step 4, sample 0: reward 1/);
    assert.ok(!md.includes('step 0'));
    const folder = evalFolder('eval-transcripts', [], [{ taskId: 't1', trial: 2, reward: 0, terminationReason: 'max_turns', messages: [{ role: 'user', content: 'hello' }] }]);
    assert.match(transcripts(folder, { task: ['t1'], step: [], toolChars: '120' }), /^#### t1, sample 2: reward 0, ended by max_turns\n\n- \*\*user\*\*: hello\n$/);
    assert.throws(() => transcripts(file, { task: [], step: [], toolChars: '120' }), /give at least one --task/);
    assert.throws(() => transcripts(file, { task: ['t1'], step: ['-1'], toolChars: '120' }), /--step must be a non-negative integer, got -1/);
    assert.throws(() => transcripts(file, { task: ['t1'], step: [], toolChars: 'x' }), /--tool-chars must be a non-negative integer/);
    assert.throws(() => transcripts(file, { task: ['t9'], step: [], toolChars: '120' }), /no recorded conversation of t9/);
    writeFileSync(join(dir, 'broken.jsonl'), '{"taskId":');
    assert.throws(() => transcripts(join(dir, 'broken.jsonl'), { task: ['t1'], step: [], toolChars: '120' }), /broken\.jsonl:1: not a JSON line/);
  });
});

describe('longrun analyze advantage-weights', () => {
  const ep = (step: number, taskId: string, reward: number, modelTokens: number, family = 'cancel', kind = 'train') => ({ kind, step, taskId, family, reward, modelTokens });

  it('long failures outweigh the successes under token-mean, never under seq-mean', () => {
    // One group: 2 successes of 100 sampled tokens, 6 failures of 300. GRPO: mean 0.25, unbiased std √(0.25·0.75·8/7).
    const group = [...[0, 1].map(() => ep(1, 'a', 1, 100)), ...[0, 1, 2, 3, 4, 5].map(() => ep(1, 'a', 0, 300))];
    const all = advantageWeights(group).get('all')!;
    const sd = Math.sqrt((2 * 0.75 ** 2 + 6 * 0.25 ** 2) / 7);
    const aPos = 0.75 / (sd + 1e-6);
    const aNeg = 0.25 / (sd + 1e-6);
    assert.equal(all.groups, 1);
    assert.deepEqual([all.pos.episodes, all.neg.episodes], [2, 6]);
    assert.ok(Math.abs(all.pos.tokenWeight - 2 * aPos * 100) < 1e-9);
    assert.ok(Math.abs(all.neg.tokenWeight - 6 * aNeg * 300) < 1e-9);
    // −:+ = (6·0.25·300)/(2·0.75·100) = 3 under token-mean; the two sides of a group balance under seq-mean.
    assert.ok(Math.abs(all.neg.tokenWeight / all.pos.tokenWeight - 3) < 1e-9);
    assert.ok(Math.abs(all.neg.seqWeight / all.pos.seqWeight - 1) < 1e-9);
    const table = advantageWeightsTable('e.jsonl', advantageWeights(group)).split('\n');
    assert.equal(table[0], 'e.jsonl: groups drawn 1, informative 1');
    assert.equal(table[4], '| all | 1 | 0.25 | 1 | 2 / 6 | 100 / 300 | 3.00 | 1.00 |');
  });

  it('all-equal groups are counted as drawn and carry nothing; validation rows are left out; families are kept apart', () => {
    const rows = [
      ep(1, 'a', 1, 50), ep(1, 'a', 1, 50), // all equal
      ep(2, 'a', 1, 10, 'info'), ep(2, 'a', 0, 10, 'info'), // informative, other step
      ep(1, 'b', 1, 10, 'cancel', 'val'), ep(1, 'b', 0, 10, 'cancel', 'val'),
    ];
    const t = advantageWeights(rows);
    assert.equal(t.get('all')!.groups, 1);
    assert.equal(t.get('all')!.drawn, 2);
    assert.equal(t.get('all')!.rewardSum, 1.5); // 1 for the all-equal group, 0.5 for the other
    assert.deepEqual([...t.keys()].sort(), ['all', 'cancel', 'info']);
    assert.deepEqual([t.get('cancel')!.drawn, t.get('cancel')!.groups], [1, 0]);
    assert.deepEqual([t.get('info')!.pos.episodes, t.get('info')!.neg.episodes], [1, 1]);
    // A run without training rows (a validation-only file) prints a dash, not NaN.
    assert.match(advantageWeightsTable('v.jsonl', advantageWeights(rows.slice(4))), /\| all \| 0 \| — \| 0 \|/);
  });

  it('parseEpisodes reads the rows, and stops on a line that is not JSON or a training row without its fields', () => {
    const good = JSON.stringify(ep(1, 'a', 1, 10));
    const rows = parseEpisodes(`${good}\n\n${JSON.stringify({ kind: 'val', step: 0 })}\n`, 'e.jsonl');
    assert.equal(rows.length, 2);
    assert.throws(() => parseEpisodes(`${good}\n{"kind": "train",`, 'e.jsonl'), /e\.jsonl:2: not JSON/);
    assert.throws(() => parseEpisodes(JSON.stringify({ kind: 'train', step: 1, taskId: 'a', reward: 1 }), 'e.jsonl'), /e\.jsonl:1: a training episode needs .*modelTokens/);
    assert.throws(() => parseEpisodes('3', 'e.jsonl'), /e\.jsonl:1: not an episode row/);
  });
});

describe('longrun analyze proposals', () => {
  const yes = { role: 'user', content: YES_REPLIES[0] };
  const ask = msg.propose('cancel order #W1');
  const row = (taskId: string, trial: number, reward: number, messages: unknown[], terminationReason = 'user_stop') => ({ taskId, trial, status: 'ok', reward, terminationReason, messages });
  const tasks = [cancelTask('c1'), cancelTask('c2'), exchangeTask('e1')];
  const baseRows = [
    row('c1', 0, 1, [ask, msg.no(0), ask, yes]), row('c1', 1, 0, [ask, msg.no(1)], 'max_turns'),
    row('c2', 0, 1, [ask, yes]), row('c2', 1, 1, [ask, yes]),
    row('e1', 0, 0, []), row('e1', 1, 0, []),
    { taskId: 'e1', trial: 2, status: 'error', reward: 0 },
  ];
  const otherRows = [
    row('c1', 0, 1, [ask, yes]), row('c1', 1, 1, [ask, yes]),
    row('c2', 0, 1, [ask, yes]), row('c2', 1, 0, [ask, msg.no(0), ask, msg.no(2)], 'max_turns'),
    row('e1', 0, 1, [ask, msg.no(1), ask, yes]), row('e1', 1, 0, []),
  ];

  it('pairs two eval folders per family: mean@1, first-proposal success, their differences ± the standard error over tasks, pass@k, turn limit', () => {
    const t = pairedProposalTable(readProposalRun(evalFolder('p-base', tasks, baseRows)), readProposalRun(evalFolder('p-other', tasks, otherRows)));
    assert.equal(t.k, 2);
    assert.deepEqual(t.rows.map((r) => [r.family, r.tasks]), [['cancel', 2], ['exchange', 1], ['all', 3]]);
    const [cancel, exchange, all] = t.rows as [typeof t.rows[0], typeof t.rows[0], typeof t.rows[0]];
    assert.deepEqual(cancel.base.meanAt1, { mean: 0.75, stdErr: 0.25 });
    assert.deepEqual(cancel.base.firstProposal, { mean: 0.5, stdErr: 0.5 }, 'c1 succeeded only after a refusal');
    assert.deepEqual(cancel.other.firstProposal, { mean: 0.75, stdErr: 0.25 });
    assert.deepEqual(cancel.meanDiff, { mean: 0, stdErr: 0.5 });
    assert.equal(cancel.firstProposalDiff.mean, 0.25);
    assert.ok(Math.abs(cancel.firstProposalDiff.stdErr - 0.75) < 1e-12);
    assert.deepEqual([cancel.base.passAtK, cancel.base.passHatK, cancel.other.passAtK, cancel.other.passHatK], [1, 0.5, 1, 0.5]);
    assert.deepEqual([cancel.base.turnLimit, cancel.base.episodes, cancel.other.turnLimit], [1, 4, 1]);
    assert.deepEqual([cancel.base.turnedDownPerEpisode, cancel.other.turnedDownPerEpisode], [0.5, 0.5]);
    assert.deepEqual([exchange.meanDiff, exchange.firstProposalDiff], [{ mean: 0.5, stdErr: 0 }, { mean: 0, stdErr: 0 }], 'a success after a refusal is not a first-proposal success');
    assert.ok(Math.abs(all.meanDiff.mean - 1 / 6) < 1e-12);
    assert.deepEqual([all.base.passAtK, all.other.passAtK, all.other.passHatK].map((x) => x.toFixed(3)), ['0.667', '1.000', '0.333']);
    const text = formatPairedTable(t);
    assert.match(text, /^p-base → p-other: 3 tasks paired, 2 trials each; ± is the standard error over tasks/);
    assert.match(text, /\n\| cancel \| 2 \| 0\.750 ± 0\.250 \| 0\.750 ± 0\.250 \| \+0\.000 ± 0\.500 \| 0\.500 ± 0\.500 \| 0\.750 ± 0\.250 \| \+0\.250 ± 0\.750 \| 1\.000 → 1\.000 \| 0\.500 → 0\.500 \| 1\/4 → 1\/4 \| 0\.50 → 0\.50 \|\n/);
  });

  it('writes per-episode rows that read back to the same table, and pairs only the tasks both runs hold', () => {
    const base = evalFolder('p-base2', tasks, baseRows);
    const rows = proposalRowsOfEvalFolder(base);
    assert.equal(rows.length, 6, 'the error row is left out');
    assert.deepEqual(rows[0], { taskId: 'c1', family: 'cancel', trial: 0, reward: 1, ending: 'user_stop', proposals: 2, turnedDown: 1 });
    const file = join(dir, 'p-base2.proposals.jsonl');
    writeFileSync(file, formatProposalRows(rows));
    const other = evalFolder('p-other2', tasks, otherRows);
    assert.equal(formatPairedTable(pairedProposalTable(readProposalRun(file), readProposalRun(other))), formatPairedTable(pairedProposalTable(readProposalRun(base), readProposalRun(other))), 'the rows name the run as the folder did (p-base2)');
    // A run still going: e1 not reached, c2 with one trial of two; only c1 is complete in both.
    const partial = evalFolder('p-partial', tasks, otherRows.filter((r) => r.taskId === 'c1' || (r.taskId === 'c2' && r.trial === 0)));
    const t = pairedProposalTable(readProposalRun(file), readProposalRun(partial));
    assert.deepEqual(t.rows.map((r) => [r.family, r.tasks]), [['cancel', 1], ['all', 1]]);
    assert.equal(t.k, 2);
    assert.match(formatPairedTable(t), /^p-base2 → p-partial: 1 tasks paired, 2 trials each \(of 3 and 2 tasks: only those with all 2 trials in both\)/);
  });

  it('stops on bad input with the file and the reason', () => {
    assert.throws(() => parseProposalRows('{"taskId":"c1","family":"cancel","trial":0,"reward":1}\n', 'x.jsonl'), /x\.jsonl:1: a proposal row needs/);
    assert.throws(() => parseProposalRows('nope\n', 'y.jsonl'), /y\.jsonl:1: not JSON/);
    const ticket = evalFolder('p-ticket', tasks, baseRows);
    writeFileSync(join(ticket, 'config.json'), JSON.stringify({ tasksFile: join(ticket, 'tasks.json'), user: 'ticket' }));
    assert.throws(() => proposalRowsOfEvalFolder(ticket), /this eval used --user ticket/);
    const other = evalFolder('p-disjoint', [cancelTask('z9')], [row('z9', 0, 1, [])]);
    assert.throws(() => pairedProposalTable(readProposalRun(evalFolder('p-base3', tasks, baseRows)), readProposalRun(other)), /no task in common/);
  });
});

describe('longrun analyze (the command line)', () => {
  const cli = (...args: string[]) => run(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'analyze', ...args]);

  it('lists its subcommands, each with --help, and prints a comparison of committed per-episode files', { timeout: 60_000 }, async () => {
    const { stdout: help } = await cli('--help');
    for (const sub of ['compare', 'episode-lines', 'failures', 'transcripts', 'advantage-weights', 'proposals', 'sink-kl']) assert.match(help, new RegExp(`^  ${sub} `, 'm'));
    const { stdout: transcriptHelp } = await cli('transcripts', '--help');
    assert.match(transcriptHelp, /--tool-chars <n>/);
    const { stdout } = await cli('compare', 'docs/results/retail-grpo/base.heldout.txt', 'docs/results/retail-grpo/grpo/seqmean-cost1.heldout.txt');
    assert.match(stdout, /^base\.heldout\.txt: mean 0\.2734 ± 0\.0327 over 128 tasks/);
    assert.match(stdout, /\nseqmean-cost1\.heldout\.txt: mean 0\.3359 ± 0\.0386, difference \+0\.0625 ± 0\.0237 \(paired over tasks\)/);
  });

  it('exits 1 with the reason on bad input', { timeout: 60_000 }, async () => {
    await assert.rejects(cli('failures', join(dir, 'missing-dir')), (e: { code: number; stderr: string }) => {
      assert.equal(e.code, 1);
      assert.match(e.stderr, /longrun: .*missing-dir is not a `longrun eval --out` folder: it has no config\.json/);
      return true;
    });
  });
});

describe('longrun analyze sink-kl (exact vs ignored attention sinks on recorded token ids)', () => {
  const cfg = validateConfig({
    num_hidden_layers: 2, hidden_size: 16, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8, sliding_window: 4,
    num_local_experts: 4, num_experts_per_tok: 2, intermediate_size: 8, vocab_size: 32, rope_theta: 100,
    max_position_embeddings: 64, rms_norm_eps: 1e-5, initializer_range: 0.3,
  });
  /** A checkpoint whose every sink logit is `sink`. */
  const checkpoint = (name: string, sink: number) => {
    const model = new GptOssModel(cfg, { seed: 5, grads: false });
    for (const [k, t] of model.parameters()) if (k.endsWith('self_attn.sinks')) t.fill(sink);
    const out = join(dir, name);
    saveModel(out, model);
    model.dispose();
    return out;
  };
  const tokenRow = (taskId: string, trial: number, prompt: number[], response: number[], responseMask: number[]) => ({ taskId, trial, reward: 0, tokens: { prompt, response, responseMask } });
  const ids = (n: number, seed: number) => Array.from({ length: n }, (_, i) => (i * 7 + seed * 13) % 32);
  const episodes = evalFolder('sink-kl', [], [
    tokenRow('validation_1', 0, ids(10, 1), ids(8, 2), [1, 1, 1, 0, 0, 1, 1, 1]),
    tokenRow('validation_0', 1, ids(12, 3), ids(5, 4), [1, 1, 1, 1, 1]),
    tokenRow('validation_0', 0, ids(9, 5), ids(6, 6), [1, 1, 0, 0, 1, 1]),
    { taskId: 'validation_2', trial: 0, reward: 1 },
  ]);

  it('reads the episodes with token ids, trial 0 first in task order, and refuses a folder without any', () => {
    assert.deepEqual(readTokenEpisodes(episodes).map((e) => `${e.taskId}#${e.trial}`), ['validation_0#0', 'validation_1#0', 'validation_0#1']);
    const none = evalFolder('sink-kl-none', [], [{ taskId: 'a', trial: 0, reward: 1 }]);
    assert.throws(() => sinkKl({ checkpoint: 'x', episodes: none }), /no episode in .*trajectories\.jsonl carries token ids; evaluate with `longrun eval --agent checkpoint --save-tokens`/);
  });

  it('measures a KL that is > 0 with large sinks and 0 when the sinks are already −∞ in effect, over the agent positions', () => {
    const big = sinkKl({ checkpoint: checkpoint('ckpt-sinks-2', 2), episodes, maxEpisodes: 2 });
    assert.deepEqual(big.used.map((u) => [u.taskId, u.trial, u.tokens, u.agentTokens]), [['validation_0', 0, 15, 4], ['validation_1', 0, 18, 6]]);
    assert.equal(big.agent.positions, 10);
    assert.equal(big.all.positions, 14 + 17);
    assert.ok(big.agent.meanKl > 1e-3, `sinks of 2 move the distributions (mean KL ${big.agent.meanKl})`);
    assert.ok(big.agent.top1Agreement <= 1 && big.agent.maxKl >= big.agent.medianKl);
    assert.match(formatSinkKl(big), /\| the agent's sampled tokens \| 10 \|/);
    const tiny = sinkKl({ checkpoint: checkpoint('ckpt-sinks-off', -1e4), episodes, maxEpisodes: 3 });
    assert.ok(tiny.all.maxKl < 1e-6, `sinks at −1e4 already add nothing (max KL ${tiny.all.maxKl})`);
    assert.equal(tiny.all.top1Agreement, 1);
  });

  it('runs from the command line', { timeout: 60_000 }, async () => {
    const { stdout } = await run(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'analyze', 'sink-kl', '--checkpoint', checkpoint('ckpt-cli', 1), '--episodes', episodes, '--max-episodes', '1', '--json']);
    const r = JSON.parse(stdout) as { used: { taskId: string }[]; agent: { positions: number; meanKl: number } };
    assert.deepEqual(r.used.map((u) => u.taskId), ['validation_0']);
    assert.equal(r.agent.positions, 4);
    assert.ok(r.agent.meanKl > 0);
  });
});
