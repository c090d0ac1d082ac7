/**
 * The Tinker protocol's overhead per training step: the same seam calls on the same tiny gpt-oss, once in process
 * (`GptOssBackend`) and once through `longrun serve trainer` in its own process on 127.0.0.1 (`TinkerBackend`, JSON
 * protocol of the tinker SDK ≤ 0.24). One "step" is what a GRPO step asks of the backend: a forward over the batch
 * (π_old), `--minis` mini-batches of forward_backward (ppo loss) + optim_step, a sampler refresh
 * (save_weights_for_sampler) and `--rows` one-sample generations of `--gen` tokens (the rollouts). Also timed: a
 * minimal call (a forward of one 1-token datum), the round trip a training call cannot go below.
 *
 * Both sides compute the same numbers (checked: loss:sum of every forward_backward); the difference is the
 * protocol: JSON encoding and parsing on both ends, HTTP, the future's submit + retrieve, and a second process
 * competing for the same cores. Writes bench/results/tinker.{json,md}.
 * Usage: npm run bench:tinker [-- --preset tiny-1m --rows 16 --tokens 256 --minis 2 --gen 16 --steps 20]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { saveModel } from '../src/model/checkpoint/index.ts';
import { presetConfig } from '../src/model/config.ts';
import { GptOssModel } from '../src/model/model.ts';
import { GptOssBackend, type AdamParams, type Datum, type TrainingBackend } from '../src/rl/backend.ts';
import { GptOssPolicy } from '../src/rl/model-policy.ts';
import { TinkerBackend, toWireDatum } from '../src/rl/tinker/backend.ts';
import { toAdamW } from '../src/serve/trainer-server.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return dflt;
  const v = Number(process.argv[i + 1]);
  if (!Number.isInteger(v) || v <= 0) throw new Error(`--${name} needs a positive integer`);
  return v;
}
function strArg(name: string, dflt: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? dflt : process.argv[i + 1]!;
}

const PRESET = strArg('preset', 'tiny-1m');
const ROWS = arg('rows', 16);
const TOKENS = arg('tokens', 256);
const MINIS = arg('minis', 2);
const GEN = arg('gen', 16);
const STEPS = arg('steps', 20);
const VOCAB = 1024;
const SEED = 7;
const ADAM: AdamParams = { learningRate: 1e-4, beta1: 0.9, beta2: 0.999, eps: 1e-8, weightDecay: 0.01, gradClipNorm: 1 };

/** Seeded datums: ROWS rows of TOKENS tokens, the second half of each scored (ppo inputs). */
function batch(step: number): Datum[] {
  let s = (SEED * 1_000_003 + step * 7919) >>> 0;
  const next = () => ((s = (Math.imul(s, 1664525) + 1013904223) >>> 0) / 2 ** 32);
  return Array.from({ length: ROWS }, (_, r) => {
    const toks = Array.from({ length: TOKENS + 1 }, () => Math.floor(next() * VOCAB));
    const scored = (i: number) => i >= TOKENS / 2;
    return {
      tokens: toks.slice(0, -1),
      lossInputs: {
        target_tokens: toks.slice(1),
        logprobs: toks.slice(1).map((_, i) => (scored(i) ? -Math.log(VOCAB) - 0.05 * next() : 0)),
        advantages: toks.slice(1).map((_, i) => (scored(i) ? ((r % 4) - 1.5) / (ROWS * TOKENS / 2) : 0)),
      },
    };
  });
}

interface StepTimes {
  forward: number;
  forward_backward: number;
  optim_step: number;
  sampler_sync: number;
  sample: number;
  step: number;
}

/** One GRPO-shaped step on a backend; returns the times (ms) and the loss sums. */
async function step(b: TrainingBackend & { syncSampler?(): Promise<void> }, k: number): Promise<{ t: StepTimes; losses: number[] }> {
  const data = batch(k);
  const t: StepTimes = { forward: 0, forward_backward: 0, optim_step: 0, sampler_sync: 0, sample: 0, step: 0 };
  const losses: number[] = [];
  const t0 = performance.now();
  let a = performance.now();
  await b.forward(data.map((d) => ({ tokens: d.tokens, lossInputs: { target_tokens: d.lossInputs.target_tokens } })), 'cross_entropy');
  t.forward += performance.now() - a;
  const per = Math.ceil(ROWS / MINIS);
  for (let m = 0; m < MINIS; m++) {
    a = performance.now();
    const r = await b.forwardBackward(data.slice(m * per, (m + 1) * per), 'ppo');
    t.forward_backward += performance.now() - a;
    losses.push(r.metrics['loss:sum']);
    a = performance.now();
    await b.optimStep(ADAM);
    t.optim_step += performance.now() - a;
  }
  a = performance.now();
  await b.syncSampler?.();
  t.sampler_sync += performance.now() - a;
  a = performance.now();
  // The rollouts: one request per row, all in flight together (as the agent loop sends them).
  await Promise.all(data.map((d, i) => b.sample(Array.from(d.tokens).slice(0, 32), 1, { maxTokens: GEN, seed: k * 1000 + i })));
  t.sample += performance.now() - a;
  t.step = performance.now() - t0;
  return { t, losses };
}

async function minimalCall(b: TrainingBackend, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const a = performance.now();
    await b.forward([{ tokens: [1], lossInputs: { target_tokens: [2] } }], 'cross_entropy');
    out.push(performance.now() - a);
  }
  return out;
}

async function startServer(checkpoint: string, dir: string): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn('nice', ['-n', '19', process.execPath, '--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'serve', 'trainer', '--checkpoint', checkpoint, '--model-name', 'bench/tiny', '--port', '0', '--checkpoint-dir', join(dir, 'server')], {
    cwd: ROOT, env: { ...process.env, TINKER_API_KEY: '' }, stdio: ['ignore', 'ignore', 'pipe'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let text = '';
    const t = setTimeout(() => reject(new Error(`the trainer server did not start in 120 s: ${text}`)), 120_000);
    child.stderr!.on('data', (d) => {
      text += d;
      const m = / at (http:\/\/\S+)/.exec(text);
      if (m) {
        clearTimeout(t);
        resolve(m[1]!);
      }
    });
    child.on('exit', (code) => reject(new Error(`the trainer server exited (${code}): ${text}`)));
  });
  return { url, child };
}

const quantile = (xs: number[], q: number) => [...xs].sort((x, y) => x - y)[Math.min(xs.length - 1, Math.floor(q * xs.length))]!;
const median = (xs: number[]) => quantile(xs, 0.5);
const f = (x: number, d = 1) => x.toFixed(d);

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'longrun-bench-tinker-'));
  const config = presetConfig(PRESET, { vocab_size: VOCAB });
  const model = () => new GptOssModel(config, { seed: SEED });
  const checkpoint = join(dir, 'base');
  saveModel(checkpoint, model());
  const { url, child } = await startServer(checkpoint, dir);
  const load0 = loadavg();
  try {
    const local = new GptOssBackend(new GptOssPolicy(model(), { optimizer: toAdamW(ADAM), reference: null }));
    const remote = await TinkerBackend.create({ baseUrl: url, baseModel: 'bench/tiny', heartbeatMs: 10_000 });
    // Warm-up (Wasm tier-up, first allocations) on both, then the timed steps, alternating sides.
    await step(local, 0);
    await step(remote, 0);
    const times: { local: StepTimes[]; remote: StepTimes[] } = { local: [], remote: [] };
    let maxLossDiff = 0;
    for (let k = 1; k <= STEPS; k++) {
      const l = await step(local, k);
      const r = await step(remote, k);
      times.local.push(l.t);
      times.remote.push(r.t);
      l.losses.forEach((x, i) => (maxLossDiff = Math.max(maxLossDiff, Math.abs(x - r.losses[i]) / Math.max(1, Math.abs(x)))));
    }
    const minimal = { local: median(await minimalCall(local, 20)), remote: median(await minimalCall(remote, 20)) };
    await remote.close();
    const bytes = batch(1).reduce((a, d) => a + JSON.stringify(toWireDatum(d)).length, 0);
    const keys: (keyof StepTimes)[] = ['forward', 'forward_backward', 'optim_step', 'sampler_sync', 'sample', 'step'];
    const med = (side: 'local' | 'remote', k: keyof StepTimes) => median(times[side].map((t) => t[k]));
    // The overhead of a call: the median of the paired differences (step k through the API minus step k in process;
    // the sides alternate, so a pair shares the machine's load), with the interquartile range.
    const paired = (k: keyof StepTimes) => times.remote.map((t, i) => t[k] - times.local[i][k]);
    const rowsOut = keys.map((k) => ({ call: k, localMs: med('local', k), remoteMs: med('remote', k), overheadMs: median(paired(k)), overheadIqrMs: [quantile(paired(k), 0.25), quantile(paired(k), 0.75)] }));
    const range = (side: 'local' | 'remote') => [Math.min(...times[side].map((t) => t.step)), Math.max(...times[side].map((t) => t.step))];
    // Requests per step: the forward, MINIS × (forward_backward + optim_step), save_weights_for_sampler, ROWS samples;
    // the samples are in flight together, so the round trips one after another are one fewer than ROWS fewer.
    const callsPerStep = 1 + 2 * MINIS + 1 + ROWS;
    const sequentialPerStep = 1 + 2 * MINIS + 1 + 1;
    const floorMs = sequentialPerStep * (minimal.remote - minimal.local);
    const result = {
      bench: 'tinker',
      date: new Date().toISOString(),
      node: process.version,
      cpu: cpus()[0]?.model.trim() ?? 'unknown',
      cores: cpus().length,
      loadavgBefore: load0,
      loadavgAfter: loadavg(),
      command: `npm run bench:tinker -- --preset ${PRESET} --rows ${ROWS} --tokens ${TOKENS} --minis ${MINIS} --gen ${GEN} --steps ${STEPS}`,
      preset: PRESET,
      params: [...model().parameters().values()].reduce((a, t) => a + t.size, 0),
      rows: ROWS, tokens: TOKENS, miniBatches: MINIS, genTokens: GEN, steps: STEPS,
      requestJsonBytesPerStep: 2 * bytes,
      maxRelativeLossDifference: maxLossDiff,
      minimalCallMs: minimal,
      callsPerStep,
      sequentialRoundTripsPerStep: sequentialPerStep,
      protocolFloorMsPerStep: floorMs,
      stepRangeMs: { local: range('local'), remote: range('remote') },
      medians: rowsOut,
      perStep: times,
    };
    const outDir = join(ROOT, 'bench', 'results');
    mkdirSync(outDir, { recursive: true });
    const md = [
      '# Tinker protocol overhead per training step (tiny gpt-oss, `longrun serve trainer` on loopback)',
      '',
      `${result.date}, Node ${result.node}, ${result.cpu} (${result.cores} cores), load average ${load0.map((x) => f(x, 2)).join(' / ')} (1 / 5 / 15 min) at the start; ` +
        `the server in its own process at nice 19. Command: \`${result.command}\`.`,
      '',
      `${PRESET} (${(result.params / 1e6).toFixed(2)} M parameters, vocabulary ${VOCAB}); one step = a forward over ${ROWS} rows × ${TOKENS} tokens, ` +
        `${MINIS} × (forward_backward on ${Math.ceil(ROWS / MINIS)} rows with the ppo loss + optim_step), a sampler refresh and ${ROWS} concurrent one-sample ` +
        `generations of ${GEN} tokens from 32-token prompts. Medians over ${STEPS} steps after one warm-up step each; the sides alternate step by step.`,
      '',
      '| call | in process (ms) | through the Tinker API (ms) | overhead (ms), median of paired steps | its interquartile range (ms) | overhead / in process |',
      '| --- | ---: | ---: | ---: | ---: | ---: |',
      ...rowsOut.map((r) => `| ${r.call === 'step' ? '**whole step**' : r.call} | ${f(r.localMs)} | ${f(r.remoteMs)} | ${f(r.overheadMs)} | ${f(r.overheadIqrMs[0])} … ${f(r.overheadIqrMs[1])} | ${r.localMs >= 1 ? `${f((100 * r.overheadMs) / r.localMs, 0)} %` : '–'} |`),
      '',
      `Whole-step range over the ${STEPS} steps: ${range('local').map((x) => f(x, 0)).join('–')} ms in process, ${range('remote').map((x) => f(x, 0)).join('–')} ms through the API ` +
        '(on a loaded machine the spread can exceed the overhead; the medians are the measure).',
      '',
      `Protocol floor: ${callsPerStep} requests per step, ${sequentialPerStep} round trips one after another (the ${ROWS} samples are in flight together) × ` +
        `${f(minimal.remote - minimal.local, 2)} ms (a minimal call through the API minus in process) = ${f(floorMs)} ms per step; the rest of the overhead is ` +
        'the JSON of the batch and the samples\' re-sent prompts.',
      '',
      `A minimal call (forward of one 1-token datum): ${f(minimal.local, 2)} ms in process, ${f(minimal.remote, 2)} ms through the API ` +
        '(submit + one long-polled retrieve_future, JSON both ways). Request JSON per step: about ' +
        `${(result.requestJsonBytesPerStep / 1024).toFixed(0)} KiB (the batch once for the forward, once across the forward_backwards). ` +
        `Largest relative difference of a forward_backward's loss:sum between the two sides: ${maxLossDiff.toExponential(1)}.`,
      '',
      'Both sides run the same engine code; the overhead is JSON encoding/parsing on both ends, HTTP on loopback, the',
      'future round trips, and the server process competing with the client for the same two cores. Sampling through the',
      'API also re-sends each prompt and keeps no KV cache between a trajectory\'s turns.',
      '',
    ].join('\n');
    writeFileSync(join(outDir, 'tinker.json'), JSON.stringify(result, null, 2) + '\n');
    writeFileSync(join(outDir, 'tinker.md'), md);
    console.log(md);
  } finally {
    child.kill('SIGTERM');
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
