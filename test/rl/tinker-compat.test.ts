/**
 * The two things SkyRL tx 0.3's Tinker server does differently from the SDK 0.24 protocol (docs/tinker.md, "SkyRL's
 * Tinker server"), reproduced by a proxy in front of a real `longrun serve trainer`: it has no
 * `/api/v1/client/config`, and its forward/forward_backward results carry no `loss:sum` metric, only per-token
 * `elementwise_loss` outputs. The client must go on without the flags and report `loss:sum` all the same.
 */
import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Datum, LossConfig, LossFn } from '../../src/rl/backend.ts';
import { TinkerBackend } from '../../src/rl/tinker/backend.ts';
import { startTrainerServer } from '../../src/serve/trainer-server.ts';
import { tinyTransformer } from './policy-fixtures.ts';

const VOCAB = 12;
const BASE = 'longrun/tiny-gpt-oss';
const FAST = { heartbeatMs: 0, retry: { baseMs: 1, maxMs: 4, totalMs: 2000 } };

const data: Datum[] = [3, 5].map((n, k) => {
  const tokens = Array.from({ length: n + 1 }, (_, i) => (i * 5 + k * 3 + 1) % VOCAB);
  return {
    tokens: tokens.slice(0, -1),
    lossInputs: {
      target_tokens: tokens.slice(1),
      weights: Array.from({ length: n }, (_, i) => (i === 0 ? 0 : 1)),
      logprobs: Array.from({ length: n }, (_, i) => -2 - 0.1 * i),
      advantages: Array.from({ length: n }, () => (k === 0 ? 1 : -0.5)),
    },
  };
});

type Outputs = { loss_fn_outputs?: { logprobs?: { data: number[] }; elementwise_loss?: unknown }[]; metrics?: Record<string, number> };

/** A proxy that 404s client/config and strips `loss:sum`, adding per-token `elementwise_loss` when asked. */
async function skyrlLike(target: string, elementwise: boolean) {
  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    if (req.url === '/api/v1/client/config') {
      res.writeHead(404, { 'content-type': 'application/json' });
      return res.end(JSON.stringify({ detail: 'Not Found' }));
    }
    const r = await fetch(`${target}${req.url}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: Buffer.concat(chunks) });
    let out = await r.text();
    if (req.url === '/api/v1/retrieve_future' && r.ok) {
      const j = JSON.parse(out) as Outputs;
      if (j.metrics && Array.isArray(j.loss_fn_outputs)) {
        delete j.metrics['loss:sum'];
        // Made-up per-token losses: the client must sum what the server says, not recompute its own.
        if (elementwise) for (const o of j.loss_fn_outputs) o.elementwise_loss = { data: o.logprobs!.data.map((_, i) => i + 0.25), dtype: 'float32', shape: [o.logprobs!.data.length] };
        out = JSON.stringify(j);
      }
    }
    res.writeHead(r.status, { 'content-type': 'application/json' });
    res.end(out);
  };
  const server = createServer((req, res) => void handle(req, res));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    close: () => new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    }),
  };
}

describe('Tinker client against a server without client/config and loss:sum (SkyRL tx 0.3)', () => {
  it('connects without feature flags and reports loss:sum from elementwise_loss, else from the log-probs', { timeout: 60_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-tinker-compat-'));
    const srv = await startTrainerServer({ baseModel: BASE, makeBase: () => tinyTransformer(VOCAB, 4), checkpointDir: join(dir, 'server') });
    const direct = await TinkerBackend.create({ baseUrl: srv.url, baseModel: BASE, lora: { rank: 2, seed: 1 }, ...FAST });
    const losses: [LossFn, LossConfig | undefined][] = [['cross_entropy', undefined], ['importance_sampling', undefined], ['ppo', { clip_low_threshold: 0.9, clip_high_threshold: 1.1 }], ['cispo', undefined], ['dro', { beta: 0.2 }]];
    try {
      for (const elementwise of [false, true]) {
        const proxy = await skyrlLike(srv.url, elementwise);
        const log: string[] = [];
        const viaProxy = await TinkerBackend.create({ baseUrl: proxy.url, baseModel: BASE, lora: { rank: 2, seed: 1 }, ...FAST, log: (l) => log.push(l) });
        try {
          assert.ok(log.some((l) => l.includes('has no /api/v1/client/config')), log.join('\n'));
          for (const [fn, cfg] of losses) {
            const [a, b] = [await viaProxy.forward(data, fn, cfg), await direct.forward(data, fn, cfg)];
            a.logprobs.forEach((lp, i) => lp.forEach((x, t) => assert.ok(Math.abs(x - b.logprobs[i][t]) < 1e-6)));
            const expected = elementwise ? data.reduce((s, d) => s + Array.from(d.tokens, (_, i) => i + 0.25).reduce((x, y) => x + y, 0), 0) : b.metrics['loss:sum'];
            assert.ok(Math.abs(a.metrics['loss:sum'] - expected) <= 1e-5 * Math.max(1, Math.abs(expected)), `${fn} (elementwise ${elementwise}): ${a.metrics['loss:sum']} vs ${expected}`);
          }
        } finally {
          await viaProxy.close();
          await proxy.close();
        }
      }
    } finally {
      await direct.close();
      await srv.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
