import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { GptOssBackend, type AdamParams, type Datum, type LossConfig, type LossFn, type TrainingBackend } from '../../src/rl/backend.ts';
import { GptOssPolicy } from '../../src/rl/model-policy.ts';
import { chunkDatums, combineForwardBackward, DEFAULT_TINKER_BASE_URL, TinkerClient, TinkerError, type WireDatum } from '../../src/rl/tinker/client.ts';
import { TinkerBackend, toWireDatum } from '../../src/rl/tinker/backend.ts';
import { createTrainingModel, startTrainerServer, toAdamW, type TinkerLoraConfig } from '../../src/serve/trainer-server.ts';
import { tinyTransformer } from './policy-fixtures.ts';

const VOCAB = 12;
const BASE = 'longrun/tiny-gpt-oss';
const makeBase = () => tinyTransformer(VOCAB, 4);
const FAST = { heartbeatMs: 0, retry: { baseMs: 1, maxMs: 4, totalMs: 2000 } };
const ADAM: AdamParams = { learningRate: 1e-2, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0.01, gradClipNorm: 1 };

function close(a: number, b: number, tol: number, what: string) {
  assert.ok(Math.abs(a - b) <= tol * Math.max(1, Math.abs(b)), `${what}: ${a} vs ${b}`);
}

/** Seeded datums of different lengths with every loss input. */
function datums(count: number, seed: number): Datum[] {
  let s = seed;
  const next = () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32);
  return Array.from({ length: count }, (_, k) => {
    const n = 3 + ((k * 5 + seed) % 6);
    const tokens = Array.from({ length: n + 1 }, () => Math.floor(next() * VOCAB));
    return {
      tokens: tokens.slice(0, -1),
      lossInputs: {
        target_tokens: tokens.slice(1),
        weights: Array.from({ length: n }, (_, i) => (i < 2 ? 0 : 1)),
        // float32 values, so that the protobuf protocol (float32 loss inputs, the SDK's dtype) carries them exactly.
        logprobs: Array.from({ length: n }, () => Math.fround(-1.5 - next())),
        advantages: Array.from({ length: n }, (_, i) => (i < 2 ? 0 : Math.fround([1, -0.6, 0.3][k % 3]))),
      },
    };
  });
}

function inProcess(lora: TinkerLoraConfig | null): GptOssBackend {
  return new GptOssBackend(new GptOssPolicy(createTrainingModel(makeBase, lora), { optimizer: toAdamW(ADAM), reference: null }));
}

/** The same sequence of calls on two backends; every result compared. */
async function sameCalls(remote: TrainingBackend, local: TrainingBackend, dir: string) {
  const steps: [LossFn, LossConfig | undefined][] = [['cross_entropy', undefined], ['importance_sampling', undefined], ['ppo', { clip_low_threshold: 0.9, clip_high_threshold: 1.1 }], ['cispo', undefined], ['dro', { beta: 0.2 }]];
  const data = datums(5, 1);
  for (const [k, [fn, cfg]] of steps.entries()) {
    const [a, b] = [await remote.forwardBackward(data, fn, cfg), await local.forwardBackward(data, fn, cfg)];
    close(a.metrics['loss:sum'], b.metrics['loss:sum'], 1e-6, `step ${k} ${fn} loss`);
    a.logprobs.forEach((lp, i) => lp.forEach((x, t) => close(x, b.logprobs[i][t], 1e-6, `step ${k} datum ${i} logprob ${t}`)));
    const [oa, ob] = [await remote.optimStep(ADAM), await local.optimStep(ADAM)];
    close(oa.metrics.grad_norm, ob.metrics.grad_norm, 1e-5, `step ${k} grad norm`);
  }
  const [sa, sb] = [await remote.sample([1, 4, 2], 3, { maxTokens: 6, seed: 9, stopTokens: [0] }), await local.sample([1, 4, 2], 3, { maxTokens: 6, seed: 9, stopTokens: [0] })];
  assert.deepEqual(sa.map((s) => s.tokens), sb.map((s) => s.tokens), 'same seed, same samples');
  assert.deepEqual(sa.map((s) => s.stopReason), sb.map((s) => s.stopReason));
  sa.forEach((s, i) => s.logprobs.forEach((x, t) => close(x, sb[i].logprobs[t], 1e-6, `sample ${i} logprob ${t}`)));
  // Save, train on, load: back at the saved weights (and optimizer state: the next step matches too).
  const saved = (await remote.forward(data, 'cross_entropy')).metrics['loss:sum'];
  await remote.saveState(join(dir, 'step_5', 'policy'));
  await local.saveState(join(dir, 'local'));
  await remote.forwardBackward(data, 'cross_entropy');
  await remote.optimStep(ADAM);
  assert.ok(Math.abs((await remote.forward(data, 'cross_entropy')).metrics['loss:sum'] - saved) > 1e-4, 'the extra step moved the weights');
  await remote.loadState(join(dir, 'step_5', 'policy'), { optimizer: true });
  close((await remote.forward(data, 'cross_entropy')).metrics['loss:sum'], saved, 1e-7, 'loss after load_state');
  // Sampling follows the loaded weights.
  const again = await remote.sample([1, 4, 2], 3, { maxTokens: 6, seed: 9, stopTokens: [0] });
  assert.deepEqual(again.map((s) => s.tokens), sb.map((s) => s.tokens));
  await remote.forwardBackward(data, 'ppo');
  await local.forwardBackward(data, 'ppo');
  close((await remote.optimStep(ADAM)).metrics.grad_norm, (await local.optimStep(ADAM)).metrics.grad_norm, 1e-5, 'grad norm after reload');
  close((await remote.forward(data, 'cross_entropy')).metrics['loss:sum'], (await local.forward(data, 'cross_entropy')).metrics['loss:sum'], 1e-6, 'loss after the step past the reload');
}

interface Proxy {
  url: string;
  /** POST paths seen, in order (without /api/v1/). */
  seen: string[];
  close(): Promise<void>;
}

type Fault = 'try_again' | 408 | 410 | 503 | null;

/**
 * A fake Tinker server in front of the real one: forwards every request, but `onSubmit(path, n)` (the n-th
 * submission to a path, from 1) and `onRetrieve(path, n)` (the n-th retrieve of a future submitted to path) may answer
 * instead with a fault. `jwt`: it also plays a server with the JWT exchange on.
 */
async function startProxy(target: string, o: { onSubmit?: (path: string, n: number) => Fault; onRetrieve?: (path: string, n: number) => Fault; jwt?: { key: string; realKey: string } } = {}): Promise<Proxy> {
  const seen: string[] = [];
  const submits = new Map<string, number>();
  const origin = new Map<string, string>();
  const retrieves = new Map<string, number>();
  const jwt = `eyJhbGciOiJub25lIn0.${Buffer.from(JSON.stringify({ exp: Math.floor(Date.now() / 1000) + 3600 })).toString('base64url')}.sig`;
  const send = (res: ServerResponse, status: number, body: unknown) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify(body));
  };
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const raw = Buffer.concat(chunks);
    const text = raw.toString('utf8');
    const proto = (req.headers['content-type'] ?? '').includes('protobuf');
    const path = (req.url ?? '').replace('/api/v1/', '');
    seen.push(path);
    let key = req.headers['x-api-key'] as string | undefined;
    if (o.jwt) {
      if (path === 'auth/token') {
        if (key !== o.jwt.key) return send(res, 401, { error: { code: 'unauthorized', message: 'bad key' } });
        return send(res, 200, { jwt });
      }
      if (path !== 'client/config' && key !== jwt) return send(res, 401, { error: { code: 'unauthorized', message: `expected the JWT, got ${key}` } });
      key = o.jwt.realKey;
    }
    const body = text && !proto ? (JSON.parse(text) as Record<string, unknown>) : {};
    let fault: Fault;
    if (path === 'retrieve_future') {
      const id = String(body.request_id);
      const n = (retrieves.get(id) ?? 0) + 1;
      retrieves.set(id, n);
      fault = o.onRetrieve?.(origin.get(id) ?? '?', n) ?? null;
    } else {
      const n = (submits.get(path) ?? 0) + 1;
      submits.set(path, n);
      fault = o.onSubmit?.(path, n) ?? null;
    }
    if (fault === 'try_again') return send(res, 200, { type: 'try_again', queue_state: 'active' });
    if (fault !== null) return send(res, fault, { error: { code: 'injected', message: `injected ${fault}` } });
    // Bytes pass through as they are (protobuf and zstd bodies, protobuf results), with the headers that describe them.
    const pass = (name: string) => (typeof req.headers[name] === 'string' ? { [name]: req.headers[name] as string } : {});
    const r = await fetch(`${target}${req.url}`, { method: 'POST', headers: { 'content-type': 'application/json', ...pass('content-type'), ...pass('content-encoding'), ...pass('accept'), ...(key ? { 'x-api-key': key } : {}) }, body: raw });
    const ctype = r.headers.get('content-type') ?? 'application/json';
    let out: Buffer | string = Buffer.from(await r.arrayBuffer());
    if (path === 'client/config' && o.jwt) out = JSON.stringify({ ...JSON.parse(out.toString('utf8')), pjwt_auth_enabled: true });
    if (r.ok && path !== 'retrieve_future') {
      const j = JSON.parse(out.toString('utf8')) as { request_id?: string };
      if (typeof j.request_id === 'string') origin.set(j.request_id, path);
    }
    res.writeHead(r.status, { 'content-type': ctype });
    res.end(out);
  };
  const server = createServer((req, res) => void handle(req, res).catch((e: Error) => send(res, 500, { error: { code: 'proxy', message: e.message } })));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    seen,
    close: () => new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

async function withServer(f: (url: string, dir: string) => Promise<void>, options: { apiKey?: string; longPollMs?: number } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'longrun-tinker-client-'));
  const srv = await startTrainerServer({ baseModel: BASE, makeBase, checkpointDir: join(dir, 'server'), ...options });
  try {
    await f(srv.url, dir);
  } finally {
    await srv.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

describe('Tinker client (JSON protocol of tinker SDK 0.24) against longrun serve trainer', () => {
  it('TinkerBackend gives GptOssBackend\'s results: all five losses, optim_step, sample, save/load (LoRA and full weights)', { timeout: 120_000 }, async () => {
    await withServer(async (url, dir) => {
      for (const lora of [{ rank: 4, seed: 7 }, null]) {
        const remote = await TinkerBackend.create({ baseUrl: url, apiKey: 'tml-secret', baseModel: BASE, lora: lora ?? undefined, ...FAST });
        try {
          await sameCalls(remote, inProcess(lora), join(dir, lora ? 'lora' : 'full'));
          const state = JSON.parse(readFileSync(join(dir, lora ? 'lora' : 'full', 'step_5', 'policy', 'tinker-state.json'), 'utf8')) as { path: string; baseModel: string };
          assert.match(state.path, /^tinker:\/\/.+\/weights\/step_5-policy$/);
          assert.equal(state.baseModel, BASE);
        } finally {
          await remote.close();
        }
      }
    }, { apiKey: 'tml-secret' });
  });

  it('sends the API key, counts seq_ids from 1, chunks large batches into consecutive seq_ids with the same result', { timeout: 60_000 }, async () => {
    await withServer(async (url) => {
      await assert.rejects(TinkerClient.connect({ baseUrl: url, apiKey: 'tml-wrong', ...FAST }), (e: unknown) => e instanceof TinkerError && e.status === 401 && /TINKER_API_KEY/.test(e.message));
      const proxy = await startProxy(url);
      try {
        const local = inProcess(null);
        const remote = await TinkerBackend.create({ baseUrl: proxy.url, apiKey: 'tml-secret', baseModel: BASE, ...FAST, chunk: { maxDatums: 2 } });
        assert.equal(remote.training.nextSeqId, 1);
        const data = datums(5, 3);
        const [a, b] = [await remote.forwardBackward(data, 'cross_entropy'), await local.forwardBackward(data, 'cross_entropy')];
        assert.equal(remote.training.nextSeqId, 4, 'five datums in chunks of two: three requests, seq_ids 1, 2, 3');
        assert.equal(proxy.seen.filter((p) => p === 'forward_backward').length, 3);
        close(a.metrics['loss:sum'], b.metrics['loss:sum'], 1e-6, 'chunked loss:sum');
        assert.equal(a.logprobs.length, 5);
        close((await remote.optimStep(ADAM)).metrics.grad_norm, (await local.optimStep(ADAM)).metrics.grad_norm, 1e-5, 'grad norm of the chunked accumulation');
        // A submission the server refuses gives its seq_id back, so the next call does not wait for it forever.
        const bad = [{ model_input: { chunks: [{ type: 'encoded_text', tokens: [1, 2] }] }, loss_fn_inputs: { target_tokens: { data: [1, 'x'], dtype: 'int64', shape: [2] } } }] as unknown as WireDatum[];
        // (Refused by the client before a request: protobuf cannot carry 'x'; a JSON client gets the server's 400.)
        await assert.rejects(remote.training.forwardBackward(bad, 'cross_entropy'), (e: unknown) => e instanceof TinkerError && e.code === 'invalid_datum' && /target_tokens\.data\[1\]/.test(e.message));
        assert.equal(remote.training.nextSeqId, 5);
        close((await remote.forward(data, 'cross_entropy')).metrics['loss:sum'], (await local.forward(data, 'cross_entropy')).metrics['loss:sum'], 1e-6, 'loss after the refused call');
        // Bad input is refused before any request.
        const before = proxy.seen.length;
        await assert.rejects(remote.forwardBackward([{ tokens: [1, 2], lossInputs: { target_tokens: [1] } }], 'cross_entropy'), /target_tokens' has 1 values/);
        await assert.rejects(remote.forwardBackward(data, 'ppo', { beta: 1 }), /beta belongs to the dro loss/);
        await assert.rejects(remote.optimStep({ ...ADAM, beta2: 1 }), /beta1 and beta2/);
        await assert.rejects(remote.sample([], 1, { maxTokens: 2 }), /prompt is empty/);
        assert.equal(proxy.seen.length, before);
        // Ids out of the server's vocabulary fail the call's future with a user error.
        await assert.rejects(remote.forward([{ tokens: [1, 99], lossInputs: { target_tokens: [1, 2] } }], 'cross_entropy'), (e: unknown) => e instanceof TinkerError && e.category === 'user' && /input token 1 \(99\)/.test(e.message));
        // The server keeps a model's four newest sampling-session snapshots (one per weight sync), not every one.
        const first = (await remote.training.samplingClient()).sampler;
        assert.equal((await first.sample([1], 1, { max_tokens: 1 })).length, 1);
        for (let i = 0; i < 4; i++) await remote.training.samplingClient();
        await assert.rejects(first.sample([1], 1, { max_tokens: 1 }), (e: unknown) => e instanceof TinkerError && e.status === 404 && /no sampling session/.test(e.message));
        await remote.close();
      } finally {
        await proxy.close();
      }
    }, { apiKey: 'tml-secret' });
  });

  it('handshake, session and heartbeats; the JWT exchange when the server asks for it', { timeout: 60_000 }, async () => {
    await withServer(async (url) => {
      const proxy = await startProxy(url, { jwt: { key: 'tml-mine', realKey: 'tml-real' } });
      try {
        const c = await TinkerClient.connect({ baseUrl: proxy.url, apiKey: 'tml-mine', ...FAST, heartbeatMs: 20 });
        assert.deepEqual(proxy.seen.slice(0, 3), ['client/config', 'auth/token', 'create_session']);
        await new Promise((r) => setTimeout(r, 200));
        const beats = proxy.seen.filter((p) => p === 'session_heartbeat').length;
        assert.ok(beats >= 3, `heartbeats every 20 ms (saw ${beats})`);
        const m = await c.createModel(BASE, { rank: 2 });
        assert.match(m.modelId, /:train:0$/, 'model_seq_id counts from 0 in the session');
        assert.match((await c.createModel(BASE)).modelId, /:train:1$/);
        await c.close();
        const after = proxy.seen.length;
        await new Promise((r) => setTimeout(r, 80));
        assert.equal(proxy.seen.length, after, 'no heartbeat after close');
        await assert.rejects(c.createModel(BASE), /closed/);
      } finally {
        await proxy.close();
      }
    }, { apiKey: 'tml-real' });
  });

  it('retries: try_again and HTTP 408 on retrieve, 503 on submit; 410 resubmits a sample and fails a training call', { timeout: 120_000 }, async () => {
    await withServer(async (url) => {
      // Expected results, without faults.
      const reference = inProcess({ rank: 2, seed: 1 });
      const data = datums(3, 5);
      const want = (await reference.forwardBackward(data, 'importance_sampling')).metrics['loss:sum'];
      const wantSample = await reference.sample([3, 1], 2, { maxTokens: 4, seed: 2 });
      for (const fault of ['try_again', 408, 503] as const) {
        const proxy = await startProxy(url, fault === 503 ? { onSubmit: (_p, n) => (n === 1 ? 503 : null) } : { onRetrieve: (_p, n) => (n === 1 ? fault : null) });
        try {
          const remote = await TinkerBackend.create({ baseUrl: proxy.url, baseModel: BASE, lora: { rank: 2, seed: 1 }, ...FAST });
          close((await remote.forwardBackward(data, 'importance_sampling')).metrics['loss:sum'], want, 1e-6, `loss with ${fault}`);
          assert.deepEqual((await remote.sample([3, 1], 2, { maxTokens: 4, seed: 2 })).map((s) => s.tokens), wantSample.map((s) => s.tokens));
          if (fault === 503) assert.equal(proxy.seen.filter((p) => p === 'forward_backward').length, 2, 'the refused submission was sent again');
          else assert.ok(proxy.seen.filter((p) => p === 'retrieve_future').length >= 2 * 4, 'every future retrieved at least twice');
          await remote.close();
        } finally {
          await proxy.close();
        }
      }
      // The first sample's and the first forward_backward's promise are lost once.
      const lost = new Set<string>();
      const proxy = await startProxy(url, { onRetrieve: (p) => ((p === 'asample' || p === 'forward_backward') && !lost.has(p) && lost.add(p) ? 410 : null) });
      try {
        const remote = await TinkerBackend.create({ baseUrl: proxy.url, baseModel: BASE, lora: { rank: 2, seed: 1 }, ...FAST });
        assert.deepEqual((await remote.sample([3, 1], 2, { maxTokens: 4, seed: 2 })).map((s) => s.tokens), wantSample.map((s) => s.tokens));
        assert.equal(proxy.seen.filter((p) => p === 'asample').length, 2, 'the lost sample was submitted again');
        await assert.rejects(remote.forwardBackward(data, 'importance_sampling'), (e: unknown) => e instanceof TinkerError && e.status === 410 && e.code === 'expired' && /not sent again/.test(e.message));
        assert.equal(proxy.seen.filter((p) => p === 'forward_backward').length, 1, 'a training call is not resubmitted');
        await remote.close();
      } finally {
        await proxy.close();
      }
    }, { longPollMs: 0 });
  });

  it('bad configuration gives clear errors', async () => {
    await assert.rejects(TinkerClient.connect({ baseUrl: 'not a url' }), /is not a URL/);
    await assert.rejects(TinkerClient.connect({ baseUrl: 'ftp://x' }), /must be http/);
    const saved = process.env.TINKER_API_KEY;
    delete process.env.TINKER_API_KEY;
    try {
      await assert.rejects(TinkerClient.connect({ baseUrl: DEFAULT_TINKER_BASE_URL, ...FAST }), /hosted Tinker service needs an API key/);
    } finally {
      if (saved !== undefined) process.env.TINKER_API_KEY = saved;
    }
    await assert.rejects(TinkerClient.connect({ baseUrl: 'http://127.0.0.1:9', ...FAST, retry: { baseMs: 1, maxMs: 2, totalMs: 30 } }), (e: unknown) => e instanceof TinkerError && e.code === 'unreachable' && /cannot reach/.test(e.message));
    await withServer(async (url) => {
      await assert.rejects(TinkerBackend.create({ baseUrl: url, baseModel: 'other/model', ...FAST }), /trains "longrun\/tiny-gpt-oss"/);
      await assert.rejects(TinkerBackend.create({ baseUrl: `${url}/nope`, baseModel: BASE, ...FAST }), /HTTP 404/);
      const remote = await TinkerBackend.create({ baseUrl: url, baseModel: BASE, ...FAST });
      await assert.rejects(remote.loadState('/nonexistent/dir', { optimizer: false }), /cannot read .*tinker-state\.json/);
      await remote.close();
    });
  });

  it('chunking and metric reduction follow the SDK: 1024 datums or ~5 MB per chunk; :sum summed, :mean weighted', () => {
    const d = (n: number): WireDatum => toWireDatum({ tokens: new Array(n).fill(1), lossInputs: { target_tokens: new Array(n).fill(2) } });
    assert.deepEqual(chunkDatums(Array.from({ length: 2500 }, () => d(2))).map((c) => c.length), [1024, 1024, 452]);
    // 10 bytes per token and per loss-input value: 200 000 bytes per datum of 10 000 tokens → 25 per 5 MB chunk.
    assert.deepEqual(chunkDatums(Array.from({ length: 30 }, () => d(10_000))).map((c) => c.length), [25, 5]);
    assert.deepEqual(chunkDatums([d(400_000), d(1)]).map((c) => c.length), [1, 1], 'a datum over the limit goes alone');
    const out = (n: number, m: Record<string, number>) => ({ loss_fn_output_type: 'ArrayRecord', loss_fn_outputs: Array.from({ length: n }, () => ({})), metrics: m });
    const c = combineForwardBackward([out(1, { 'loss:sum': 2, 'x:mean': 1, 'y:max': 3, 'z:min': 3 }), out(3, { 'loss:sum': 5, 'x:mean': 3, 'y:max': 1, 'z:min': 1 })]);
    assert.deepEqual(c.metrics, { 'loss:sum': 7, 'x:mean': 2.5, 'y:max': 3, 'z:min': 1 });
    assert.equal(c.loss_fn_outputs.length, 4);
  });
});
