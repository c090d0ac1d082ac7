import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { decodeForwardBackwardOutput, decodeForwardBackwardRequest, decodeSampleResponse, deflateZstd, encodeForwardBackwardOutput, encodeForwardBackwardRequest, encodeSampleResponse, inflateZstd, WireError, type FwdBwdRequest } from '../../src/rl/tinker/proto/wire.ts';
import { DEFAULT_ADAM, GptOssBackend, type Datum, type LossConfig, type LossFn } from '../../src/rl/backend.ts';
import { GptOssPolicy } from '../../src/rl/model-policy.ts';
import { TinkerBackend } from '../../src/rl/tinker/backend.ts';
import { createTrainingModel, startTrainerServer, toAdamW } from '../../src/serve/trainer-server.ts';
import { tinyTransformer } from '../rl/policy-fixtures.ts';

const BASE = 'longrun/tiny-gpt-oss';
const makeBase = () => tinyTransformer(12, 4);

function close(a: number, b: number, tol: number, what: string) {
  assert.ok(Math.abs(a - b) <= tol * Math.max(1, Math.abs(b)), `${what}: ${a} vs ${b}`);
}

const request = (modelId: string, seq: number, tokens = [1, 4, 2, 7], forwardOnly = false): FwdBwdRequest => ({
  model_id: modelId, seq_id: seq, forward_only: forwardOnly,
  forward_backward_input: {
    loss_fn: 'ppo', loss_fn_config: { clip_low_threshold: 0.75, clip_high_threshold: 1.25 },
    data: [{ model_input: { chunks: [{ type: 'encoded_text', tokens }] }, loss_fn_inputs: {
      target_tokens: { data: tokens.map((t) => (t + 1) % 12), dtype: 'int64', shape: [tokens.length] },
      logprobs: { data: tokens.map(() => -2.5), dtype: 'float32', shape: [tokens.length] },
      advantages: { data: tokens.map((_, i) => (i % 2 ? 0.5 : -0.25)), dtype: 'float32', shape: [tokens.length] },
    } }],
  },
});

describe('Tinker protobuf wire format (tinker_public.proto of SDK 0.38.0)', () => {
  it('round-trips requests, forward/backward outputs and sample responses through the generated schema', () => {
    const r = request('m', 3);
    assert.deepEqual(decodeForwardBackwardRequest(encodeForwardBackwardRequest(r)), r);
    const out = { loss_fn_output_type: 'ArrayRecord', loss_fn_outputs: [{ logprobs: { data: [-1.5, -0.25], dtype: 'float32' as const, shape: [2] } }, { logprobs: { data: [-3], dtype: 'float32' as const, shape: [1] } }], metrics: { 'loss:sum': 4.75 } };
    assert.deepEqual(decodeForwardBackwardOutput(encodeForwardBackwardOutput(out)), out);
    const sample = { sequences: [{ tokens: [3, 9], logprobs: [-0.5, -2], stop_reason: 'length' as const }, { tokens: [1], logprobs: null, stop_reason: 'stop' as const }], prompt_logprobs: [null, -1.25, -0.5] };
    assert.deepEqual(decodeSampleResponse(encodeSampleResponse(sample)), sample);
  });

  it('inflates zstd within a bound: a bomb is a 413 by its declared window or by the bytes it produces; junk is a 400', async () => {
    const body = encodeForwardBackwardRequest(request('m', 1));
    assert.deepEqual(inflateZstd(await deflateZstd(body), 1 << 20), body);
    const bomb = await deflateZstd(new Uint8Array(8 << 20));
    assert.ok(bomb.length < 2048, `8 MiB of zeros compress to ${bomb.length} bytes`);
    assert.throws(() => inflateZstd(bomb, 64 * 1024), (e: unknown) => e instanceof WireError && e.status === 413);
    // Many small frames, each within the limit's window, together over it: stopped by the byte count.
    const frame = await deflateZstd(new Uint8Array(4000));
    const frames = new Uint8Array(frame.length * 40);
    for (let i = 0; i < 40; i++) frames.set(frame, i * frame.length);
    assert.throws(() => inflateZstd(frames, 64 * 1024), (e: unknown) => e instanceof WireError && e.status === 413 && /inflates past/.test(e.message));
    assert.throws(() => inflateZstd(new Uint8Array([1, 2, 3, 4, 5, 6, 7, 8]), 1 << 20), (e: unknown) => e instanceof WireError && e.status === 400);
    const cut = (await deflateZstd(body)).subarray(0, 12);
    assert.throws(() => inflateZstd(cut, 1 << 20), (e: unknown) => e instanceof WireError && e.status === 400);
  });

  it('the server refuses bad protobuf bodies with clear 4xx errors, keeps serving, and leaves the model as it was', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-tinker-proto-'));
    const srv = await startTrainerServer({ baseModel: BASE, makeBase, checkpointDir: dir, maxBodyBytes: 64 * 1024, maxDatumTokens: 32, longPollMs: 5_000 });
    const post = async (path: string, body: Uint8Array | string, headers: Record<string, string> = {}) => {
      const r = await fetch(`${srv.url}/api/v1/${path}`, { method: 'POST', headers: { 'content-type': typeof body === 'string' ? 'application/json' : 'application/x-protobuf', ...headers }, body });
      const ctype = r.headers.get('content-type') ?? '';
      return { status: r.status, ctype, json: ctype.includes('json') ? ((await r.json()) as Record<string, unknown> & { error?: { code: string; message: string } }) : {}, bytes: ctype.includes('protobuf') ? new Uint8Array(await r.arrayBuffer()) : new Uint8Array() };
    };
    const result = async (requestId: unknown) => {
      const r = await fetch(`${srv.url}/api/v1/retrieve_future`, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/x-protobuf, application/json' }, body: JSON.stringify({ request_id: requestId }) });
      assert.equal(r.status, 200);
      assert.match(r.headers.get('content-type') ?? '', /protobuf/);
      return decodeForwardBackwardOutput(new Uint8Array(await r.arrayBuffer()));
    };
    try {
      const sid = (await post('create_session', JSON.stringify({ tags: [] }))).json.session_id as string;
      const modelId = (await post('create_model', JSON.stringify({ session_id: sid, model_seq_id: 0, base_model: BASE }))).json.model_id as string;
      let seq = 1;
      const forward = async () => (await result((await post('forward_backward', encodeForwardBackwardRequest(request(modelId, seq++, undefined, true)))).json.request_id)).metrics['loss:sum'];
      const before = await forward();

      const valid = encodeForwardBackwardRequest(request(modelId, seq));
      const bad: [string, Uint8Array | string, Record<string, string>, number, RegExp][] = [
        ['truncated', valid.subarray(0, valid.length - 5), {}, 400, /not a tinker_public\.ForwardBackwardRequest/],
        ['not protobuf', new TextEncoder().encode('{"model_id": "x"}'), {}, 400, /not a tinker_public\.ForwardBackwardRequest|unknown/],
        ['unknown field', (() => { const w = new BinaryWriter(); w.raw(valid); w.tag(99, WireType.Varint).int32(1); return w.finish(); })(), {}, 400, /field number 99, unknown/],
        ['datum over the limit', encodeForwardBackwardRequest(request(modelId, seq, Array.from({ length: 40 }, (_, i) => i % 12))), {}, 413, /40 input tokens, over this server's limit of 32/],
        ['zstd bomb', await deflateZstd(new Uint8Array(4 << 20)), { 'content-encoding': 'zstd' }, 413, /limit of 65536/],
        ['junk zstd', new Uint8Array([0x28, 0xb5, 0x2f, 0xfd, 0, 0, 1, 2, 3]), { 'content-encoding': 'zstd' }, 400, /zstd/],
        ['gzip', valid, { 'content-encoding': 'gzip' }, 415, /not supported/],
        ['protobuf elsewhere', valid, {}, 415, /optim_step takes JSON/],
        ['over maxBodyBytes', new Uint8Array(70 * 1024), {}, 413, /exceeds the server's limit/],
      ];
      for (const [what, body, headers, status, message] of bad) {
        const r = await post(what === 'protobuf elsewhere' ? 'optim_step' : 'forward_backward', body, headers);
        assert.equal(r.status, status, `${what}: ${JSON.stringify(r.json)}`);
        assert.match(r.json.error?.message ?? '', message, what);
      }
      // None of them reached the model or took its seq_id: the next call with it runs, and the model is unchanged.
      assert.equal((await result((await post('forward_backward', encodeForwardBackwardRequest(request(modelId, seq++, undefined, true)))).json.request_id)).metrics['loss:sum'], before);
      // A compressed protobuf forward_backward then an optim_step change it (the path works end to end).
      const fb = await post('forward_backward', await deflateZstd(encodeForwardBackwardRequest(request(modelId, seq++))), { 'content-encoding': 'zstd' });
      assert.equal(fb.status, 200);
      await result(fb.json.request_id);
      const opt = await post('optim_step', JSON.stringify({ model_id: modelId, seq_id: seq++, adam_params: { learning_rate: 0.05 } }));
      assert.equal(opt.status, 200);
      assert.notEqual(await forward(), before);
      assert.equal(srv.stats.zstdBodies, 1);
      assert.equal((await (await fetch(`${srv.url}/api/v1/healthz`)).json() as { status: string }).status, 'ok');
    } finally {
      await srv.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('announces the flags it honours per SDK version', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-tinker-proto-'));
    const srv = await startTrainerServer({ baseModel: BASE, makeBase, checkpointDir: dir, chunk: { maxDatums: 7, maxBytes: 1000 } });
    const config = async (v: string) => (await (await fetch(`${srv.url}/api/v1/client/config`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ sdk_version: v }) })).json()) as Record<string, unknown>;
    try {
      const now = await config('0.38.0');
      assert.equal(now.proto_write_fwdbwd, true);
      assert.equal(now.proto_compress_fwdbwd, true);
      assert.equal(now.fwdbwd_max_chunk_len, 7);
      assert.equal(now.fwdbwd_max_chunk_bytes_count, 1000);
      const old = await config('0.24.1');
      assert.equal(old.proto_write_fwdbwd, false);
      assert.equal(old.proto_compress_fwdbwd, false);
    } finally {
      await srv.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('TinkerBackend over JSON, protobuf and protobuf + zstd gives the in-process results (every loss, chunked batches, save/load)', { timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-tinker-proto-'));
    const srv = await startTrainerServer({ baseModel: BASE, makeBase, checkpointDir: dir });
    const fast = { heartbeatMs: 0, retry: { baseMs: 1, maxMs: 4, totalMs: 2000 }, chunk: { maxDatums: 2 } };
    const lora = { rank: 2, seed: 5 };
    let s = 11;
    const next = () => ((s = (Math.imul(s, 1103515245) + 12345) >>> 0) / 2 ** 32);
    const data: Datum[] = Array.from({ length: 5 }, (_, k) => {
      const n = 3 + k;
      const toks = Array.from({ length: n + 1 }, () => Math.floor(next() * 12));
      // Doubles that float32 cannot hold exactly: the protobuf sides round them, as the SDK does.
      return { tokens: toks.slice(0, -1), lossInputs: { target_tokens: toks.slice(1), weights: toks.slice(1).map((_, i) => (i ? 1 : 0)), logprobs: toks.slice(1).map(() => -1.5 - next()), advantages: toks.slice(1).map((_, i) => (i ? [0.7, -0.3, 0.1][k % 3] : 0)) } };
    });
    const adam = { ...DEFAULT_ADAM, learningRate: 1e-2, gradClipNorm: 1 };
    const steps: [LossFn, LossConfig | undefined][] = [['cross_entropy', undefined], ['importance_sampling', undefined], ['ppo', { clip_low_threshold: 0.9, clip_high_threshold: 1.1 }], ['cispo', undefined], ['dro', { beta: 0.3 }]];
    try {
      const local = new GptOssBackend(new GptOssPolicy(createTrainingModel(makeBase, lora), { optimizer: toAdamW(DEFAULT_ADAM), reference: null }));
      const sides = await Promise.all(([{ wire: 'json' }, { wire: 'protobuf', compress: false }, { wire: 'protobuf', compress: true }] as const).map((w) => TinkerBackend.create({ baseUrl: srv.url, baseModel: BASE, lora, ...fast, ...w })));
      assert.deepEqual(sides.map((b) => [b.client.protobuf, b.client.compress]), [[false, false], [true, false], [true, true]]);
      for (const [fn, cfg] of steps) {
        const want = await local.forwardBackward(data, fn, cfg);
        const wantNorm = (await local.optimStep(adam)).metrics.grad_norm;
        for (const [i, b] of sides.entries()) {
          const got = await b.forwardBackward(data, fn, cfg);
          close(got.metrics['loss:sum'], want.metrics['loss:sum'], 1e-5, `side ${i} ${fn} loss`);
          got.logprobs.forEach((lp, d) => lp.forEach((x, t) => close(x, want.logprobs[d][t], 1e-5, `side ${i} ${fn} datum ${d} logprob ${t}`)));
          close((await b.optimStep(adam)).metrics.grad_norm, wantNorm, 1e-4, `side ${i} ${fn} grad norm`);
        }
      }
      const want = (await local.forward(data, 'cross_entropy')).metrics['loss:sum'];
      for (const [i, b] of sides.entries()) {
        close((await b.forward(data, 'cross_entropy')).metrics['loss:sum'], want, 1e-5, `side ${i} forward`);
        await b.saveState(join(dir, `side-${i}`, 'policy'));
        await b.forwardBackward(data, 'cross_entropy');
        await b.optimStep(adam);
        await b.loadState(join(dir, `side-${i}`, 'policy'), { optimizer: true });
        close((await b.forward(data, 'cross_entropy')).metrics['loss:sum'], want, 1e-6, `side ${i} loss after save, step, load`);
        assert.deepEqual((await b.sample([1, 4, 2], 2, { maxTokens: 4, seed: 9 })).map((x) => x.tokens), (await local.sample([1, 4, 2], 2, { maxTokens: 4, seed: 9 })).map((x) => x.tokens), `side ${i} samples`);
        await b.close();
      }
      assert.ok(srv.stats.jsonFwdBodies > 0 && srv.stats.protobufBodies > 0 && srv.stats.zstdBodies > 0, JSON.stringify(srv.stats));
    } finally {
      await srv.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
