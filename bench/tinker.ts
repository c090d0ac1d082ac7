/**
 * The Tinker protocol's overhead per training step: the same seam calls on the same tiny gpt-oss, in process
 * (`GptOssBackend`) and through `longrun serve trainer` in its own process on 127.0.0.1 (`TinkerBackend`) with each
 * wire format of forward/forward_backward: JSON (tinker SDK ≤ 0.24), protobuf (SDK ≥ 0.25), protobuf + zstd. One "step" is what a GRPO step asks of the backend: a forward over the batch
 * (π_old), `--minis` mini-batches of forward_backward (ppo loss) + optim_step, a sampler refresh
 * (save_weights_for_sampler) and `--rows` one-sample generations of `--gen` tokens (the rollouts). Also timed: a
 * minimal call (a forward of one 1-token datum), the round trip a training call cannot go below.
 *
 * All sides compute the same numbers (checked: loss:sum of every forward_backward); the difference is the
 * protocol: encoding and parsing on both ends (and compressing), HTTP, the future's submit + retrieve, and a second process
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
import { TinkerBackend } from '../src/rl/tinker/backend.ts';
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
    // Three clients of the same server, one per wire format of forward/forward_backward bodies.
    const wires = [
      { name: 'json', label: 'JSON (SDK 0.24)', options: { wire: 'json' as const } },
      { name: 'protobuf', label: 'protobuf (SDK ≥ 0.25)', options: { wire: 'protobuf' as const, compress: false } },
      { name: 'protobuf+zstd', label: 'protobuf + zstd', options: { wire: 'protobuf' as const, compress: true } },
    ];
    const remotes = await Promise.all(wires.map((w) => TinkerBackend.create({ baseUrl: url, baseModel: 'bench/tiny', heartbeatMs: 10_000, ...w.options })));
    remotes.forEach((r, i) => {
      if (r.client.protobuf !== (wires[i].options.wire === 'protobuf') || r.client.compress !== (wires[i].options.compress === true)) throw new Error(`client ${wires[i].name} did not get its wire format`);
    });
    // Warm-up (Wasm tier-up, first allocations) on every side, then the timed steps, the sides taking turns.
    await step(local, 0);
    for (const r of remotes) await step(r, 0);
    const times: { local: StepTimes[]; remote: StepTimes[][] } = { local: [], remote: remotes.map(() => []) };
    const bodyBytes: number[][] = remotes.map(() => []);
    const maxLossDiff = remotes.map(() => 0);
    for (let k = 1; k <= STEPS; k++) {
      const l = await step(local, k);
      times.local.push(l.t);
      for (const [i, remote] of remotes.entries()) {
        const sent = remote.client.sent.bytes;
        const r = await step(remote, k);
        bodyBytes[i].push(remote.client.sent.bytes - sent);
        times.remote[i].push(r.t);
        l.losses.forEach((x, j) => (maxLossDiff[i] = Math.max(maxLossDiff[i], Math.abs(x - r.losses[j]) / Math.max(1, Math.abs(x)))));
      }
    }
    const minimal = { local: median(await minimalCall(local, 20)), remote: [] as number[] };
    for (const r of remotes) minimal.remote.push(median(await minimalCall(r, 20)));
    for (const r of remotes) await r.close();
    const keys: (keyof StepTimes)[] = ['forward', 'forward_backward', 'optim_step', 'sampler_sync', 'sample', 'step'];
    // The overhead of a call: the median of the paired differences (step k through the API minus step k in process;
    // the sides take turns, so a pair shares the machine's load), with the interquartile range.
    const paired = (i: number, k: keyof StepTimes) => times.remote[i].map((t, j) => t[k] - times.local[j][k]);
    const rowsOut = keys.map((k) => ({
      call: k, localMs: median(times.local.map((t) => t[k])),
      wires: wires.map((w, i) => ({ wire: w.name, remoteMs: median(times.remote[i].map((t) => t[k])), overheadMs: median(paired(i, k)), overheadIqrMs: [quantile(paired(i, k), 0.25), quantile(paired(i, k), 0.75)] })),
    }));
    const perWire = wires.map((w, i) => ({ wire: w.name, bodyBytesPerStep: median(bodyBytes[i]), maxRelativeLossDifference: maxLossDiff[i], minimalCallMs: minimal.remote[i], stepRangeMs: [Math.min(...times.remote[i].map((t) => t.step)), Math.max(...times.remote[i].map((t) => t.step))] }));
    const callsPerStep = 1 + 2 * MINIS + 1 + ROWS;
    const sequentialPerStep = 1 + 2 * MINIS + 1 + 1;
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
      minimalCallMsInProcess: minimal.local,
      callsPerStep,
      sequentialRoundTripsPerStep: sequentialPerStep,
      stepRangeMsInProcess: [Math.min(...times.local.map((t) => t.step)), Math.max(...times.local.map((t) => t.step))],
      wires: perWire,
      medians: rowsOut,
      perStep: { local: times.local, ...Object.fromEntries(wires.map((w, i) => [w.name, times.remote[i]])) },
    };
    const outDir = join(ROOT, 'bench', 'results');
    mkdirSync(outDir, { recursive: true });
    const kib = (b: number) => `${(b / 1024).toFixed(0)} KiB`;
    const md = [
      '# Tinker protocol overhead per training step: JSON, protobuf, protobuf + zstd (tiny gpt-oss, `longrun serve trainer` on loopback)',
      '',
      `${result.date}, Node ${result.node}, ${result.cpu} (${result.cores} cores), load average ${load0.map((x) => f(x, 2)).join(' / ')} (1 / 5 / 15 min) at the start; ` +
        `the server in its own process at nice 19. Command: \`${result.command}\`.`,
      '',
      `${PRESET} (${(result.params / 1e6).toFixed(2)} M parameters, vocabulary ${VOCAB}); one step = a forward over ${ROWS} rows × ${TOKENS} tokens, ` +
        `${MINIS} × (forward_backward on ${Math.ceil(ROWS / MINIS)} rows with the ppo loss + optim_step), a sampler refresh and ${ROWS} concurrent one-sample ` +
        `generations of ${GEN} tokens from 32-token prompts. Three clients of one server differ only in how forward/forward_backward bodies travel ` +
        `(JSON as SDK 0.24 sends them; protobuf as SDK ≥ 0.25 does, results as protobuf too; the same zstd-compressed). Medians over ${STEPS} steps after ` +
        'one warm-up step each; in process and the three clients take turns step by step, and each overhead is the median of its paired differences.',
      '',
      `| call | in process (ms) | ${wires.map((w) => `${w.label}: ms, overhead (IQR)`).join(' | ')} |`,
      `| --- | ---: | ${wires.map(() => '---:').join(' | ')} |`,
      ...rowsOut.map((r) => `| ${r.call === 'step' ? '**whole step**' : r.call} | ${f(r.localMs)} | ${r.wires.map((w) => `${f(w.remoteMs)}, ${f(w.overheadMs)} (${f(w.overheadIqrMs[0])} … ${f(w.overheadIqrMs[1])})`).join(' | ')} |`),
      '',
      '| wire | forward/forward_backward bodies per step | minimal call (ms) | whole-step range (ms) | largest relative loss:sum difference from in process |',
      '| --- | ---: | ---: | ---: | ---: |',
      ...perWire.map((w, i) => `| ${wires[i].label} | ${kib(w.bodyBytesPerStep)} | ${f(w.minimalCallMs, 2)} | ${w.stepRangeMs.map((x) => f(x, 0)).join('–')} | ${w.maxRelativeLossDifference.toExponential(1)} |`),
      '',
      `In process: a minimal call (forward of one 1-token datum) takes ${f(minimal.local, 2)} ms; whole steps ${result.stepRangeMsInProcess.map((x) => f(x, 0)).join('–')} ms. ` +
        `${callsPerStep} requests per step, ${sequentialPerStep} round trips one after another (the ${ROWS} samples are in flight together). ` +
        'Body bytes are what the client sent for forward and forward_backward (after compression). Protobuf carries loss inputs as float32 ' +
        '(the SDK\'s dtype), JSON as decimal doubles, hence the small loss differences of the protobuf rows.',
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
