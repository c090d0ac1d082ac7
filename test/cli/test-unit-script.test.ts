import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { notRunTests, testFiles } from '../../scripts/test-unit.ts';
import { REPO_ROOT } from '../helpers/paths.ts';

const FIXTURES = join(REPO_ROOT, 'test', 'fixtures', 'test-unit');
const runner = (...files: string[]) =>
  spawnSync(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'scripts', 'test-unit.ts'), ...files.map((f) => join(FIXTURES, f))], { cwd: REPO_ROOT, encoding: 'utf8', env: { ...process.env, NODE_TEST_CONTEXT: undefined } });

test('notRunTests reads SKIP and TODO directives of tests and suites, with their paths, and not a "#" escaped in a name', () => {
  const tap = [
    'TAP version 13',
    '# Subtest: skipped suite',
    'ok 1 - skipped suite # SKIP no browser here',
    '# Subtest: outer',
    '    # Subtest: a name with \\# SKIP in it',
    '    ok 1 - a name with \\# SKIP in it',
    '    # Subtest: inner skip',
    '    ok 2 - inner skip # SKIP no python',
    'ok 2 - outer',
    '# Subtest: later',
    'not ok 3 - later # TODO not written',
    '# Subtest: plain',
    'ok 4 - plain',
  ].join('\n');
  assert.deepEqual(notRunTests(tap), [
    { directive: 'SKIP', name: 'skipped suite', reason: 'no browser here' },
    { directive: 'SKIP', name: 'outer › inner skip', reason: 'no python' },
    { directive: 'TODO', name: 'later', reason: 'not written' },
  ]);
  assert.deepEqual(notRunTests('ok 1 - fine\n'), []);
});

test('testFiles lists the *.test.ts files under a folder, sorted, and this file among them', () => {
  const files = testFiles(join(REPO_ROOT, 'test'));
  assert.ok(files.includes(join(REPO_ROOT, 'test', 'cli', 'test-unit-script.test.ts')));
  assert.ok(files.every((f) => f.endsWith('.test.ts')));
  assert.deepEqual(files, [...files].sort());
  assert.ok(!files.some((f) => f.includes('fixtures')), 'fixtures are not tests');
});

test('npm run test:unit: passes when every test runs, fails on a skip or todo (suites too) and on a failure, and prints the summary lines', () => {
  const ok = runner('passes.ts');
  assert.equal(ok.status, 0, ok.stdout + ok.stderr);
  assert.match(ok.stdout, /ℹ pass 1\n/);
  assert.match(ok.stdout, /ℹ skipped or todo, suites included: 0 /);

  const notRun = runner('passes.ts', 'not-run.ts');
  assert.equal(notRun.status, 1, notRun.stdout + notRun.stderr);
  assert.match(notRun.stdout, /ℹ pass 2\n/);
  assert.match(notRun.stdout, /ℹ skipped or todo, suites included: 4 \(3 skipped, 1 todo\)/);
  for (const line of ['ℹ SKIP skipped suite — no browser here', 'ℹ SKIP outer › a skipped test with a \\# in its name — no python', 'ℹ TODO a todo test — later', 'ℹ SKIP skipped at run time — decided inside']) {
    assert.ok(notRun.stdout.includes(line), `${line}\n${notRun.stdout}`);
  }
  assert.match(notRun.stderr, /4 test\(s\) or suite\(s\) did not run/);

  const failed = runner('fails.ts');
  assert.notEqual(failed.status, 0);
  assert.match(failed.stdout, /ℹ fail 1\n/);
});
