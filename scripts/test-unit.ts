/**
 * `npm run test:unit`: Node's test runner on every `test/**\/*.test.ts` (or the files given), with the spec reporter on
 * stdout (its closing summary, `ℹ tests N`, `ℹ pass N`, `ℹ skipped N` …, as before) and a TAP copy in a scratch file that
 * this script reads afterwards. It exits non-zero when any test failed, and also when any test or suite was skipped
 * or marked todo: Node's runner exits 0 on those (and its summary does not count a skipped suite at all), so a test
 * that quietly stopped running would go unnoticed. `clients/python/conftest.py` does the same for pytest.
 *
 *   node --import tsx scripts/test-unit.ts [FILE …]
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

/** A test or suite that Node's runner reported with a SKIP or TODO directive. */
export interface NotRun {
  directive: 'SKIP' | 'TODO';
  /** The names from the file's top level down to this test, joined by " › ". */
  name: string;
  reason: string;
}

/**
 * The skipped and todo tests and suites of a TAP report from Node's `tap` reporter. A result line is
 * `<indent>ok N - name # SKIP reason` (or `not ok`, or `# TODO`); `#` inside a name is escaped as `\#`, so only an
 * unescaped ` # ` starts a directive. Nesting is read from the indentation (4 spaces a level).
 */
export function notRunTests(tap: string): NotRun[] {
  const out: NotRun[] = [];
  const open: string[] = []; // "# Subtest: name" lines by depth: the path to the current test
  for (const line of tap.split('\n')) {
    const sub = /^( *)# Subtest: (.*)$/.exec(line);
    if (sub) {
      const depth = sub[1].length / 4;
      open.length = depth;
      open.push(sub[2]);
      continue;
    }
    const m = /^( *)(?:not )?ok \d+ - (.*)$/.exec(line);
    if (!m) continue;
    const depth = m[1].length / 4;
    const d = /^(.*?)(?<!\\) # (SKIP|TODO)\b ?(.*)$/i.exec(m[2]);
    if (d) {
      const path = [...open.slice(0, depth), d[1]].map(unescapeTap);
      out.push({ directive: d[2].toUpperCase() as 'SKIP' | 'TODO', name: path.join(' › '), reason: unescapeTap(d[3]) });
    }
    open.length = depth;
  }
  return out;
}

function unescapeTap(s: string): string {
  return s.replace(/\\#/g, '#').replace(/\\\\/g, '\\');
}

/** Every `*.test.ts` under `dir`, sorted (what `find test -name '*.test.ts' | sort` listed). */
export function testFiles(dir: string): string[] {
  const out: string[] = [];
  for (const e of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (e.isFile() && e.name.endsWith('.test.ts')) out.push(join(e.parentPath ?? e.path, e.name));
  }
  return out.sort();
}

/** Runs the files; returns the exit status this script ends with (and prints why it is not 0). */
export function runUnitTests(files: readonly string[], o: { cwd?: string; env?: NodeJS.ProcessEnv } = {}): number {
  const cwd = o.cwd ?? process.cwd();
  if (files.length === 0) {
    console.error('test:unit: no test files found');
    return 1;
  }
  const scratch = mkdtempSync(join(tmpdir(), 'longrun-test-unit-'));
  const tapFile = join(scratch, 'report.tap');
  try {
    const args = ['--import', 'tsx', '--test', '--test-reporter=spec', '--test-reporter-destination=stdout', '--test-reporter=tap', `--test-reporter-destination=${tapFile}`, ...files];
    const r = spawnSync(process.execPath, args, { cwd, env: o.env ?? process.env, stdio: 'inherit' });
    if (r.error) throw r.error;
    let tap = '';
    try {
      tap = readFileSync(tapFile, 'utf8');
    } catch (err) {
      console.error(`test:unit: Node's runner wrote no TAP report (${(err as Error).message})`);
      return r.status || 1;
    }
    const notRun = notRunTests(tap);
    const skipped = notRun.filter((t) => t.directive === 'SKIP').length;
    const todo = notRun.length - skipped;
    console.log(`ℹ skipped or todo, suites included: ${notRun.length} (${skipped} skipped, ${todo} todo)`);
    for (const t of notRun) console.log(`ℹ ${t.directive} ${t.name}${t.reason ? ` — ${t.reason}` : ''}`);
    if (r.status !== 0) {
      console.error(`test:unit: Node's test runner exited with ${r.status ?? r.signal}`);
      return r.status || 1;
    }
    if (notRun.length > 0) {
      console.error(`test:unit: ${notRun.length} test(s) or suite(s) did not run (listed above); a skipped or todo test fails the run`);
      return 1;
    }
    return 0;
  } finally {
    rmSync(scratch, { recursive: true, force: true });
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const root = join(fileURLToPath(import.meta.url), '..', '..');
  const given = process.argv.slice(2);
  const files = given.length > 0 ? given : testFiles(join(root, 'test')).map((f) => relative(root, f));
  process.exitCode = runUnitTests(files, { cwd: given.length > 0 ? process.cwd() : root });
}
