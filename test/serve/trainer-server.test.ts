import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_ADAM, GptOssBackend, type LossConfig, type LossFn } from '../../src/rl/backend.ts';
import { GptOssPolicy } from '../../src/rl/model-policy.ts';
import { createTrainingModel, startTrainerServer, toAdamW } from '../../src/serve/trainer-server.ts';
import { tinyTransformer } from '../rl/policy-fixtures.ts';

const VOCAB = 12;
const BASE = 'longrun/tiny-gpt-oss';
const makeBase = () => tinyTransformer(VOCAB, 4);
const PYTHON = process.env.LONGRUN_TEST_PYTHON ?? process.env.LONGRUN_PYTHON;
const SCRIPT = join(import.meta.dirname, '../../clients/tinker/session.py');

function runPython(env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(PYTHON!, [SCRIPT], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    p.on('error', reject);
    p.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`python exited ${code}:\n${err.slice(-4000)}`))));
  });
}

interface Step { loss_fn: LossFn; config?: LossConfig | null; data: { tokens: number[]; target_tokens: number[]; weights?: number[]; logprobs?: number[]; advantages?: number[] }[]; loss: number; logprobs: number[][] }

function close(a: number, b: number, tol: number, what: string) {
  assert.ok(Math.abs(a - b) <= tol * Math.max(1, Math.abs(b)), `${what}: ${a} vs ${b}`);
}

describe('longrun serve trainer: the official tinker SDK (0.24.1, JSON protocol) against our engine', () => {
  it('runs a scripted SFT + RL session (LoRA, sampling, save/load) and matches the same calls in process', { skip: PYTHON ? false : 'set LONGRUN_TEST_PYTHON to a python with clients/tinker/requirements.txt', timeout: 120_000 }, async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-tinker-'));
    for (const firstRetrieve of [undefined, 'try_again', 408] as const) {
      const srv = await startTrainerServer({ baseModel: BASE, makeBase, checkpointDir: dir, apiKey: 'tml-test-key', firstRetrieve });
      try {
        const log = JSON.parse(await runPython({ TINKER_BASE_URL: srv.url, TINKER_API_KEY: 'tml-test-key', LONGRUN_BASE_MODEL: BASE })) as { sdk_version: string; models: string[]; steps: Step[]; final: { loss: number; logprobs: number[][] }; reloaded_loss: number; samples: { tokens: number[]; logprobs: number[] }[] };
        assert.equal(log.sdk_version, '0.24.1');
        assert.deepEqual(log.models, [BASE]);
        assert.equal(log.samples.length, 3);
        for (const s of log.samples) assert.ok(s.tokens.length === s.logprobs.length && s.tokens.length > 0 && s.logprobs.every((x) => x <= 0));
        // The same calls in process, on a fresh model with the same LoRA config.
        const policy = new GptOssPolicy(createTrainingModel(makeBase, { rank: 4, seed: 7 }), { optimizer: toAdamW(DEFAULT_ADAM), reference: null });
        const backend = new GptOssBackend(policy);
        const adam = { learningRate: 1e-2, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0, gradClipNorm: 1 };
        const sft = log.steps[0].data.map((d) => ({ tokens: d.tokens, lossInputs: { target_tokens: d.target_tokens, weights: d.weights } }));
        assert.deepEqual(log.steps.map((s) => s.loss_fn), ['cross_entropy', 'cross_entropy', 'importance_sampling', 'ppo']);
        for (const [k, step] of log.steps.entries()) {
          const data = step.data.map((d) => ({ tokens: d.tokens, lossInputs: { target_tokens: d.target_tokens, weights: d.weights, logprobs: d.logprobs, advantages: d.advantages } }));
          const r = await backend.forwardBackward(data, step.loss_fn, step.config ?? undefined);
          close(step.loss, r.metrics['loss:sum'], 1e-5, `step ${k} (${step.loss_fn}) loss`);
          step.logprobs.forEach((lp, i) => lp.forEach((x, t) => close(x, r.logprobs[i][t], 1e-5, `step ${k} datum ${i} logprob ${t}`)));
          await backend.optimStep(adam);
        }
        const final = await backend.forward(sft, 'cross_entropy');
        close(log.final.loss, final.metrics['loss:sum'], 1e-5, 'final loss');
        assert.ok(log.final.loss < log.steps[0].loss, `training lowered the SFT loss (${log.final.loss} < ${log.steps[0].loss})`);
        close(log.reloaded_loss, log.final.loss, 1e-6, 'loss after load_state');
      } finally {
        await srv.close();
      }
    }
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers bad input with clear 4xx errors and keeps serving; a failing call fails its future, not the server', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'longrun-tinker-'));
    const srv = await startTrainerServer({ baseModel: BASE, makeBase, checkpointDir: dir, apiKey: 'k', maxBodyBytes: 4096 });
    const post = async (path: string, body: unknown, key = 'k') => {
      const r = await fetch(`${srv.url}/api/v1/${path}`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-api-key': key }, body: typeof body === 'string' ? body : JSON.stringify(body) });
      return { status: r.status, body: (await r.json()) as Record<string, unknown> & { error?: { code: string; message: string } } };
    };
    try {
      assert.equal((await post('create_session', {}, 'wrong')).status, 401);
      assert.equal((await post('create_session', '{nope')).body.error?.code, 'malformed_json');
      assert.equal((await post('create_session', 'x'.repeat(5000))).status, 413);
      assert.equal((await post('nope', {})).status, 404);
      const sid = (await post('create_session', { tags: [], sdk_version: 'test' })).body.session_id as string;
      const other = await post('create_model', { session_id: sid, model_seq_id: 0, base_model: 'other' });
      assert.equal(other.status, 404);
      assert.match(other.body.error!.message, /trains "longrun\/tiny-gpt-oss"/);
      assert.equal((await post('create_model', { session_id: sid, model_seq_id: 0, base_model: BASE, lora_config: { rank: -1 } })).status, 400);
      const model_id = (await post('create_model', { session_id: sid, model_seq_id: 0, base_model: BASE })).body.model_id as string;
      const fb = (data: unknown, loss_fn = 'cross_entropy', seq_id?: number) => post('forward_backward', { model_id, seq_id, forward_backward_input: { data, loss_fn } });
      assert.match((await fb([], 'cross_entropy')).body.error!.message, /non-empty array/);
      assert.match((await fb([{ model_input: { chunks: [{ tokens: [1] }] }, loss_fn_inputs: {} }], 'sum')).body.error!.message, /loss_fn must be one of/);
      assert.match((await fb([{ model_input: { chunks: [{ tokens: [1, 'a'] }] }, loss_fn_inputs: {} }])).body.error!.message, /chunks\[0\]\.tokens\[1\] must be a finite integer/);
      assert.match((await fb([{ model_input: { chunks: [{ tokens: [1] }] }, loss_fn_inputs: {} }])).body.error!.message, /target_tokens is required/);
      // Out-of-vocabulary ids pass the shape checks and fail the call's future with a user error.
      const bad = await fb([{ model_input: { chunks: [{ tokens: [1, 500] }] }, loss_fn_inputs: { target_tokens: { data: [1, 2], dtype: 'int64', shape: [2] } } }], 'cross_entropy', 1);
      assert.equal(bad.status, 200);
      let res: Record<string, unknown> = { type: 'try_again' };
      while (res.type === 'try_again') res = (await post('retrieve_future', { request_id: bad.body.request_id })).body;
      assert.equal(res.category, 'user');
      assert.match(String(res.error), /input token 1 \(500\)/);
      assert.equal((await fb([{ model_input: { chunks: [{ tokens: [1] }] }, loss_fn_inputs: { target_tokens: { data: [2], dtype: 'int64' } } }], 'cross_entropy', 1)).status, 409);
      assert.equal((await post('retrieve_future', { request_id: 'missing' })).status, 404);
      assert.equal((await post('optim_step', { model_id, adam_params: { learning_rate: 'fast' } })).status, 400);
      assert.equal((await post('load_weights', { model_id, path: 'tinker://elsewhere/weights/../../x', optimizer: false })).status, 404);
      assert.equal((await post('save_weights', { model_id, path: '../escape' })).status, 400);
      const nested = await post('create_session', JSON.stringify(JSON.parse('['.repeat(40) + ']'.repeat(40))));
      assert.equal(nested.status, 400);
      assert.equal((await (await fetch(`${srv.url}/api/v1/healthz`)).json() as { status: string }).status, 'ok');
    } finally {
      await srv.close();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
