import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { test } from 'node:test';
import { REPO_ROOT, TAU2_RETAIL_DIR } from '../helpers/paths.ts';

function longrun(...args: string[]): { code: number | null; out: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { cwd: REPO_ROOT, encoding: 'utf8', timeout: 60_000 });
  return { code: r.status, out: `${r.stdout}${r.stderr}` };
}

test('longrun env list prints the registered ids', () => {
  const r = longrun('env', 'list');
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /GuessNumber-v0/);
  assert.match(r.out, /ReverseText-v0/);
});

test('longrun env check exits 0 on a passing env and prints the report', () => {
  const r = longrun('env', 'check', 'GuessNumber-v0');
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /checkEnv <GuessNumberEnv<GuessNumber-v0>>: PASSED/);
  const j = longrun('env', 'check', 'ReverseText-v0', '--json', '--kwargs', '{"numWords": 2}');
  assert.equal(j.code, 0, j.out);
  assert.equal(JSON.parse(j.out).ok, true);
});

test('longrun env check --data runs the checker on a retail env', () => {
  const r = longrun('env', 'check', 'longrun/retail-v0', '--data', TAU2_RETAIL_DIR);
  assert.equal(r.code, 0, r.out);
  assert.match(r.out, /checkEnv <ToolUseEnv<longrun\/retail-v0>>: PASSED/);
});

test('longrun env check exits non-zero on unknown ids and bad kwargs', () => {
  const unknown = longrun('env', 'check', 'GuessNumbr-v0');
  assert.equal(unknown.code, 1);
  assert.match(unknown.out, /Did you mean: `GuessNumber`\?/);
  const bad = longrun('env', 'check', 'GuessNumber-v0', '--kwargs', '{"n": 1}');
  assert.equal(bad.code, 1);
  assert.match(bad.out, /n must be an integer >= 2/);
});

test('envCheckCommand returns 1 and prints the failures for a broken env', async () => {
  const { envCheckCommand } = await import('../../src/cli/env.ts');
  const { register } = await import('../../src/gym/index.ts');
  const { RandomStartEnv } = await import('./toy-envs.ts');
  class FourTuple extends RandomStartEnv {
    override async step(): Promise<never> {
      return [0, 0, false, {}] as never;
    }
  }
  register({ id: 'BrokenForCli-v0', entryPoint: () => new FourTuple() });
  const lines: string[] = [];
  assert.equal(await envCheckCommand('BrokenForCli-v0', {}, (l) => lines.push(l)), 1);
  assert.match(lines.join('\n'), /FAILED[\s\S]*\[FAIL\] step returns/);
  assert.equal(await envCheckCommand('GuessNumber-v0', { json: true }, (l) => lines.push(l)), 0);
});
