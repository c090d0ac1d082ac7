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
const SCRIPT = join(import.meta.dirname, '../../clients/tinker/session.py');
/** In CI (CI=true, or LONGRUN_PYTHON set by .ci/run) a missing SDK venv fails the test instead of skipping it. */
const REQUIRED = process.env.CI === 'true' || Boolean(process.env.LONGRUN_PYTHON);
/** The official SDKs under test: 0.24.1 (JSON protocol) in the main venv, the newest release (protobuf) in its own. */
const SDKS = [
  { version: '0.24.1', python: process.env.LONGRUN_TEST_PYTHON, env: 'LONGRUN_TEST_PYTHON', requirements: 'clients/tinker/requirements.txt' },
  { version: '0.38.0', python: process.env.LONGRUN_TEST_PYTHON_TINKER_NEW, env: 'LONGRUN_TEST_PYTHON_TINKER_NEW', requirements: 'clients/tinker/requirements-0.38.txt' },
] as const;

function runPython(python: string, env: Record<string, string>): Promise<string> {
  return new Promise((resolve, reject) => {
    const p = spawn(python, [SCRIPT], { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '', err = '';
    p.stdout.on('data', (d: Buffer) => (out += d.toString()));
    p.stderr.on('data', (d: Buffer) => (err += d.toString()));
    p.on('error', reject);
    p.on('close', (code) => (code === 0 ? resolve(out) : reject(new Error(`python exited ${code}:\n${err.slice(-4000)}`))));
  });
}

interface Step { loss_fn: LossFn; config?: LossConfig | null; data: { tokens: number[]; target_tokens: number[]; weights?: number[]; logprobs?: number[]; advantages?: number[] }[]; loss: number; logprobs: number[][] }
interface SessionLog {
  sdk_version: string; models: string[]; steps: Step[]; final: { loss: number; logprobs: number[][] };
  samples: { tokens: number[]; logprobs: number[]; stop_reason: string }[]; prompt_logprobs: { tokens: number[]; logprobs: (number | null)[] };
  named_sampler: { path: string; tokens: number[] }; saved_path: string;
  after_extra_step: number; reloaded_with_optimizer_loss: number; step_after_optimizer_load: number; reloaded_loss: number;
  step_after_weights_load: number; from_state_loss: number; from_state_step: number; from_state_with_optimizer_step: number;
}

function close(a: number, b: number, tol: number, what: string) {
  assert.ok(Math.abs(a - b) <= tol * Math.max(1, Math.abs(b)), `${what}: ${a} vs ${b}`);
}

/**
 * Replays the script's calls in process, on a fresh model with the same LoRA config, and compares every number it
 * logged. Loss inputs are rounded to float32 first: the protobuf protocol carries them as float32 (the SDK's dtype).
 */
async function replay(log: SessionLog, dir: string): Promise<void> {
  const policy = new GptOssPolicy(createTrainingModel(makeBase, { rank: 4, seed: 7 }), { optimizer: toAdamW(DEFAULT_ADAM), reference: null });
  const backend = new GptOssBackend(policy);
  const adam = { learningRate: 1e-2, beta1: 0.9, beta2: 0.95, eps: 1e-8, weightDecay: 0, gradClipNorm: 1 };
  const f32 = (a?: number[]) => a && Array.from(Float32Array.from(a));
  const datums = (step: Step) => step.data.map((d) => ({ tokens: d.tokens, lossInputs: { target_tokens: d.target_tokens, weights: f32(d.weights), logprobs: f32(d.logprobs), advantages: f32(d.advantages) } }));
  assert.deepEqual(log.steps.map((s) => s.loss_fn), ['cross_entropy', 'cross_entropy', 'importance_sampling', 'ppo', 'cispo', 'dro']);
  const sft = datums(log.steps[0]);
  const forwardLoss = async () => (await backend.forward(sft, 'cross_entropy')).metrics['loss:sum'];
  const sftStep = async () => {
    await backend.forwardBackward(sft, 'cross_entropy');
    await backend.optimStep(adam);
    return forwardLoss();
  };
  for (const [k, step] of log.steps.entries()) {
    if (k === 2) {
      // After SFT the script sampled (seed 3) and scored a sequence: the same weights here give the same draws and log-probs.
      const seqs = await backend.sample([1, 4, 2], 3, { maxTokens: 5, temperature: 1, seed: 3 });
      assert.deepEqual(log.samples.map((s) => s.tokens), seqs.map((s) => s.tokens), 'samples');
      log.samples.forEach((s, i) => s.logprobs.forEach((x, t) => close(x, seqs[i].logprobs[t], 1e-5, `sample ${i} logprob ${t}`)));
      const toks = log.prompt_logprobs.tokens;
      const lp = (await backend.forward([{ tokens: toks.slice(0, -1), lossInputs: { target_tokens: toks.slice(1) } }], 'cross_entropy')).logprobs[0];
      assert.equal(log.prompt_logprobs.logprobs[0], null, 'compute_logprobs: none for the first token');
      lp.forEach((x, t) => close(log.prompt_logprobs.logprobs[t + 1]!, x, 1e-5, `compute_logprobs token ${t + 1}`));
    }
    const r = await backend.forwardBackward(datums(step), step.loss_fn, step.config ?? undefined);
    close(step.loss, r.metrics['loss:sum'], 1e-5, `step ${k} (${step.loss_fn}) loss`);
    step.logprobs.forEach((lp, i) => lp.forEach((x, t) => close(x, r.logprobs[i][t], 1e-5, `step ${k} datum ${i} logprob ${t}`)));
    await backend.optimStep(adam);
  }
  const final = await backend.forward(sft, 'cross_entropy');
  close(log.final.loss, final.metrics['loss:sum'], 1e-5, 'final loss');
  assert.ok(log.final.loss < log.steps[0].loss, `training lowered the SFT loss (${log.final.loss} < ${log.steps[0].loss})`);
  assert.match(log.saved_path, /^tinker:\/\/.+\/weights\/final$/);
  assert.match(log.named_sampler.path, /^tinker:\/\/.+\/sampler_weights\/final-sampler$/);
  assert.deepEqual(log.named_sampler.tokens, (await backend.sample([1, 4, 2], 1, { maxTokens: 4, temperature: 1, seed: 11 }))[0].tokens, 'sample through create_sampling_client(model_path)');
  // Checkpoints: the same save / step / load sequence in process.
  const ckpt = join(dir, 'replay');
  await backend.saveState(ckpt);
  close(log.after_extra_step, await sftStep(), 1e-5, 'step after save_state');
  await backend.loadState(ckpt, { optimizer: true });
  close(log.reloaded_with_optimizer_loss, log.final.loss, 1e-6, 'loss after load_state_with_optimizer');
  close(log.step_after_optimizer_load, log.after_extra_step, 1e-6, 'a step after load_state_with_optimizer repeats the step after save_state (optimizer restored)');
  await backend.loadState(ckpt, { optimizer: false });
  close(log.reloaded_loss, log.final.loss, 1e-6, 'loss after load_state');
  close(log.step_after_weights_load, await sftStep(), 1e-5, 'step after load_state (fresh optimizer)');
  assert.ok(Math.abs(log.step_after_weights_load - log.after_extra_step) > 1e-4, 'weights-only load resets the optimizer (a different step)');
  close(log.from_state_loss, log.final.loss, 1e-6, 'create_training_client_from_state: loss');
  close(log.from_state_step, log.step_after_weights_load, 1e-6, 'create_training_client_from_state: step (fresh optimizer)');
  close(log.from_state_with_optimizer_step, log.after_extra_step, 1e-6, 'create_training_client_from_state_with_optimizer: step (optimizer restored)');
}

describe('longrun serve trainer: the official tinker SDKs (0.24.1 JSON, 0.38.0 protobuf) against our engine', () => {
  for (const sdk of SDKS) {
    const why = sdk.python ? false : `set ${sdk.env} to a python with ${sdk.requirements}`;
    it(`tinker ${sdk.version}: a scripted SFT + RL session (every loss, forward, sampling, compute_logprobs, save/load with and without optimizer, clients from state, retried futures) matches the same calls in process`, { skip: REQUIRED ? false : why, timeout: 600_000 }, async () => {
      assert.ok(sdk.python, `${why} (.ci/run builds it; CI fails rather than skips without it)`);
      const dir = mkdtempSync(join(tmpdir(), 'longrun-tinker-'));
      // Per SDK: the default wire format, then with retrieve faults; 0.24.1 also over protobuf (offered by the server),
      // 0.38.0 also without compression.
      const configs: { firstRetrieve?: 'try_again' | 408; protobuf?: { compress?: boolean; oldSdks?: boolean }; expect: { proto: boolean; zstd: boolean } }[] = sdk.version === '0.24.1'
        ? [{ expect: { proto: false, zstd: false } }, { firstRetrieve: 408, expect: { proto: false, zstd: false } }, { firstRetrieve: 'try_again', protobuf: { oldSdks: true }, expect: { proto: true, zstd: true } }]
        : [{ expect: { proto: true, zstd: true } }, { firstRetrieve: 'try_again', expect: { proto: true, zstd: true } }, { firstRetrieve: 408, protobuf: { compress: false }, expect: { proto: true, zstd: false } }];
      try {
        for (const c of configs) {
          const srv = await startTrainerServer({ baseModel: BASE, makeBase, checkpointDir: join(dir, String(configs.indexOf(c))), apiKey: 'tml-test-key', firstRetrieve: c.firstRetrieve, protobuf: c.protobuf });
          try {
            const log = JSON.parse(await runPython(sdk.python!, { TINKER_BASE_URL: srv.url, TINKER_API_KEY: 'tml-test-key', LONGRUN_BASE_MODEL: BASE })) as SessionLog;
            assert.equal(log.sdk_version, sdk.version);
            assert.deepEqual(log.models, [BASE]);
            assert.equal(log.samples.length, 3);
            for (const s of log.samples) assert.ok(s.tokens.length === s.logprobs.length && s.tokens.length > 0 && s.logprobs.every((x) => x <= 0));
            const seen = srv.stats;
            assert.equal(seen.protobufBodies > 0, c.expect.proto, `protobuf forward_backward bodies: ${JSON.stringify(seen)}`);
            assert.equal(seen.jsonFwdBodies > 0, !c.expect.proto, `JSON forward bodies: ${JSON.stringify(seen)}`);
            assert.equal(seen.zstdBodies > 0, c.expect.zstd, `zstd bodies: ${JSON.stringify(seen)}`);
            assert.ok(seen.protobufReplies > 0, `results went out as protobuf to an SDK that accepts them: ${JSON.stringify(seen)}`);
            await replay(log, join(dir, `replay-${configs.indexOf(c)}`));
          } finally {
            await srv.close();
          }
        }
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    });
  }

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
