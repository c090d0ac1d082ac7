/**
 * Model throughput: training tokens/s and model FLOP utilisation (MFU) per tiny preset, generation tokens/s at
 * batch 1 and 64, peak memory. MFU = (model FLOPs per step / step time) ÷ the engine's matmul GFLOP/s measured
 * in the same process on the 2048×256×1024 reference shape (bench/matmul.ts).
 * Model FLOPs per token (training) = 6·(active non-embedding parameters) + 12·L·Hq·d·(mean keys attended), the
 * usual forward+backward count (attention: QKᵀ and PV are 2·d multiply-adds = 4·d FLOPs per key, ×3 with the
 * backward; keys counted exactly under the causal / window masks).
 *
 *   npm run bench:model [-- --peer]    (LONGRUN_BENCH_QUICK=1 for a smoke run)
 * With --peer, the same configs train in Hugging Face transformers on PyTorch (bench/peers/transformers_gpt_oss.py,
 * in the Python of $LONGRUN_TORCH_PYTHON, default python3; neither is a dependency of the project): the same
 * B × T, forward + backward + clipping + AdamW, median step, and that process's peak RSS.
 * Writes bench/results/model.{json,md}.
 */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { beginMemoryScope, clipGradNorm, getRuntime, Mulberry32Rng } from '../src/engine/index.ts';
import { presetConfig, type GptOssConfig } from '../src/model/config.ts';
import { generate } from '../src/model/generate.ts';
import { GptOssModel } from '../src/model/model.ts';
import { countParams } from '../src/model/params.ts';
import { benchMatmul } from './matmul.ts';

const QUICK = process.env.LONGRUN_BENCH_QUICK === '1';
const PRESETS = ['tiny-1m', 'tiny-4m', 'tiny-10m'] as const;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function meanKeys(cfg: GptOssConfig, T: number): number {
  let sum = 0;
  for (const kind of cfg.layer_types) {
    let keys = 0;
    for (let p = 0; p < T; p++) keys += kind === 'sliding_attention' ? Math.min(p + 1, cfg.sliding_window) : p + 1;
    sum += keys / T;
  }
  return sum / cfg.layer_types.length;
}

function trainFlopsPerToken(cfg: GptOssConfig, T: number): number {
  const c = countParams(cfg);
  return 6 * c.active + 12 * cfg.num_hidden_layers * cfg.num_attention_heads * cfg.head_dim * meanKeys(cfg, T);
}

interface TrainRow { preset: string; params: number; active: number; batch: number; seq: number; stepMs: number; tokensPerS: number; gflops: number; mfu: number; peakBytes: number; peakActBytes: number; checkpointedPeakBytes: number }
interface GenRow { preset: string; batch: number; prompt: number; newTokens: number; ms: number; tokensPerS: number; peakBytes: number; kvPeakBytes: number }

function trainBench(name: string, matmulGflops: number): TrainRow {
  const cfg = presetConfig(name);
  const B = QUICK ? 2 : 4, T = QUICK ? 128 : 256;
  const rng = new Mulberry32Rng(1);
  const tokens = Int32Array.from({ length: B * T }, () => rng.int(cfg.vocab_size));
  const targets = Int32Array.from({ length: B * T }, () => rng.int(cfg.vocab_size));
  const run = (checkpointing: boolean, steps: number) => {
    const model = new GptOssModel(cfg, { seed: 1, checkpointing });
    const opt = model.optimizer({ lr: 1e-3 });
    const grads = [...model.gradients().values()];
    const times: number[] = [];
    let peak = 0, peakAct = 0;
    for (let s = 0; s < steps; s++) {
      const t0 = performance.now();
      model.zeroGrad();
      model.forward({ tokens, targets, batch: B });
      model.backward();
      clipGradNorm(grads, 1);
      opt.update();
      times.push(performance.now() - t0);
      peak = model.lastMemory!.peakBytes;
      peakAct = model.lastMemory!.peakDeltaBytes;
    }
    opt.dispose();
    model.dispose();
    return { stepMs: median(times.slice(1)), peak, peakAct };
  };
  const full = run(false, QUICK ? 3 : 6);
  const ckpt = run(true, 2);
  const c = countParams(cfg);
  const flops = trainFlopsPerToken(cfg, T) * B * T;
  const gflops = flops / (full.stepMs * 1e6);
  return {
    preset: name, params: c.total, active: c.active, batch: B, seq: T, stepMs: full.stepMs, tokensPerS: (B * T) / (full.stepMs / 1e3),
    gflops, mfu: gflops / matmulGflops, peakBytes: full.peak, peakActBytes: full.peakAct, checkpointedPeakBytes: ckpt.peakAct,
  };
}

function genBench(name: string, batch: number): GenRow {
  const cfg = presetConfig(name);
  const model = new GptOssModel(cfg, { seed: 2, grads: false });
  const rng = new Mulberry32Rng(3);
  const prompt = 16, newTokens = QUICK ? 8 : 32;
  const prompts = Array.from({ length: batch }, () => Array.from({ length: prompt }, () => rng.int(cfg.vocab_size)));
  generate(model, prompts.slice(0, 1), { maxNewTokens: 2, seed: 1 });
  const scope = beginMemoryScope();
  const t0 = performance.now();
  const r = generate(model, prompts, { maxNewTokens: newTokens, temperature: 1, seed: 1 });
  const ms = performance.now() - t0;
  const mem = scope.end();
  const produced = r.sequences.reduce((a, s) => a + s.tokens.length, 0);
  model.dispose();
  return { preset: name, batch, prompt, newTokens, ms, tokensPerS: produced / (ms / 1e3), peakBytes: mem.peakDeltaBytes, kvPeakBytes: mem.tags['model.kvcache']?.peakBytes ?? 0 };
}

/** The engine's matmul rate right now (the machine is shared and drifts, so it is re-measured per preset). */
function matmulRate(): number {
  return benchMatmul([{ M: 2048, K: 256, N: 1024 }], [getRuntime().threads])[0].gflops;
}

interface PeerRow { preset: string; peer?: string; attn?: string; step_ms?: number; tokens_per_s?: number; peak_rss_mib?: number; rss_before_training_mib?: number; error?: string }

/** The transformers peer on a preset's config (same B × T as trainBench), in its own process. */
function peerBench(python: string, preset: string): PeerRow {
  const dir = mkdtempSync(join(tmpdir(), 'longrun-model-peer-'));
  const script = join(dirname(fileURLToPath(import.meta.url)), 'peers', 'transformers_gpt_oss.py');
  try {
    const file = join(dir, `${preset}.json`);
    writeFileSync(file, JSON.stringify(presetConfig(preset)));
    const r = spawnSync(python, [script, '--config', file, '--batch', String(QUICK ? 2 : 4), '--seq', String(QUICK ? 128 : 256), '--steps', String(QUICK ? 3 : 6)], { encoding: 'utf8', maxBuffer: 1 << 22 });
    const line = (r.stdout ?? '').trim().split('\n').filter((l) => l.startsWith('{')).pop();
    const row: PeerRow = line ? { preset, ...(JSON.parse(line) as Omit<PeerRow, 'preset'>) } : { preset, error: `exit ${r.status}: ${(r.stderr ?? '').trim().split('\n').slice(-1)[0]}` };
    console.log(`peer ${preset}: ${row.error ?? `${row.tokens_per_s} tok/s, peak RSS ${row.peak_rss_mib} MiB`}`);
    return row;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

function main(): void {
  const rt = getRuntime();
  const withPeer = process.argv.includes('--peer');
  trainBench('tiny-1m', 1); // JIT and allocator warm-up
  const train: TrainRow[] = [];
  const rates: number[] = [];
  const peers: PeerRow[] = [];
  for (const p of PRESETS) {
    // reference = the better of two matmul measurements around the run (a conservative MFU)
    const before = matmulRate();
    const r = trainBench(p, 1);
    const ref = Math.max(before, matmulRate());
    rates.push(ref);
    r.mfu = r.gflops / ref;
    train.push(r);
    console.log(`${p}: ${r.tokensPerS.toFixed(0)} tok/s, ${r.gflops.toFixed(1)} GFLOP/s vs matmul ${ref.toFixed(1)}, MFU ${(100 * r.mfu).toFixed(1)}%, step ${r.stepMs.toFixed(0)} ms`);
    // right after ours, so the two rows see the same machine (its speed drifts)
    if (withPeer) peers.push(peerBench(process.env.LONGRUN_TORCH_PYTHON ?? 'python3', p));
  }
  const matmulGflops = Math.max(...rates);
  const gen: GenRow[] = [];
  for (const p of PRESETS) for (const b of [1, 64]) {
    const r = genBench(p, b);
    gen.push(r);
    console.log(`${p} generate batch ${b}: ${r.tokensPerS.toFixed(0)} tok/s`);
  }
  const out = join(dirname(fileURLToPath(import.meta.url)), 'results');
  mkdirSync(out, { recursive: true });
  const meta = { date: new Date().toISOString(), node: process.version, cpu: cpus()[0]?.model ?? 'unknown', cores: cpus().length, threads: rt.threads, relaxed: rt.relaxed, quick: QUICK };
  writeFileSync(join(out, 'model.json'), JSON.stringify({ meta, matmulGflops, matmulGflopsPerPreset: rates, train, generate: gen, peers }, null, 2) + '\n');
  const mib = (b: number) => (b / 2 ** 20).toFixed(1);
  const md = [
    '# Model benchmark', '',
    `${meta.date}, ${meta.cpu} (${meta.cores} cores), Node ${meta.node}, ${meta.threads} threads, relaxed SIMD ${meta.relaxed}${QUICK ? ', QUICK smoke run' : ''}.`,
    `Engine matmul (2048×256×1024), measured before and after each preset's run, best of the two: ${rates.map((r) => r.toFixed(1)).join(' / ')} GFLOP/s. MFU = model GFLOP/s ÷ that preset's rate.`, '',
    '## Training (forward + backward + AdamW)', '',
    'Peak MiB: all engine memory at the step peak (weights, grads, optimizer, activations); step peak: what the',
    'forward + backward add on top; with checkpointing: the same with layer recomputation.', '',
    '| preset | params | active | B×T | step ms | tokens/s | GFLOP/s | MFU | peak MiB | step peak MiB | with checkpointing MiB |',
    '|---|---|---|---|---|---|---|---|---|---|---|',
    ...train.map((r) => `| ${r.preset} | ${(r.params / 1e6).toFixed(2)} M | ${(r.active / 1e6).toFixed(2)} M | ${r.batch}×${r.seq} | ${r.stepMs.toFixed(0)} | ${r.tokensPerS.toFixed(0)} | ${r.gflops.toFixed(1)} | ${(100 * r.mfu).toFixed(1)}% | ${mib(r.peakBytes)} | ${mib(r.peakActBytes)} | ${mib(r.checkpointedPeakBytes)} |`),
    '', '## Generation (prompt 16, KV cache, temperature 1)', '',
    '| preset | batch | new tokens | ms | tokens/s | peak MiB (above weights) | KV cache MiB |', '|---|---|---|---|---|---|---|',
    ...gen.map((r) => `| ${r.preset} | ${r.batch} | ${r.newTokens} | ${r.ms.toFixed(0)} | ${r.tokensPerS.toFixed(0)} | ${mib(r.peakBytes)} | ${mib(r.kvPeakBytes)} |`), '',
    ...peerTable(train, peers),
  ].join('\n');
  writeFileSync(join(out, 'model.md'), md);
  console.log(`wrote ${join('bench', 'results', 'model.json')} and model.md`);
}

function peerTable(train: TrainRow[], peers: PeerRow[]): string[] {
  if (peers.length === 0) return ['## Peer', '', 'Not run (pass --peer).', ''];
  const p0 = peers.find((p) => p.peer);
  const L = ['## Peer: the same configs in transformers (same session)', '',
    `${p0?.peer ?? 'transformers'}, attention '${p0?.attn ?? '?'}' (its gpt-oss sink path), ${p0 ? '2' : '?'} threads, random weights and tokens, the same B × T, forward + backward + clipping + AdamW, median step after one warm-up, each run right after ours. Ours: the training rows above. ` +
    'Peer memory is its process: peak RSS, and peak RSS less the RSS before the first step (model built, PyTorch loaded); ours is engine memory (weights, gradients, optimizer, activations).', '',
    '| preset | ours tokens/s | transformers tokens/s | ours / transformers | ours peak MiB | transformers peak RSS MiB | transformers RSS growth in training MiB |', '|---|---|---|---|---|---|---|'];
  for (const p of peers) {
    const o = train.find((r) => r.preset === p.preset);
    if (p.error || !o) { L.push(`| ${p.preset} | ${o?.tokensPerS.toFixed(0) ?? '–'} | failed: ${p.error ?? ''} | | | | |`); continue; }
    L.push(`| ${p.preset} | ${o.tokensPerS.toFixed(0)} | ${p.tokens_per_s!.toFixed(0)} | ${(o.tokensPerS / p.tokens_per_s!).toFixed(2)}× | ${(o.peakBytes / 2 ** 20).toFixed(1)} | ${p.peak_rss_mib} | ${(p.peak_rss_mib! - p.rss_before_training_mib!).toFixed(1)} |`);
  }
  L.push('');
  return L;
}

main();
