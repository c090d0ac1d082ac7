/**
 * Shared harness of the attention-kernel ablations (bench/ablate-sinks.ts, bench/ablate-window.ts): gpt-oss-20b
 * attention shapes (64 query heads, 8 KV heads, head dim 64, float32, batch 1) on the sink-aware flex kernel
 * (src/attention/wasm.ts), forward and forward + backward.
 *
 * Each (T, set of variants) runs in a fresh child process: the variants (with / without sinks, or several windows)
 * share the same inputs and run interleaved, rep after rep with the order rotated, so that on a shared, loaded
 * machine each variant sees the same load and the per-rep ratios between them are what is reported. Memory is the
 * engine's accounting (peak bytes of every attention allocation during the region, inputs excluded), which does not
 * depend on load.
 */
import { spawnSync } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { createBlockMask } from '../src/attention/block-mask.ts';
import { causalMask, slidingWindowMask } from '../src/attention/masks.ts';
import { flexAttention } from '../src/attention/wasm.ts';
import { beginMemoryScope } from '../src/engine/memory.ts';
import { initRuntime, shutdownRuntime } from '../src/engine/runtime.ts';
import { Tensor } from '../src/engine/tensor.ts';

export const HQ = 64, HKV = 8, D = 64;
export const GIB = 2 ** 30, MIB = 2 ** 20;

/** One kernel configuration of a child: a mask (window 0 = full causal) with or without sink logits. */
export interface Variant { name: string; window: number; sinks: boolean }

export interface KernelJob { t: number; variants: Variant[]; reps: number; backward: boolean; checkHeads: number }

export interface VariantResult {
  name: string;
  window: number;
  sinks: boolean;
  /** Per rep, in rep order (each rep runs every variant once, order rotated). */
  fwdMs: number[];
  fwdBwdMs: number[];
  /** Peak engine bytes of the forward alone (its outputs and scratch), inputs excluded. */
  fwdPeakBytes: number;
  /** Peak engine bytes of forward + backward, inputs excluded. */
  fwdBwdPeakBytes: number;
  /** Allowed (query, key) pairs of the mask, all heads. */
  pairs: number;
}

/** Whether the sink-free output is what the sink changes it into, on the first `checkHeads` heads. */
export interface SinkCheck {
  /** max |O_sinks − O_none| (the sinks change the output). */
  maxAbsDiff: number;
  /** max |O_sinks − O_none · (1 − e^(σ − L_sinks))| / max |O_sinks|: the sink only rescales each row (0 up to rounding). */
  relationError: number;
  /** Mean over rows of e^(σ − L): the share of attention the sink takes. */
  meanSinkShare: number;
  /** dsinks is null without sinks and finite with them. */
  dsinksNullWithout: boolean;
  dsinksFiniteWith: boolean;
}

export interface KernelResult {
  ok: boolean;
  t: number;
  reason?: string;
  variants?: VariantResult[];
  sinkCheck?: SinkCheck;
  loadAvgStart?: number;
  loadAvgEnd?: number;
  threads?: number;
  peakRssBytes?: number;
}

/** Tiles as bench/attention.ts (full causal 128 × 128, window layers 64 × 128). */
export function tilesFor(window: number): { q: number; kv: number } {
  return window ? { q: 64, kv: 128 } : { q: 128, kv: 128 };
}

/** The sink logits of every run (as bench/attention.ts): −0.75 … 0.75 by head. */
export function benchSinks(): Float32Array {
  return Float32Array.from({ length: HQ }, (_, h) => ((h % 7) - 3) * 0.25);
}

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length % 2 ? s[(s.length - 1) >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

export { median };

function runKernelJob(job: KernelJob): KernelResult {
  const rt = initRuntime({ relaxed: 'auto' });
  const loadAvgStart = loadavg()[0];
  const q = Tensor.randn([HQ, job.t, D], 1, { tag: 'bench.inputs' });
  const k = Tensor.randn([HKV, job.t, D], 2, { tag: 'bench.inputs' });
  const v = Tensor.randn([HKV, job.t, D], 3, { tag: 'bench.inputs' });
  const dO = Tensor.randn([HQ, job.t, D], 4, { tag: 'bench.inputs', std: 0.1 });
  const sinks = benchSinks();
  const masks = job.variants.map((x) => createBlockMask(x.window ? slidingWindowMask(x.window) : causalMask(), job.t, job.t, tilesFor(x.window)));
  const optsOf = (i: number) => ({ blockMask: masks[i], sinks: job.variants[i].sinks ? sinks : null, gqa: true, checkFinite: false });
  // Warm-up (untimed): V8 tiers the Wasm kernels up while they run; two passes per variant at T ≤ 1024.
  {
    const tw = Math.min(job.t, 1024);
    const wq = Tensor.randn([HQ, tw, D], 5), wk = Tensor.randn([HKV, tw, D], 6), wv = Tensor.randn([HKV, tw, D], 7), wd = Tensor.randn([HQ, tw, D], 8);
    for (const x of job.variants) {
      const bm = createBlockMask(x.window ? slidingWindowMask(x.window) : causalMask(), tw, tw, tilesFor(x.window));
      for (let i = 0; i < 2; i++) {
        const o = flexAttention(wq, wk, wv, { blockMask: bm, sinks: x.sinks ? sinks : null, gqa: true, checkFinite: false });
        if (job.backward) {
          const g = o.backward(wd);
          for (const y of [g.dq, g.dk, g.dv]) y.dispose();
        }
        o.dispose();
      }
    }
    for (const x of [wq, wk, wv, wd]) x.dispose();
  }
  const results: VariantResult[] = job.variants.map((x) => {
    let pairs = 0;
    // allowed pairs of a band mask: query row r sees keys max(0, r − W + 1) … r
    for (let r = 0; r < job.t; r++) pairs += x.window ? Math.min(r + 1, x.window) : r + 1;
    return { name: x.name, window: x.window, sinks: x.sinks, fwdMs: [], fwdBwdMs: [], fwdPeakBytes: 0, fwdBwdPeakBytes: 0, pairs: pairs * HQ };
  });
  const head = (t: Tensor, n: number) => t.data().slice(0, n);
  const outs: { o: Float32Array; lse: Float32Array; dsinks: Float32Array | null }[] = [];
  for (let rep = 0; rep < job.reps; rep++) {
    for (let j = 0; j < job.variants.length; j++) {
      const i = (j + rep) % job.variants.length;
      const r = results[i];
      const scope = beginMemoryScope();
      const t0 = performance.now();
      const out = flexAttention(q, k, v, optsOf(i));
      const t1 = performance.now();
      const fwdPeak = scope.report().peakDeltaBytes;
      let dsinks: Float32Array | null = null;
      let t2 = t1;
      if (job.backward) {
        const g = out.backward(dO);
        t2 = performance.now();
        dsinks = g.dsinks;
        for (const x of [g.dq, g.dk, g.dv]) x.dispose();
      }
      const all = scope.end();
      r.fwdMs.push(t1 - t0);
      if (job.backward) r.fwdBwdMs.push(t2 - t0);
      r.fwdPeakBytes = Math.max(r.fwdPeakBytes, fwdPeak);
      r.fwdBwdPeakBytes = Math.max(r.fwdBwdPeakBytes, all.peakDeltaBytes);
      if (rep === 0) outs[i] = { o: head(out.o, job.checkHeads * job.t * D), lse: head(out.lse, job.checkHeads * job.t), dsinks };
      out.dispose();
    }
  }
  let sinkCheck: SinkCheck | undefined;
  const iS = job.variants.findIndex((x) => x.sinks), iN = job.variants.findIndex((x) => !x.sinks && x.window === job.variants[iS]?.window);
  if (iS >= 0 && iN >= 0 && outs[iS] && outs[iN]) {
    const a = outs[iS], b = outs[iN];
    let maxAbsDiff = 0, relErr = 0, maxO = 0, share = 0;
    for (let h = 0; h < job.checkHeads; h++) {
      for (let row = 0; row < job.t; row++) {
        const p = Math.exp(sinks[h] - a.lse[h * job.t + row]);
        share += p;
        for (let e = 0; e < D; e++) {
          const idx = (h * job.t + row) * D + e;
          maxAbsDiff = Math.max(maxAbsDiff, Math.abs(a.o[idx] - b.o[idx]));
          relErr = Math.max(relErr, Math.abs(a.o[idx] - b.o[idx] * (1 - p)));
          maxO = Math.max(maxO, Math.abs(a.o[idx]));
        }
      }
    }
    sinkCheck = {
      maxAbsDiff, relationError: relErr / maxO, meanSinkShare: share / (job.checkHeads * job.t),
      dsinksNullWithout: job.backward ? b.dsinks === null : true,
      dsinksFiniteWith: job.backward ? a.dsinks !== null && a.dsinks.every(Number.isFinite) : true,
    };
  }
  for (const x of [q, k, v, dO]) x.dispose();
  return { ok: true, t: job.t, variants: results, sinkCheck, loadAvgStart, loadAvgEnd: loadavg()[0], threads: rt.threads, peakRssBytes: process.resourceUsage().maxRSS * 1024 };
}

/** Child entry: `node --import tsx <script> --kernel-child '<job json>'` prints one JSON line. Returns true when it ran. */
export async function maybeKernelChild(): Promise<boolean> {
  const at = process.argv.indexOf('--kernel-child');
  if (at < 0) return false;
  const job = JSON.parse(process.argv[at + 1]!) as KernelJob;
  let res: KernelResult;
  try {
    res = runKernelJob(job);
  } catch (err) {
    res = { ok: false, t: job.t, reason: `error: ${(err as Error).message}` };
  }
  console.log(JSON.stringify(res));
  await shutdownRuntime();
  return true;
}

/** Runs a job in a fresh child process of `script` (which calls maybeKernelChild first). */
export function runKernelChild(script: string, job: KernelJob, cwd: string): KernelResult {
  const r = spawnSync(process.execPath, ['--import', 'tsx', fileURLToPath(script), '--kernel-child', JSON.stringify(job)], { cwd, encoding: 'utf8', maxBuffer: 1 << 24 });
  const line = (r.stdout ?? '').trim().split('\n').filter((l) => l.startsWith('{')).pop();
  if (line) return JSON.parse(line) as KernelResult;
  const why = r.signal === 'SIGKILL' ? 'killed by SIGKILL (out of memory?)' : r.signal ? `killed by ${r.signal}` : `exit ${r.status}`;
  return { ok: false, t: job.t, reason: `${why}: ${(r.stderr ?? '').trim().split('\n').slice(-2).join(' ').slice(0, 300)}` };
}

/** Parses `--name value` options: numbers, or flags when `flags` lists them. */
export function parseOptions(argv: string[], spec: Record<string, 'number' | 'flag' | 'string'>, script: string): Record<string, number | boolean | string> {
  const out: Record<string, number | boolean | string> = {};
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!;
    const key = a.replace(/^--/, '');
    const kind = spec[key];
    if (!a.startsWith('--') || !kind) throw new Error(`${script}: unknown option '${a}' (use ${Object.keys(spec).map((k) => `--${k}${spec[k] === 'flag' ? '' : ' V'}`).join(', ')})`);
    if (kind === 'flag') out[key] = true;
    else {
      const v = argv[++i];
      if (v === undefined) throw new Error(`${script}: ${a} needs a value`);
      if (kind === 'number') {
        const n = Number(v);
        if (!Number.isFinite(n)) throw new Error(`${script}: ${a} must be a number, got ${JSON.stringify(v)}`);
        out[key] = n;
      } else out[key] = v;
    }
  }
  return out;
}

/** Powers of two from 1024 to max (max must be one). */
export function sweep(max: number, name: string): number[] {
  if (!Number.isInteger(Math.log2(max)) || max < 1024) throw new Error(`${name} must be a power of two ≥ 1024, got ${max}`);
  const ts: number[] = [];
  for (let t = 1024; t <= max; t *= 2) ts.push(t);
  return ts;
}

export const fmtMs = (ms: number): string => (ms >= 10_000 ? (ms / 1000).toFixed(1) : (ms / 1000).toFixed(3));
export const fmtMiB = (b: number): string => (b / MIB).toFixed(1);
