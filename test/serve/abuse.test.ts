/**
 * The attacks that once took the servers down, replayed against real servers on loopback: the env server as its own
 * `longrun serve env` process (a crash would show as an exit), the model server and the dashboard in-process. Each
 * attack must get a 4xx (or a bounded tool error), and the server must stay up and keep answering other requests
 * (a short request is answered before a long batch ends; no clock thresholds, which a loaded machine breaks).
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { BpeTokenizer } from '../../src/llm/bpe.ts';
import { presetConfig } from '../../src/model/config.ts';
import { saveModel } from '../../src/model/checkpoint/model-io.ts';
import { GptOssModel } from '../../src/model/model.ts';
import { startDashboard } from '../../src/serve/dashboard/server.ts';
import { serveCheckpoint } from '../../src/serve/model-serve.ts';
import type { ModelServerHandle } from '../../src/serve/model-server.ts';
import { REPO_ROOT, TAU2_RETAIL_DIR } from '../helpers/paths.ts';
import { api } from './helpers.ts';

/** A raw request with full control of the headers (fetch will not send a foreign Host). */
function rawHttp(url: string, method: string, path: string, headers: Record<string, string>, body = ''): Promise<{ status: number; body: any }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, method, path, headers: { 'content-length': String(Buffer.byteLength(body)), ...headers } }, (res) => {
      let text = '';
      res.on('data', (d) => (text += d));
      res.on('end', () => {
        let parsed: unknown = text;
        try {
          parsed = JSON.parse(text);
        } catch {
          // keep the text
        }
        resolve({ status: res.statusCode ?? 0, body: parsed });
      });
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** A promise with a flag that says whether it has settled (for order checks without a clock). */
function tracked<T>(p: Promise<T>): { promise: Promise<T>; settled: () => boolean } {
  let done = false;
  const promise = p.finally(() => {
    done = true;
  });
  return { promise, settled: () => done };
}

describe('env server (its own process, no token, loopback) under attack', () => {
  let child: ChildProcess;
  let url: string;
  let log = '';
  before(async () => {
    child = spawn(process.execPath, ['--import', 'tsx', join(REPO_ROOT, 'src/cli/main.ts'), 'serve', 'env', '--port', '0', '--data', TAU2_RETAIL_DIR], {
      cwd: REPO_ROOT, env: { ...process.env, LONGRUN_SERVE_TOKEN: '' }, stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stderr!.on('data', (d) => (log += d));
    url = await new Promise<string>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no start in 60 s: ${log}`)), 60_000);
      child.stderr!.on('data', () => {
        const m = /listening on (http:\/\/\S+)/.exec(log);
        if (m) {
          clearTimeout(t);
          resolve(m[1]!);
        }
      });
      child.on('exit', (code) => reject(new Error(`exited early (${code}): ${log}`)));
    });
  });
  after(() => {
    child.kill('SIGTERM');
  });

  const alive = async (): Promise<void> => {
    assert.equal(child.exitCode, null, `the server exited: ${log}`);
    assert.equal((await api(url, 'GET', '/health')).status, 200);
  };
  const retailSession = async (): Promise<string> => {
    const c = await api(url, 'POST', '/sessions', { env_id: 'longrun/retail-v0' });
    assert.equal(c.status, 201, JSON.stringify(c.body));
    const id = c.body.session_id as string;
    assert.equal((await api(url, 'POST', `/sessions/${id}/reset`, { options: { taskId: '1' } })).status, 200);
    return id;
  };

  it('refuses every out-of-bound kwarg at create (400 naming the bound), including through an unversioned id', async () => {
    const cases: [string, Record<string, unknown>, RegExp][] = [
      ['ReverseText-v0', { maxWordLength: 1e9 }, /kwargs.maxWordLength must be an integer from 1 to 1000, got 1000000000/],
      ['ReverseText', { maxWordLength: 1e9 }, /kwargs.maxWordLength must be an integer from 1 to 1000/],
      ['ReverseText-v0', { numWords: 0 }, /kwargs.numWords must be an integer from 1 to 1000/],
      ['GuessNumber-v0', { n: 1e12 }, /kwargs.n must be an integer from 2 to 1000000/],
      ['GuessNumber-v0', { maxEpisodeSteps: 1e9 }, /kwargs.maxEpisodeSteps must be an integer from 1 to 100000/],
      ['longrun/retail-v0', { maxSteps: 'abc' }, /kwargs.maxSteps must be an integer from 1 to 1000, got "abc"/],
      ['longrun/retail-v0', { maxSteps: -1 }, /kwargs.maxSteps must be an integer from 1 to 1000, got -1/],
      ['longrun/retail-v0', { maxSteps: 2.5 }, /kwargs.maxSteps must be an integer from 1 to 1000, got 2.5/],
      ['longrun/retail-v0', { maxErrors: true }, /kwargs.maxErrors must be an integer/],
      ['longrun/retail-v0', { split: 'x'.repeat(1000) }, /kwargs.split must be a string of 1 to 64 characters/],
      ['longrun/retail-v0', { enforceCommunicationProtocol: 'yes' }, /kwargs.enforceCommunicationProtocol must be true or false/],
    ];
    for (const [env_id, kwargs, message] of cases) {
      const r = await api(url, 'POST', '/sessions', { env_id, kwargs });
      assert.equal(r.status, 400, `${env_id} ${JSON.stringify(kwargs)}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.code, 'invalid_kwargs');
      assert.match(r.body.error.message, message);
    }
    const fine = await api(url, 'POST', '/sessions', { env_id: 'ReverseText-v0', kwargs: { maxWordLength: 1000, numWords: 2 } });
    assert.equal(fine.status, 201);
    assert.equal((await api(url, 'POST', `/sessions/${fine.body.session_id}/reset`, { seed: 1 })).status, 200);
    await alive();
  });

  it("one session's expensive calculate is a quick tool error and does not stall the others", async () => {
    const id = await retailSession();
    // The bound is calculate's own: the size guard refuses the first expression before computing it, and the work
    // budget (counted per operation, not timed) stops the second at its limit; each is a tool error the agent sees.
    const cases: [string, RegExp][] = [
      [Array(30).fill('3**3999999-3**3999999').join('+'), /integer result too large to compute \(over 4000000 bits\)/],
      [Array(30).fill('3**2000000-3**2000000').join('+'), /integer arithmetic too expensive to compute \(this expression needs more than the \d+ ms work limit/],
    ];
    for (const [expression, message] of cases) {
      const step = api(url, 'POST', `/sessions/${id}/step`, { action: { content: null, toolCalls: [{ name: 'calculate', arguments: { expression } }] } });
      const health = api(url, 'GET', '/health');
      const s = await step;
      assert.equal(s.status, 200, JSON.stringify(s.body));
      assert.match(JSON.stringify(s.body.observation), message);
      assert.equal((await health).status, 200);
    }
    await alive();
  });

  it('tool arguments or an action nested 50,000 deep: 422, and the episode goes on (steps and render work)', async () => {
    const id = await retailSession();
    const deep = '['.repeat(50_000) + ']'.repeat(50_000);
    const inArgs = `{"action":{"content":null,"toolCalls":[{"name":"calculate","arguments":{"expression":${deep}}}]}}`;
    for (const body of [inArgs, `{"action":${deep}}`]) {
      const r = await api(url, 'POST', `/sessions/${id}/step`, body);
      assert.equal(r.status, 422, JSON.stringify(r.body).slice(0, 300));
      assert.equal(r.body.error.code, 'invalid_action');
      assert.match(r.body.error.message, /nests deeper than 64 levels/);
    }
    const ok = await api(url, 'POST', `/sessions/${id}/step`, { action: { content: null, toolCalls: [{ name: 'calculate', arguments: { expression: '2+2' } }] } });
    assert.equal(ok.status, 200, JSON.stringify(ok.body));
    assert.match(JSON.stringify(ok.body.observation), /4\.0/);
    const render = await api(url, 'GET', `/sessions/${id}/render`);
    assert.equal(render.status, 200, JSON.stringify(render.body));
    const deepKwargs = await api(url, 'POST', '/sessions', `{"env_id":"GuessNumber-v0","kwargs":{"x":${deep}}}`);
    assert.equal(deepKwargs.status, 400);
    assert.match(deepKwargs.body.error.message, /nests deeper than 64/);
    const deepReset = await api(url, 'POST', `/sessions/${id}/reset`, `{"options":{"taskId":${deep}}}`);
    assert.equal(deepReset.status, 400);
    await alive();
  });

  it('malformed percent-escapes in the path are 400s', async () => {
    for (const [method, path] of [['POST', '/sessions/%ZZ/step'], ['GET', '/sessions/%E0%A4%A/render'], ['DELETE', '/sessions/%']]) {
      const r = await api(url, method, path, method === 'POST' ? {} : undefined);
      assert.equal(r.status, 400, `${method} ${path}: ${JSON.stringify(r.body)}`);
      assert.equal(r.body.error.code, 'bad_request');
      assert.match(r.body.error.message, /Malformed percent-encoding/);
    }
    await alive();
  });

  it('without a token: cross-origin browser POSTs and foreign Host names (DNS rebinding) are refused with 403', async () => {
    const body = JSON.stringify({ env_id: 'GuessNumber-v0' });
    const crossOrigin = await rawHttp(url, 'POST', '/sessions', { 'content-type': 'text/plain', origin: 'http://evil.example' }, body);
    assert.equal(crossOrigin.status, 403);
    assert.equal(crossOrigin.body.error.code, 'forbidden_origin');
    const nullOrigin = await rawHttp(url, 'POST', '/sessions', { 'content-type': 'text/plain', origin: 'null' }, body);
    assert.equal(nullOrigin.status, 403);
    const rebound = await rawHttp(url, 'POST', '/sessions', { host: 'evil.example:8765', 'content-type': 'application/json' }, body);
    assert.equal(rebound.status, 403);
    assert.equal(rebound.body.error.code, 'forbidden_host');
    assert.match(rebound.body.error.message, /start the server with a token/);
    const port = new URL(url).port;
    for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`]) {
      const r = await rawHttp(url, 'POST', '/sessions', { host, origin: `http://localhost:${port}`, 'content-type': 'application/json' }, body);
      assert.equal(r.status, 201, `${host}: ${JSON.stringify(r.body)}`);
    }
    await alive();
  });
});

describe('model server under attack', () => {
  let dir: string;
  let h: ModelServerHandle;
  const bpe = BpeTokenizer.train('find the order of the user and cancel it, thanks\n'.repeat(40), { vocabSize: 300 });
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'longrun-abuse-model-'));
    const model = new GptOssModel(presetConfig('tiny-1m', { vocab_size: bpe.vocabSize }), { seed: 5, grads: false });
    saveModel(join(dir, 'ckpt'), model);
    model.dispose();
    h = await serveCheckpoint({ checkpoint: join(dir, 'ckpt'), port: 0, modelName: 'tiny', maxBatch: 8, maxPrompts: 128 });
  });
  after(async () => {
    await h.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('caps the prompts of one request with a 400 that names the cap', async () => {
    const r = await api(h.url, 'POST', '/v1/completions', { prompt: Array.from({ length: 2000 }, () => [1, 2, 3]), max_tokens: 1 });
    assert.equal(r.status, 400);
    assert.equal(r.body.error.code, 'too_many_prompts');
    assert.match(r.body.error.message, /2000 prompts; the server takes at most 128 per request \(--max-prompts\)/);
  });

  it('a 1-token request does not wait behind a long batch', async () => {
    const prompt = bpe.encode('find the order');
    // 128 prompts × 24 tokens in batches of at most 8: 16 rounds of 24 decode steps. The 1-token request, sent while
    // they run, must come back before them (an order, not a time: it holds on a slow or loaded machine too).
    const big = tracked(api(h.url, 'POST', '/v1/completions', { prompt: Array.from({ length: 128 }, () => prompt), max_tokens: 24, temperature: 0 }));
    await new Promise((r) => setTimeout(r, 100));
    assert.ok(!big.settled(), 'the long batch is still running when the small request is sent');
    const small = await api(h.url, 'POST', '/v1/completions', { prompt, max_tokens: 1, temperature: 0 });
    assert.equal(small.status, 200);
    assert.ok(!big.settled(), 'the 1-token request came back before the long batch, not behind it');
    const b = await big.promise;
    assert.equal(b.status, 200, JSON.stringify(b.body).slice(0, 300));
    assert.equal(b.body.choices.length, 128);
    // Batches of the same prompt give the same tokens as that prompt alone (greedy), whatever the interleaving.
    assert.deepEqual(b.body.choices[5].token_ids[0], small.body.choices[0].token_ids[0]);
  });

  it('refuses foreign Host names and cross-origin pages without a token', async () => {
    const body = JSON.stringify({ prompt: [1, 2], max_tokens: 1 });
    assert.equal((await rawHttp(h.url, 'POST', '/v1/completions', { host: 'evil.example', 'content-type': 'application/json' }, body)).status, 403);
    assert.equal((await rawHttp(h.url, 'POST', '/v1/completions', { origin: 'https://evil.example', 'content-type': 'text/plain' }, body)).status, 403);
    assert.equal((await rawHttp(h.url, 'POST', '/v1/completions', { 'content-type': 'application/json' }, body)).status, 200);
  });
});

describe('dashboard', () => {
  it('answers only loopback Host names and loopback pages', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-abuse-dash-'));
    writeFileSync(join(dir, 'metrics.jsonl'), '{"step": 1, "loss": 2}\n');
    const d = await startDashboard({ runDir: dir, port: 0 });
    try {
      assert.equal((await rawHttp(d.url, 'GET', '/api/run', {})).status, 200);
      const rebound = await rawHttp(d.url, 'GET', '/api/run', { host: 'attacker.example' });
      assert.equal(rebound.status, 403);
      assert.equal(rebound.body.error.code, 'forbidden_host');
      assert.equal((await rawHttp(d.url, 'GET', '/api/metrics?file=metrics.jsonl', { origin: 'http://attacker.example' })).status, 403);
    } finally {
      await d.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
