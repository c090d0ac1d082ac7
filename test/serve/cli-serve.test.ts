import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { describe, it } from 'node:test';
import { presetConfig } from '../../src/model/config.ts';
import { saveModel } from '../../src/model/checkpoint/model-io.ts';
import { GptOssModel } from '../../src/model/model.ts';
import { REPO_ROOT, TAU2_RETAIL_DIR } from '../helpers/paths.ts';
import { api } from './helpers.ts';

async function startCli(args: string[], env: NodeJS.ProcessEnv = {}, kind = 'env') {
  const child = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'src/cli/main.ts'), 'serve', kind, '--port', '0', ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, LONGRUN_SERVE_TOKEN: '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let log = '';
  child.stderr.on('data', (d) => (log += d));
  const exited = new Promise<number | null>((r) => child.on('exit', (code) => r(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`no start in 30 s: ${log}`)), 30_000);
    child.stderr.on('data', () => {
      const m = /listening on (http:\/\/\S+)/.exec(log);
      if (m) {
        clearTimeout(t);
        resolve(m[1]!);
      }
    });
    void exited.then((code) => reject(new Error(`exited early (${code}): ${log}`)));
  });
  return { child, url, exited, log: () => log };
}

describe('longrun serve env (CLI)', () => {
  it('serves with a token from the environment and exits 0 on SIGTERM after closing its sessions', async () => {
    const s = await startCli(['--data', TAU2_RETAIL_DIR, '--max-sessions', '3'], { LONGRUN_SERVE_TOKEN: 'tok' });
    const auth = { authorization: 'Bearer tok' };
    assert.equal((await api(s.url, 'GET', '/envs')).status, 401);
    const c = await api(s.url, 'POST', '/sessions', { env_id: 'longrun/retail-v0' }, auth);
    assert.equal(c.status, 201);
    assert.equal((await api(s.url, 'POST', `/sessions/${c.body.session_id}/reset`, {}, auth)).status, 200);
    s.child.kill('SIGTERM');
    assert.equal(await s.exited, 0);
    assert.match(s.log(), /SIGTERM: shutting down \(closing 1 session\(s\)\)/);
    assert.match(s.log(), /stopped/);
  });

  it('exits 0 on SIGINT and rejects bad flags with a clear message', async () => {
    const s = await startCli(['--idle-timeout', '0']);
    assert.equal((await api(s.url, 'GET', '/health')).status, 200);
    s.child.kill('SIGINT');
    assert.equal(await s.exited, 0);
    const bad = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'src/cli/main.ts'), 'serve', 'env', '--max-sessions', 'lots'], { cwd: REPO_ROOT });
    let err = '';
    bad.stderr.on('data', (d) => (err += d));
    const code = await new Promise<number | null>((r) => bad.on('exit', (c) => r(c)));
    assert.notEqual(code, 0);
    assert.match(err, /--max-sessions must be an integer >= 1/);
  });

  it('serve model: loads a checkpoint, answers /v1/models and /v1/completions, exits 0 on SIGTERM', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-cli-model-'));
    try {
      const model = new GptOssModel(presetConfig('tiny-1m'), { seed: 1, grads: false });
      saveModel(join(dir, 'ckpt'), model);
      model.dispose();
      const s = await startCli(['--checkpoint', join(dir, 'ckpt'), '--model-name', 'tiny'], {}, 'model');
      const models = await api(s.url, 'GET', '/v1/models');
      assert.equal(models.body.data[0].id, 'tiny');
      const c = await api(s.url, 'POST', '/v1/completions', { prompt: [1, 2, 3], max_tokens: 3, temperature: 0, logprobs: 1 });
      assert.equal(c.status, 200, JSON.stringify(c.body));
      assert.equal(c.body.choices[0].token_ids.length, 3);
      s.child.kill('SIGTERM');
      assert.equal(await s.exited, 0);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
