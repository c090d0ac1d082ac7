import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { REPO_ROOT, TAU2_RETAIL_DIR } from '../../helpers/paths.ts';
import { INITIAL_HASH } from './fixture.ts';

const BIN = join(REPO_ROOT, 'bin', 'longrun');

function exec(stdin: string, extra: string[] = []) {
  return spawnSync(process.execPath, [BIN, 'tau2', 'exec', '--data', TAU2_RETAIL_DIR, ...extra], { input: stdin, encoding: 'utf8', cwd: REPO_ROOT });
}

test('longrun tau2 exec runs the calls in order and prints outputs and the final hash', () => {
  const calls = [
    { name: 'find_user_id_by_email', arguments: { email: 'SOFIA.ROSSI2645@EXAMPLE.COM' } },
    { name: 'get_order_details', arguments: { order_id: 'W5918442' } },
    { name: 'cancel_pending_order', arguments: { order_id: '#W6779827', reason: 'ordered by mistake' } },
    { name: 'calculate', arguments: { expression: '49 + 4079.45' } },
    { name: 'nope', arguments: {} },
  ];
  const r = exec(JSON.stringify({ calls }));
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stderr, '');
  const report = JSON.parse(r.stdout);
  assert.deepEqual(Object.keys(report), ['results', 'final_db_hash']);
  assert.equal(report.results.length, 5);
  assert.deepEqual(report.results[0], { output: 'sofia_rossi_8776', error: false });
  assert.deepEqual(report.results[1], { output: 'Error: Order not found', error: true });
  assert.equal(JSON.parse(report.results[2].output).status, 'cancelled');
  assert.deepEqual(report.results[3], { output: '4128.45', error: false });
  assert.deepEqual(report.results[4], { output: "Error: Tool 'nope' not found.", error: true });
  assert.match(report.final_db_hash, /^[0-9a-f]{64}$/);
  assert.notEqual(report.final_db_hash, INITIAL_HASH);
});

test('longrun tau2 exec with no calls reports the initial hash', () => {
  const r = exec('{"calls": []}');
  assert.equal(r.status, 0, r.stderr);
  assert.deepEqual(JSON.parse(r.stdout), { results: [], final_db_hash: INITIAL_HASH });
});

test('longrun tau2 exec keeps Python number types of wrong-typed arguments (1.0 is a float)', () => {
  const calls = [
    { name: 'find_user_id_by_email', arguments: { email: 1 } },
    { name: 'exchange_delivered_order_items', arguments: { order_id: '#W4817420', item_ids: [7], new_item_ids: [], payment_method_id: 'x' } },
  ];
  const text = JSON.stringify({ calls }).replace('"email":1', '"email":1.0').replace('[7]', '[7.0]');
  const r = exec(text);
  assert.equal(r.status, 0, r.stderr);
  const outputs = JSON.parse(r.stdout).results.map((x: { output: string }) => x.output);
  assert.deepEqual(outputs, ["Error: 'float' object has no attribute 'lower'", 'Error: Number of 7.0 not found.']);
});

test('longrun tau2 exec rejects bad stdin with a message on stderr and nothing on stdout', () => {
  for (const [input, pattern] of [
    ['not json', /not valid JSON/],
    ['{"calls": 3}', /"calls" array/],
    ['[]', /"calls" array/],
    ['{"calls": [{"arguments": {}}]}', /calls\[0\] must be an object with a string "name"/],
  ] as const) {
    const r = exec(input);
    assert.notEqual(r.status, 0, input);
    assert.equal(r.stdout, '', input);
    assert.match(r.stderr, pattern, input);
  }
});
