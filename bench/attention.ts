/**
 * The attention benchmark: sink-aware flex attention (Wasm blockwise kernels) against eager attention that
 * materialises [Hq, T, S] scores, probabilities and their gradients, at gpt-oss-20b attention shapes (64 query
 * heads, 8 kv heads, head dim 64, learned sinks; one full-causal layer and one sliding-window-128 layer), forward
 * + backward, T = 1024 … 32768.
 *
 *   npm run bench:attention -- [--max-t N] [--max-t-causal N] [--quick] [--peer] [--torch-python P] [--budget-gib G] [--relaxed]
 *   npm run bench:attention -- --render     (rewrites attention.md from attention.json)
 *
 * Each (layer, T, implementation) runs in a fresh child process so peak RSS is honest and an OOM kill ends only
 * that run. Eager is attempted at every T until it fails; it is refused up front when its planned peak (inputs +
 * 3 full [Hq, T, S] float32 matrices at the backward peak) exceeds the stated budget. The engine's matmul GFLOP/s is
 * measured in the same session (bench/matmul.ts's benchMatmul, in its own child). With --peer, three PyTorch peers
 * run in the same session (bench/peers/torch_attention.py, with the Python given by --torch-python or
 * $LONGRUN_TORCH_PYTHON, default python3; PyTorch is not a dependency of the project): eager sink attention
 * forward + backward, FlexAttention with the sink through the log-sum-exp, and compiled FlexAttention without the
 * sink (PyTorch's fused CPU kernel, the speed anchor), T = 1024 … 8192 (--max-t), with PyTorch's refusals quoted.
 * Before the timings, our kernels and PyTorch's are compared on one small case (T = 256, both layers). A peer on
 * the reference BLAS (torch.__config__.show() says BLAS_INFO=generic) is refused: its matmul is 20× slow.
 * Writes bench/results/attention.{json,md} after every run (a cut-short sweep still leaves its results). The
 * full-causal layer costs O(T²): --max-t-causal caps its sweep separately (default: --max-t).
 */
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { countAllowedPairs, createBlockMask } from '../src/attention/block-mask.ts';
import { causalMask, slidingWindowMask } from '../src/attention/masks.ts';
import { flexAttention } from '../src/attention/wasm.ts';
import { eagerAttentionWasm, EagerBudgetError } from '../src/attention/eager-wasm.ts';
import { beginMemoryScope, engineMemory } from '../src/engine/memory.ts';
import { initRuntime, shutdownRuntime } from '../src/engine/runtime.ts';
import { Tensor } from '../src/engine/tensor.ts';
import { benchMatmul } from './matmul.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..');
const PEER_SCRIPT_REL = 'bench/peers/torch_attention.py';
const PEER_TS = [1024, 2048, 4096, 8192];
const CHECK_T = 256;
const HQ = 64, HKV = 8, D = 64, WINDOW = 128;
const GIB = 2 ** 30;

type Impl = 'flex' | 'eager';

/** Flex tile sizes: query rows × keys. */
interface Tiles { q: number; kv: number }

/**
 * Tiles per layer kind, from interleaved A/B timings of the kernels: full causal 128 × 128, sliding window
 * 64 × 128. Diagonal and band-edge tiles run in strips that skip the 8-key groups their rows cannot see, so large
 * tiles cost little masked work; between 32 × 32 and 128 × 128 the timings differ by only a few per cent.
 */
function flexTiles(window: number): Tiles {
  return window ? { q: 64, kv: 128 } : { q: 128, kv: 128 };
}

interface ChildJob { impl: Impl; t: number; window: number; tiles: Tiles; budgetBytes: number; reps: number; relaxed: boolean }

interface ChildResult {
  ok: boolean;
  impl: Impl;
  t: number;
  window: number;
  /** Tile sizes of the block mask (older results: `block`, one square size). */
  tiles?: Tiles;
  block?: number;
  reason?: string;
  fwdMs?: number;
  fwdBwdMs?: number;
  usefulPairs?: number;
  /** Peak engine bytes during forward + backward, inputs included. */
  peakEngineBytes?: number;
  /** q, k, v, dO (and sinks): live before the measured region. */
  inputBytes?: number;
  peakTags?: Record<string, number>;
  peakRssBytes?: number;
  threads?: number;
  relaxed?: boolean;
  plannedBytes?: number;
  /** 1-minute load average when the child started (the machine is shared; timings scale with it). */
  loadAvg1m?: number;
}

/** FLOP convention (same as the peer script): forward 4·d per allowed (q, k) pair, backward 2.5× forward. */
function usefulFlops(pairs: number): { fwd: number; fwdBwd: number } {
  const fwd = 4 * D * pairs;
  return { fwd, fwdBwd: 3.5 * fwd };
}

// ------------------------------------------------------------------------------------------------- child side

function runChild(job: ChildJob): ChildResult {
  const rt = initRuntime({ relaxed: job.relaxed ? true : 'auto' });
  const base = { impl: job.impl, t: job.t, window: job.window, tiles: job.tiles, threads: rt.threads, relaxed: rt.relaxed, loadAvg1m: loadavg()[0] };
  const mask = job.window > 0 ? slidingWindowMask(job.window) : causalMask();
  const blockMask = createBlockMask(mask, job.t, job.t, job.tiles);
  const usefulPairs = countAllowedPairs(blockMask) * HQ;
  const q = Tensor.randn([HQ, job.t, D], 1, { tag: 'bench.inputs' });
  const k = Tensor.randn([HKV, job.t, D], 2, { tag: 'bench.inputs' });
  const v = Tensor.randn([HKV, job.t, D], 3, { tag: 'bench.inputs' });
  const dO = Tensor.randn([HQ, job.t, D], 4, { tag: 'bench.inputs', std: 0.1 });
  const sinks = Float32Array.from({ length: HQ }, (_, h) => ((h % 7) - 3) * 0.25);
  const inputBytes = engineMemory.liveBytes;
  const plannedBytes = inputBytes + 3 * HQ * job.t * job.t * 4;
  if (job.impl === 'eager' && plannedBytes > job.budgetBytes) {
    return { ...base, ok: false, reason: `refused: planned peak ${(plannedBytes / GIB).toFixed(1)} GiB > budget ${(job.budgetBytes / GIB).toFixed(1)} GiB`, plannedBytes, usefulPairs };
  }
  const opts = { blockMask, sinks, gqa: true, checkFinite: false, budgetBytes: job.budgetBytes };
  // Warm-up (untimed): V8 first runs Wasm from its baseline compiler and tiers hot functions up to the optimising
  // compiler while they run, so a cold first call is much slower than the steady state. One pass at T ≤ 1024 with
  // the same tiles and implementation gets the kernels tiered up before the timed runs.
  {
    const tw = Math.min(job.t, 1024);
    const wq = Tensor.randn([HQ, tw, D], 5), wk = Tensor.randn([HKV, tw, D], 6), wv = Tensor.randn([HKV, tw, D], 7), wd = Tensor.randn([HQ, tw, D], 8);
    const wbm = createBlockMask(mask, tw, tw, job.tiles);
    for (let i = 0; i < 2; i++) {
      const wo = job.impl === 'flex' ? flexAttention(wq, wk, wv, { ...opts, blockMask: wbm }) : eagerAttentionWasm(wq, wk, wv, { ...opts, blockMask: wbm });
      const wg = wo.backward(wd);
      for (const x of [wg.dq, wg.dk, wg.dv]) x.dispose();
      wo.dispose();
    }
    for (const x of [wq, wk, wv, wd]) x.dispose();
  }
  let bestFwd = Infinity, bestTotal = Infinity, peak = 0;
  const peakTags: Record<string, number> = {};
  for (let rep = 0; rep < job.reps; rep++) {
    const scope = beginMemoryScope();
    const t0 = performance.now();
    const out = job.impl === 'flex' ? flexAttention(q, k, v, opts) : eagerAttentionWasm(q, k, v, opts);
    const t1 = performance.now();
    const g = out.backward(dO);
    const t2 = performance.now();
    const r = scope.end();
    for (const x of [g.dq, g.dk, g.dv]) x.dispose();
    out.dispose();
    bestFwd = Math.min(bestFwd, t1 - t0);
    bestTotal = Math.min(bestTotal, t2 - t0);
    peak = Math.max(peak, r.peakBytes);
    for (const [tag, tr] of Object.entries(r.tags)) if (tr.peakBytes > 0) peakTags[tag] = Math.max(peakTags[tag] ?? 0, tr.peakBytes);
  }
  return {
    ...base, ok: true, fwdMs: bestFwd, fwdBwdMs: bestTotal, usefulPairs, peakEngineBytes: peak, inputBytes, peakTags,
    peakRssBytes: process.resourceUsage().maxRSS * 1024, plannedBytes: job.impl === 'eager' ? plannedBytes : undefined,
  };
}

/**
 * The agreement case: our flex kernels on seeded inputs at T = CHECK_T, written with their outputs and gradients to
 * `file` (u32 header length, JSON header, float32 little-endian arrays) for the peer script's --check.
 */
function writeCheckCase(file: string, window: number, relaxed: boolean): void {
  initRuntime({ relaxed: relaxed ? true : 'auto' });
  const t = CHECK_T;
  const mask = window > 0 ? slidingWindowMask(window) : causalMask();
  const q = Tensor.randn([HQ, t, D], 11), k = Tensor.randn([HKV, t, D], 12), v = Tensor.randn([HKV, t, D], 13);
  const dO = Tensor.randn([HQ, t, D], 14, { std: 0.1 });
  const sinks = Float32Array.from({ length: HQ }, (_, h) => ((h % 7) - 3) * 0.25);
  const out = flexAttention(q, k, v, { blockMask: createBlockMask(mask, t, t, flexTiles(window)), sinks, gqa: true });
  const g = out.backward(dO);
  const arrays: [string, number[], Float32Array][] = [
    ['q', [HQ, t, D], q.toArray()], ['k', [HKV, t, D], k.toArray()], ['v', [HKV, t, D], v.toArray()], ['sinks', [HQ], sinks],
    ['dO', [HQ, t, D], dO.toArray()], ['out', [HQ, t, D], out.o.toArray()], ['dq', [HQ, t, D], g.dq.toArray()],
    ['dk', [HKV, t, D], g.dk.toArray()], ['dv', [HKV, t, D], g.dv.toArray()], ['dsinks', [HQ], g.dsinks!],
  ];
  const header = Buffer.from(JSON.stringify({ t, window, arrays: arrays.map(([n, shape]) => [n, shape]) }));
  const len = Buffer.alloc(4);
  len.writeUInt32LE(header.length);
  writeFileSync(file, Buffer.concat([len, header, ...arrays.map(([, , a]) => Buffer.from(a.buffer, a.byteOffset, a.byteLength))]));
}

async function childMain(arg: string): Promise<void> {
  if (arg === 'check-case') {
    const at = process.argv.indexOf('check-case');
    writeCheckCase(process.argv[at + 1]!, Number(process.argv[at + 2]), process.argv.includes('--relaxed'));
    console.log(JSON.stringify({ ok: true }));
    await shutdownRuntime();
    return;
  }
  if (arg === 'matmul') {
    const relaxed = process.argv.includes('--relaxed');
    const rt = initRuntime({ relaxed: relaxed ? true : 'auto' });
    const res = benchMatmul([{ M: 512, K: 512, N: 512 }, { M: 2048, K: 256, N: 1024 }], [rt.maxThreads]);
    console.log(JSON.stringify(res));
    await shutdownRuntime();
    return;
  }
  const job = JSON.parse(arg) as ChildJob;
  let res: ChildResult;
  try {
    res = runChild(job);
  } catch (err) {
    const e = err as Error;
    const reason = e instanceof EagerBudgetError ? `refused by budget: ${e.message}`
      : /allocation failed|out of memory|Invalid typed array length/i.test(e.message) ? `out of memory: ${e.message}` : `error: ${e.message}`;
    res = { ok: false, impl: job.impl, t: job.t, window: job.window, tiles: job.tiles, reason };
  }
  console.log(JSON.stringify(res));
  await shutdownRuntime();
}

// ------------------------------------------------------------------------------------------------ parent side

interface Args { maxT: number; maxTCausal: number; quick: boolean; peer: boolean; torchPython: string; budgetGiB: number; relaxed: boolean }

function parseArgs(argv: string[]): Args {
  const args: Args = { maxT: 32768, maxTCausal: Infinity, quick: false, peer: false, torchPython: process.env.LONGRUN_TORCH_PYTHON ?? 'python3', budgetGiB: 20, relaxed: false };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    if (a === '--max-t') args.maxT = Number(argv[++i]);
    else if (a === '--max-t-causal') args.maxTCausal = Number(argv[++i]);
    else if (a === '--quick') args.quick = true;
    else if (a === '--peer') args.peer = true;
    else if (a === '--torch-python') args.torchPython = argv[++i]!;
    else if (a === '--budget-gib') args.budgetGiB = Number(argv[++i]);
    else if (a === '--relaxed') args.relaxed = true;
    else throw new Error(`bench:attention: unknown option '${a}' (use --max-t N, --max-t-causal N, --quick, --peer, --torch-python P, --budget-gib G, --relaxed)`);
  }
  if (args.quick) args.maxT = Math.min(args.maxT, 2048);
  args.maxTCausal = Math.min(args.maxTCausal, args.maxT);
  for (const [name, v] of [['--max-t', args.maxT], ['--max-t-causal', args.maxTCausal]] as const) {
    if (!Number.isInteger(Math.log2(v)) || v < 1024) throw new Error(`${name} must be a power of two ≥ 1024`);
  }
  return args;
}

function spawnChild(arg: string, extra: string[] = []): { out: string; status: number | null; signal: string | null; stderr: string } {
  const r = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--child', arg, ...extra], {
    cwd: ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024,
  });
  return { out: r.stdout ?? '', status: r.status, signal: r.signal, stderr: r.stderr ?? '' };
}

function lastJsonLine(s: string): unknown {
  const lines = s.trim().split('\n').filter((l) => l.startsWith('{') || l.startsWith('['));
  return lines.length ? JSON.parse(lines[lines.length - 1]) : undefined;
}

function runJob(job: ChildJob): ChildResult {
  const r = spawnChild(JSON.stringify(job));
  const parsed = lastJsonLine(r.out) as ChildResult | undefined;
  if (parsed) return parsed;
  const why = r.signal === 'SIGKILL' ? 'killed by SIGKILL (the kernel OOM killer)' : r.signal ? `killed by ${r.signal}` : `exit ${r.status}`;
  const tail = r.stderr.trim().split('\n').slice(-2).join(' ').slice(0, 300);
  return { ok: false, impl: job.impl, t: job.t, window: job.window, tiles: job.tiles, reason: /heap out of memory|allocation failed/i.test(r.stderr) ? `out of memory (${why}): ${tail}` : `${why}: ${tail}` };
}

/** One line of bench/peers/torch_attention.py. */
interface PeerResult {
  peer?: string; impl: PeerImpl; compiled: boolean; fwdOnly: boolean; T: number; window: number;
  torch?: string; blas?: string; cpu_capability?: string;
  fwd_s?: number; fwdbwd_s?: number; fwd_error?: string; bwd_error?: string; peak_rss_gb?: number;
  /** Set by the bench: the run failed outside PyTorch (killed, no output) or was refused (generic BLAS). */
  error?: string;
}

type PeerImpl = 'eager' | 'flex-sink' | 'flex';

interface PeerSpec { impl: PeerImpl; compiled: boolean; fwdOnly: boolean; label: string }

/** The peer runs, in order: what trains (eager), the reference paper's method (flex + sink), the kernel anchor. */
const PEER_SPECS: PeerSpec[] = [
  { impl: 'eager', compiled: false, fwdOnly: false, label: 'torch eager (sink column), fwd+bwd' },
  { impl: 'flex-sink', compiled: false, fwdOnly: false, label: 'torch FlexAttention + sink via LSE, fwd+bwd' },
  { impl: 'flex-sink', compiled: false, fwdOnly: true, label: 'torch FlexAttention + sink via LSE, fwd' },
  { impl: 'flex-sink', compiled: true, fwdOnly: true, label: 'torch compiled FlexAttention + sink via LSE, fwd' },
  { impl: 'flex', compiled: true, fwdOnly: true, label: 'torch compiled FlexAttention, no sink, fwd (fused CPU kernel)' },
];

interface PeerInfo { python: string; torch: string; blas: string; cpuCapability: string; matmul?: { M: number; K: number; N: number; gflops: number }[] }

interface AgreementResult { window: number; T: number; result?: Record<string, unknown>; error?: string }

function runPeer(python: string, spec: PeerSpec, t: number, window: number, memGiB: number): PeerResult {
  // Forward-only runs are short (and noisier): best of 3 at every T, as our window-layer runs.
  const reps = t <= 2048 || spec.fwdOnly ? 3 : 1;
  // Eager at T ≥ 4096 takes tens of seconds a pass and needs no warm-up; compiled kernels need one (compilation).
  const warmup = spec.impl === 'eager' && t >= 4096 ? 0 : 1;
  const argv = [join(ROOT, PEER_SCRIPT_REL), '--impl', spec.impl, '--t', String(t), '--window', String(window), '--reps', String(reps),
    '--warmup', String(warmup), '--mem-gib', String(memGiB), ...(spec.compiled ? ['--compile'] : []), ...(spec.fwdOnly ? ['--fwd-only'] : [])];
  const r = spawnSync(python, argv, { encoding: 'utf8', maxBuffer: 1 << 22, cwd: ROOT });
  const parsed = lastJsonLine(r.stdout ?? '') as Omit<PeerResult, 'fwdOnly'> | undefined;
  const base = { impl: spec.impl, compiled: spec.compiled, fwdOnly: spec.fwdOnly, T: t, window };
  if (parsed) return { ...parsed, ...base };
  return { ...base, error: r.signal ? `killed by ${r.signal}${r.signal === 'SIGKILL' ? ' (the kernel OOM killer)' : ''}` : `exit ${r.status}: ${(r.stderr ?? '').trim().split('\n').slice(-1)[0]}` };
}

/** The peer Python's torch version, BLAS and CPU capability, or why it cannot run. */
function peerInfo(python: string): PeerInfo | string {
  if (!existsSync(join(ROOT, PEER_SCRIPT_REL))) return `${PEER_SCRIPT_REL} not found`;
  const code = 'import json, torch; from importlib import util; print(json.dumps({"torch": torch.__version__, "show": torch.__config__.show(), "cap": torch.backends.cpu.get_cpu_capability()}))';
  const r = spawnSync(python, ['-c', code], { encoding: 'utf8', maxBuffer: 1 << 22 });
  if (r.status !== 0) return `${python} cannot import torch (${(r.stderr ?? '').trim().split('\n').slice(-1)[0]}); pass --torch-python with a Python that has PyTorch`;
  const j = lastJsonLine(r.stdout) as { torch: string; show: string; cap: string };
  const blas = /BLAS_INFO=([^,\s]+)/.exec(j.show)?.[1] ?? 'unknown';
  const mm = spawnSync(python, [join(ROOT, PEER_SCRIPT_REL), '--matmul'], { encoding: 'utf8', maxBuffer: 1 << 22 });
  const rates = (lastJsonLine(mm.stdout ?? '') as { matmul?: PeerInfo['matmul'] } | undefined)?.matmul;
  return { python, torch: j.torch, blas, cpuCapability: j.cap, ...(rates ? { matmul: rates } : {}) };
}

/** Our kernels against PyTorch's on one small case per layer (out, dq, dk, dv, dsinks: max |Δ|). */
function runAgreement(python: string, relaxed: boolean): AgreementResult[] {
  const dir = mkdtempSync(join(tmpdir(), 'longrun-attn-check-'));
  try {
    return [0, WINDOW].map((window) => {
      const file = join(dir, `case-${window}.bin`);
      const c = spawnChild('check-case', [file, String(window), ...(relaxed ? ['--relaxed'] : [])]);
      if (c.status !== 0) return { window, T: CHECK_T, error: `our side failed: ${c.stderr.trim().split('\n').slice(-1)[0]}` };
      const r = spawnSync(python, [join(ROOT, PEER_SCRIPT_REL), '--check', file], { encoding: 'utf8', maxBuffer: 1 << 22 });
      const parsed = lastJsonLine(r.stdout ?? '') as Record<string, unknown> | undefined;
      return parsed ? { window, T: CHECK_T, result: parsed } : { window, T: CHECK_T, error: `peer check failed: ${(r.stderr ?? '').trim().split('\n').slice(-1)[0]}` };
    });
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const gib = (b?: number): string => (b === undefined ? '–' : (b / GIB).toFixed(b < GIB ? 3 : 2));
const sec = (ms?: number): string => (ms === undefined ? '–' : (ms / 1000).toFixed(ms < 10000 ? 3 : 1));

function gflops(r: ChildResult, which: 'fwd' | 'fwdBwd'): number | undefined {
  if (!r.ok || r.usefulPairs === undefined) return undefined;
  const f = usefulFlops(r.usefulPairs);
  const ms = which === 'fwd' ? r.fwdMs! : r.fwdBwdMs!;
  return (which === 'fwd' ? f.fwd : f.fwdBwd) / (ms * 1e6);
}

function layerName(window: number): string {
  return window ? `window ${window}` : 'full causal';
}

function tileName(r: ChildResult): string | undefined {
  return r.tiles ? `${r.tiles.q} × ${r.tiles.kv}` : r.block ? `${r.block} × ${r.block}` : undefined;
}

/** The flex tile sizes each layer kind ran with, as recorded in the results. */
function tilesText(results: ChildResult[]): string {
  return [0, WINDOW].map((window) => {
    const used = [...new Set(results.filter((r) => r.impl === 'flex' && r.window === window).map(tileName).filter((x) => x !== undefined))];
    return `${layerName(window)}: ${used.length ? used.join(', ') : tileName({ ok: true, impl: 'flex', t: 0, window, tiles: flexTiles(window) })}`;
  }).join(' / ');
}

const fmtS = (x?: number): string => (x === undefined ? '–' : x < 10 ? x.toFixed(3) : x.toFixed(1));

/** What a peer run gave: its time, or its error (PyTorch's own words, shortened for the table). */
function peerCell(p: PeerResult | undefined, which: 'fwd' | 'fwdbwd'): string {
  if (!p) return 'not attempted (failed at a smaller T)';
  const err = p.error ?? p.fwd_error ?? (which === 'fwdbwd' ? p.bwd_error : undefined);
  if (err) {
    const bytes = /tried to allocate (\d+) bytes/.exec(err)?.[1];
    if (bytes) return `**out of memory**: one ${(Number(bytes) / GIB).toFixed(1)} GiB allocation refused (below)`;
    return /memory|OOM|killed/i.test(err) ? `**failed**: ${err.slice(0, 100)}` : 'refused (below)';
  }
  const v = which === 'fwd' ? p.fwd_s : p.fwdbwd_s;
  return `${fmtS(v)}${p.peak_rss_gb !== undefined ? ` (RSS ${p.peak_rss_gb.toFixed(2)} GB)` : ''}`;
}

function peerMarkdown(results: ChildResult[], peers: PeerResult[], peerNote: string | undefined, agreement: AgreementResult[]): string[] {
  const L: string[] = ['', '## Against PyTorch (same session)', ''];
  if (peers.length === 0) {
    L.push(`Peers: ${peerNote ?? 'not run (pass --peer).'}`);
    return L;
  }
  L.push(`Peers: ${peerNote ?? ''}`, '');
  const find = (spec: PeerSpec, t: number, window: number) => peers.find((p) => p.impl === spec.impl && p.compiled === spec.compiled && p.fwdOnly === spec.fwdOnly && p.T === t && p.window === window);
  const [eager, flexSinkBwd, flexSinkFwd, flexSinkCompiled, anchor] = PEER_SPECS;
  L.push('| layer | T | ours fwd s | ours fwd+bwd s | torch eager fwd s | torch eager fwd+bwd s | torch flex + sink fwd s (uncompiled) | torch compiled flex, no sink, fwd s | ours fwd vs compiled kernel | ours fwd+bwd vs torch eager |');
  L.push('|---|---|---|---|---|---|---|---|---|---|');
  for (const window of [0, WINDOW]) {
    for (const t of [...new Set(peers.filter((p) => p.window === window).map((p) => p.T))].sort((a, b) => a - b)) {
      const ours = results.find((r) => r.impl === 'flex' && r.ok && r.t === t && r.window === window);
      const e = find(eager!, t, window), a = find(anchor!, t, window);
      const oursFwd = ours ? ours.fwdMs! / 1000 : undefined, oursTot = ours ? ours.fwdBwdMs! / 1000 : undefined;
      const ratio = (peer?: number, mine?: number) => (peer !== undefined && mine !== undefined ? `${(peer / mine).toFixed(2)}×` : '–');
      L.push(`| ${layerName(window)} | ${t} | ${fmtS(oursFwd)} | ${fmtS(oursTot)} | ${peerCell(e, 'fwd')} | ${peerCell(e, 'fwdbwd')} | ${peerCell(find(flexSinkFwd!, t, window), 'fwd')} | ` +
        `${peerCell(a, 'fwd')} | ${ratio(a?.fwd_error ? undefined : a?.fwd_s, oursFwd)} | ${ratio(e?.bwd_error || e?.fwd_error ? undefined : e?.fwdbwd_s, oursTot)} |`);
    }
  }
  L.push('', 'Ratios are the peer\'s seconds over ours (above 1: ours is faster). Refused on this CPU, in PyTorch\'s words:', '');
  const refusals = new Map<string, string>();
  for (const spec of [flexSinkBwd!, flexSinkCompiled!]) {
    for (const p of peers.filter((x) => x.impl === spec.impl && x.compiled === spec.compiled && x.fwdOnly === spec.fwdOnly)) {
      const err = p.fwd_error ?? p.bwd_error;
      if (err && !refusals.has(spec.label)) refusals.set(spec.label, err);
    }
  }
  for (const [label, err] of refusals) L.push(`- ${label}: "${err}"`);
  if (refusals.size === 0) L.push('- none');
  const oom = peers.map((p) => p.fwd_error ?? p.bwd_error ?? '').find((e) => /tried to allocate/.test(e));
  if (oom) L.push('', `Out of memory under the data cap, in PyTorch's words: "${oom}"`);
  if (agreement.length) {
    L.push('', `Agreement before timing (T = ${CHECK_T}, seeded inputs, our kernels' outputs and gradients against PyTorch's; max |Δ|):`, '');
    L.push('| layer | vs torch eager, float64: out | dq | dk | dv | dsinks | vs torch flex + sink, float32: out |');
    L.push('|---|---|---|---|---|---|---|');
    for (const g of agreement) {
      if (g.error) { L.push(`| ${layerName(g.window)} | ${g.error} | | | | | |`); continue; }
      const e = g.result!.eager_float64 as Record<string, number>;
      const f = g.result!.flex_sink_float32 as Record<string, number | string>;
      const x = (v: unknown) => (typeof v === 'number' ? v.toExponential(1) : '–');
      L.push(`| ${layerName(g.window)} | ${x(e.out)} | ${x(e.dq)} | ${x(e.dk)} | ${x(e.dv)} | ${x(e.dsinks)} | ${typeof f.error === 'string' ? f.error : x(f.out)} |`);
    }
  }
  return L;
}

function markdown(cmd: string, args: Args, results: ChildResult[], matmul: { gflops: number; shape: string }[], peers: PeerResult[], peerNote: string | undefined, started: string, finished: boolean, agreement: AgreementResult[] = []): string {
  const L: string[] = [];
  const best = Math.max(...matmul.map((m) => m.gflops));
  L.push('# Sink-aware flex attention vs eager attention (gpt-oss-20b attention shapes)', '');
  if (!finished) L.push('**Partial: the sweep was still running (or was cut short) when this was written.**', '');
  L.push(`Made by \`${cmd}\` · started ${started} · ${cpus()[0]?.model ?? 'cpu'} · ${cpus().length} cores · ${(totalmem() / GIB).toFixed(0)} GiB · Node ${process.versions.node}.`);
  L.push(`Shapes: Hq = ${HQ}, Hkv = ${HKV}, d = ${D}, float32, learned sinks, batch 1; one forward + backward per run` +
    ` after two untimed warm-up passes at T ≤ 1024 (Wasm tier-up), best of ${args.quick ? 'up to 3' : '3 (T ≤ 2048, and every flex run on the window layer) or 1'} runs. Each (layer, T, implementation) is a fresh child process.`);
  L.push(`Flex: Wasm SIMD blockwise kernels, tiles (queries × keys) ${tilesText(results)}; only listed tiles computed. Eager: every [Hq, T, S] ` +
    `matrix materialised (scores, probs, dP, dS) in JS memory, products by Wasm kernels per head. Eager memory budget: ${args.budgetGiB} GiB ` +
    `(refused when inputs + 3 full fp32 [Hq, T, T] matrices exceed it).`);
  L.push(`Useful FLOPs: forward 4·d per allowed (q, k) pair, backward 2.5× forward (fwd+bwd = 14·d per pair; the peer script's convention).`);
  L.push(`Engine matmul (same session, ${matmul[0] ? `${matmul.length} shapes` : 'not measured'}): ${matmul.map((m) => `${m.shape} ${m.gflops.toFixed(1)} GFLOP/s`).join(', ')}.`, '');
  const loads = results.map((r) => r.loadAvg1m).filter((x): x is number => x !== undefined);
  if (loads.length) {
    L.push(`Machine load (1-min load average on ${cpus().length} cores when each run started): ${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}; ` +
      'timings on a loaded machine are inflated, compare rows within one run.', '');
  }
  L.push('## Memory (forward + backward)', '');
  L.push('Working set = peak engine bytes − inputs (q, k, v, dO). RSS = peak resident set of the child process.', '');
  L.push('| layer | T | flex peak engine GiB | flex working set GiB | flex RSS GiB | eager peak engine GiB | eager working set GiB | eager RSS GiB | flex / eager working set |');
  L.push('|---|---|---|---|---|---|---|---|---|');
  for (const window of [0, WINDOW]) {
    for (const t of [...new Set(results.filter((r) => r.window === window).map((r) => r.t))].sort((a, b) => a - b)) {
      const f = results.find((r) => r.window === window && r.t === t && r.impl === 'flex');
      const e = results.find((r) => r.window === window && r.t === t && r.impl === 'eager');
      const fw = f?.ok ? f.peakEngineBytes! - f.inputBytes! : undefined;
      const ew = e?.ok ? e.peakEngineBytes! - e.inputBytes! : undefined;
      const fail = (r?: ChildResult): string => (r ? `**failed**: ${r.reason}` : 'not attempted (failed at a smaller T)');
      L.push(`| ${layerName(window)} | ${t} | ${f?.ok ? gib(f.peakEngineBytes) : fail(f)} | ${gib(fw)} | ${f?.ok ? gib(f.peakRssBytes) : '–'} | ` +
        `${e?.ok ? gib(e.peakEngineBytes) : fail(e)} | ${gib(ew)} | ${e?.ok ? gib(e.peakRssBytes) : '–'} | ${fw !== undefined && ew !== undefined ? `1/${(ew / fw).toFixed(0)}` : '–'} |`);
    }
  }
  L.push('', '## Speed', '');
  L.push(`| layer | T | impl | fwd s | fwd+bwd s | fwd GFLOP/s | fwd+bwd GFLOP/s | fwd+bwd / best matmul (${best.toFixed(1)}) | flex speed-up (fwd+bwd) |`);
  L.push('|---|---|---|---|---|---|---|---|---|');
  for (const window of [0, WINDOW]) {
    for (const r of results.filter((x) => x.window === window && x.ok).sort((a, b) => a.t - b.t || a.impl.localeCompare(b.impl))) {
      const other = results.find((x) => x.window === window && x.t === r.t && x.impl === 'eager' && x.ok);
      const speedup = r.impl === 'flex' && other ? `${(other.fwdBwdMs! / r.fwdBwdMs!).toFixed(1)}×` : '';
      const impl = r.impl === 'flex' && tileName(r) ? `flex, tiles ${tileName(r)}` : r.impl;
      L.push(`| ${layerName(window)} | ${r.t} | ${impl} | ${sec(r.fwdMs)} | ${sec(r.fwdBwdMs)} | ${gflops(r, 'fwd')!.toFixed(1)} | ${gflops(r, 'fwdBwd')!.toFixed(1)} | ${(100 * gflops(r, 'fwdBwd')! / best).toFixed(0)}% | ${speedup} |`);
    }
  }
  L.push(...peerMarkdown(results, peers, peerNote, agreement));
  return L.join('\n') + '\n';
}

interface SavedRun {
  command: string; started: string; finished: string | null; matmul: { M: number; K: number; N: number; gflops: number }[];
  results: ChildResult[]; peers: PeerResult[]; peerNote?: string; agreement?: AgreementResult[];
}

/** Re-renders attention.md from attention.json (e.g. after a change to the table layout). */
function render(): void {
  const file = join(HERE, 'results', 'attention.json');
  const saved = JSON.parse(readFileSync(file, 'utf8')) as SavedRun;
  const argv = saved.command.split(' -- ')[1]?.split(' ') ?? [];
  const matmul = saved.matmul.map((m) => ({ shape: `${m.M}×${m.K}·${m.K}×${m.N}`, gflops: m.gflops }));
  writeFileSync(join(HERE, 'results', 'attention.md'), markdown(saved.command, parseArgs(argv), saved.results, matmul, saved.peers.filter((p) => p.impl !== undefined), saved.peerNote, saved.started, saved.finished !== null, saved.agreement ?? []));
  console.log('rewrote bench/results/attention.md from attention.json');
}

async function parentMain(): Promise<void> {
  if (process.argv.includes('--render')) { render(); return; }
  const args = parseArgs(process.argv.slice(2));
  const cmd = ['npm run bench:attention', ...(process.argv.length > 2 ? ['--', ...process.argv.slice(2)] : [])].join(' ');
  const started = new Date().toISOString();
  const budgetBytes = args.budgetGiB * GIB;
  const relaxedFlag = args.relaxed ? ['--relaxed'] : [];

  console.log('engine matmul …');
  const mm = spawnChild('matmul', relaxedFlag);
  const mmRes = (lastJsonLine(mm.out) as { M: number; K: number; N: number; gflops: number }[] | undefined) ?? [];
  const matmul = mmRes.map((m) => ({ shape: `${m.M}×${m.K}·${m.K}×${m.N}`, gflops: m.gflops }));

  const results: ChildResult[] = [];
  const peers: PeerResult[] = [];
  let peerNote: string | undefined = args.peer ? 'pending' : 'not run (pass --peer).';
  let agreement: AgreementResult[] = [];

  const outDir = join(HERE, 'results');
  mkdirSync(outDir, { recursive: true });
  const write = (finished: boolean): void => {
    const json = {
      command: cmd, started, finished: finished ? new Date().toISOString() : null, shapes: { hq: HQ, hkv: HKV, d: D, window: WINDOW }, budgetBytes,
      flopConvention: 'fwd 4·d per allowed pair; fwd+bwd 3.5× fwd', matmul: mmRes, results, peers, peerNote, agreement,
    };
    writeFileSync(join(outDir, 'attention.json'), JSON.stringify(json, null, 2) + '\n');
    writeFileSync(join(outDir, 'attention.md'), markdown(cmd, args, results, matmul, peers, peerNote, started, finished, agreement));
  };
  // Cheap runs first (window layer, full causal up to 4096, the peer), then the long O(T²) full-causal runs, so a
  // sweep cut short still holds every comparison.
  // The peers first get their versions and the agreement check; then every (layer, T) runs ours and the peers back
  // to back, so each row's ratios come from runs a minute apart (this machine's speed drifts over a sweep).
  let peerOk: { memGiB: number } | null = null;
  if (args.peer) {
    const info = peerInfo(args.torchPython);
    if (typeof info === 'string') peerNote = `skipped: ${info}.`;
    else if (info.blas === 'generic') peerNote = `refused: PyTorch ${info.torch} links the reference BLAS (BLAS_INFO=generic), whose matmul runs at a few GFLOP/s; install a real BLAS (e.g. Debian's libopenblas0-pthread) or PyTorch's own wheel.`;
    else {
      const memGiB = Math.min(args.budgetGiB, Math.floor(totalmem() / GIB) - 4);
      const mmText = info.matmul ? `; its matmul in this session ${info.matmul.map((m) => `${m.M}×${m.K}·${m.K}×${m.N} ${m.gflops} GFLOP/s`).join(', ')}` : '';
      peerNote = `PyTorch ${info.torch} (BLAS_INFO=${info.blas}, CPU capability ${info.cpuCapability}${mmText}), 2 threads, ${PEER_SCRIPT_REL}, each run a fresh process capped at ${memGiB} GiB of data; ` +
        `best of 3 timed passes after a warm-up pass (compilation); forward + backward beyond T = 2048: 1 pass; each (layer, T) runs right after ours.`;
      console.log(`peers: PyTorch ${info.torch}, BLAS ${info.blas}; agreement check …`);
      agreement = runAgreement(args.torchPython, args.relaxed);
      console.log(JSON.stringify(agreement));
      peerOk = { memGiB };
    }
  }
  const eagerFailed = new Set<number>();
  /** Peer runs that failed at a smaller T of a layer (a refusal is the same at every T; an allocation only grows). */
  const peerFailed = new Set<string>();
  const runLayer = (window: number, from: number, to: number): void => {
    for (let t = from; t <= to; t *= 2) {
      for (const impl of ['flex', 'eager'] as const) {
        if (impl === 'eager' && eagerFailed.has(window)) continue;
        const job: ChildJob = { impl, t, window, tiles: flexTiles(window), budgetBytes, reps: t <= 2048 || (impl === 'flex' && window > 0) ? 3 : 1, relaxed: args.relaxed };
        process.stdout.write(`${layerName(window)} T=${t} ${impl} … `);
        const r = runJob(job);
        results.push(r);
        console.log(r.ok ? `fwd+bwd ${sec(r.fwdBwdMs)} s, peak ${gib(r.peakEngineBytes)} GiB, RSS ${gib(r.peakRssBytes)} GiB` : `failed: ${r.reason}`);
        if (impl === 'eager' && !r.ok) eagerFailed.add(window);
        write(false);
      }
      if (!peerOk || !PEER_TS.includes(t) || t > args.maxT) continue;
      for (const spec of PEER_SPECS) {
        const key = `${window}|${spec.label}`;
        if (peerFailed.has(key)) continue;
        process.stdout.write(`peer ${spec.label} ${layerName(window)} T=${t} … `);
        const p = runPeer(args.torchPython, spec, t, window, peerOk.memGiB);
        peers.push(p);
        const err = p.error ?? p.fwd_error ?? p.bwd_error;
        console.log(err ?? `fwd ${p.fwd_s} s${p.fwdbwd_s !== undefined ? `, fwd+bwd ${p.fwdbwd_s} s` : ''}`);
        if (err) peerFailed.add(key);
        write(false);
      }
    }
  };
  runLayer(WINDOW, 1024, args.maxT);
  runLayer(0, 1024, Math.min(4096, args.maxTCausal));
  runLayer(0, 8192, args.maxTCausal);
  write(true);
  console.log('wrote bench/results/attention.{json,md}');
}

const childIdx = process.argv.indexOf('--child');
if (childIdx >= 0) await childMain(process.argv[childIdx + 1]);
else await parentMain();
