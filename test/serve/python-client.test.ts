import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { loadRetailTaskSet } from '../../src/domains/retail/register.ts';
import { startEnvServer, type EnvServerHandle } from '../../src/serve/env-server.ts';
import { goldTurns } from '../../src/serve/gold-turns.ts';
import { replayGoldActions } from '../../src/tooluse/evaluator.ts';
import { REPO_ROOT, TAU2_RETAIL_DIR } from '../helpers/paths.ts';

/** The interpreter: env LONGRUN_TEST_PYTHON (e.g. a venv with gymnasium), else the machine's python3. */
const PYTHON = process.env.LONGRUN_TEST_PYTHON ?? 'python3';
const hasPython = spawnSync(PYTHON, ['--version']).status === 0;

/** Runs a command without blocking the event loop (the server under test lives in this process). */
function run(cmd: string, args: string[], cwd: string, env: NodeJS.ProcessEnv, timeoutMs: number): Promise<{ code: number | null; out: string }> {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (out += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, out });
    });
  });
}

describe('Python client (clients/python) against the real env server', { skip: hasPython ? false : `${PYTHON} is not installed on this machine` }, () => {
  let h: EnvServerHandle;
  let dir: string;
  const token = 'py-client-test-token';
  before(async () => {
    h = await startEnvServer({ host: '127.0.0.1', port: 0, dataDir: TAU2_RETAIL_DIR, token });
    dir = mkdtempSync(join(tmpdir(), 'longrun-py-'));
    const { domain, tasks } = loadRetailTaskSet({ dataDir: TAU2_RETAIL_DIR, version: 'v0' });
    const task = tasks.find((t) => t.id === '20')!;
    writeFileSync(join(dir, 'gold.json'), JSON.stringify({ task_id: task.id, turns: goldTurns(task), gold_hash: domain.hashDb(replayGoldActions(domain, task).db) }));
  });
  after(async () => {
    await h.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('passes python3 -m unittest (offline and server tests, none skipped)', async () => {
    const env = { ...process.env, LONGRUN_ENV_URL: h.url, LONGRUN_SERVE_TOKEN: token, LONGRUN_TEST_GOLD: join(dir, 'gold.json'), PYTHONDONTWRITEBYTECODE: '1' };
    const { code, out } = await run(PYTHON, ['-m', 'unittest', 'discover', '-v', '-s', 'tests', '-t', '.'], join(REPO_ROOT, 'clients', 'python'), env, 60_000);
    assert.equal(code, 0, out);
    assert.match(out, /Ran (\d+) tests/);
    assert.doesNotMatch(out, /skipped/, 'every server test ran');
    assert.match(out, /test_gold_episode_reaches_reward_one .* ok/);
    assert.equal(h.sessions.size, 0, 'the Python tests closed every session they opened');
  });
});
