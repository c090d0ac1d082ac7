/**
 * Matmul and softmax throughput of the engine's Wasm backend.
 *
 * `benchMatmul(shapes, threadCounts)` is importable (the attention benchmark calls it in the same process): for
 * each shape and thread count it runs 2 warm-ups, then 5 timed runs, and reports the median as GFLOP/s = 2MNK/t.
 * Run directly (`npm run bench:matmul`) it measures 512³ and 2048×256×1024 (M×K×N) at 1 and 2 threads and a
 * 2048×2048 softmax, first with the runtime's default build and then with relaxed SIMD switched on, and writes
 * bench/results/matmul.{json,md}.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { dirname, join } from 'node:path';
import { getBackend, getRuntime, initRuntime, shutdownRuntime, Tensor } from '../src/engine/index.ts';

export interface MatmulShape {
  M: number;
  K: number;
  N: number;
  transA?: boolean;
  transB?: boolean;
}

export interface MatmulResult extends MatmulShape {
  threads: number;
  relaxed: boolean;
  medianMs: number;
  gflops: number;
  /** All five timed runs, ms. */
  runsMs: number[];
}

export interface SoftmaxResult {
  rows: number;
  cols: number;
  threads: number;
  relaxed: boolean;
  medianMs: number;
  runsMs: number[];
}

const WARMUPS = 2;
const RUNS = 5;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function timeRuns(fn: () => void): number[] {
  for (let i = 0; i < WARMUPS; i++) fn();
  const runs: number[] = [];
  for (let i = 0; i < RUNS; i++) {
    const t0 = performance.now();
    fn();
    runs.push(performance.now() - t0);
  }
  return runs;
}

/** GFLOP/s of C = op(A)·op(B) on the current runtime, per shape and thread count (threads ≤ the pool size). */
export function benchMatmul(shapes: readonly MatmulShape[], threadCounts: readonly number[] = [1, 2]): MatmulResult[] {
  const rt = getRuntime();
  const be = getBackend('wasm');
  const results: MatmulResult[] = [];
  const saved = rt.threads;
  try {
    for (const s of shapes) {
      const a = Tensor.uniform(s.transA ? [s.K, s.M] : [s.M, s.K], 1, -1, 1, { tag: 'bench' });
      const b = Tensor.uniform(s.transB ? [s.N, s.K] : [s.K, s.N], 2, -1, 1, { tag: 'bench' });
      const c = Tensor.empty([s.M, s.N], { tag: 'bench' });
      for (const threads of threadCounts) {
        if (threads > rt.maxThreads) continue;
        rt.setThreads(threads);
        const runsMs = timeRuns(() => be.matmul(a, b, { out: c, transA: s.transA, transB: s.transB }));
        const medianMs = median(runsMs);
        results.push({ ...s, threads, relaxed: rt.relaxed, medianMs, gflops: (2 * s.M * s.N * s.K) / (medianMs * 1e6), runsMs });
      }
      a.dispose();
      b.dispose();
      c.dispose();
    }
  } finally {
    rt.setThreads(saved);
  }
  return results;
}

/** Milliseconds for a row softmax of a rows×cols matrix, per thread count. */
export function benchSoftmax(rows: number, cols: number, threadCounts: readonly number[] = [1, 2]): SoftmaxResult[] {
  const rt = getRuntime();
  const be = getBackend('wasm');
  const x = Tensor.uniform([rows, cols], 3, -4, 4, { tag: 'bench' });
  const y = Tensor.empty([rows, cols], { tag: 'bench' });
  const results: SoftmaxResult[] = [];
  const saved = rt.threads;
  try {
    for (const threads of threadCounts) {
      if (threads > rt.maxThreads) continue;
      rt.setThreads(threads);
      const runsMs = timeRuns(() => be.softmax(x, { out: y }));
      results.push({ rows, cols, threads, relaxed: rt.relaxed, medianMs: median(runsMs), runsMs });
    }
  } finally {
    rt.setThreads(saved);
    x.dispose();
    y.dispose();
  }
  return results;
}

/** The two reference shapes first, then small and skinny ones typical of a tiny transformer's layers. */
export const STANDARD_SHAPES: MatmulShape[] = [
  { M: 512, K: 512, N: 512 },
  { M: 2048, K: 256, N: 1024 },
  { M: 64, K: 64, N: 64 },
  { M: 128, K: 128, N: 128 },
  { M: 2048, K: 64, N: 256 },
  { M: 512, K: 512, N: 64 },
  { M: 1024, K: 256, N: 256 },
  { M: 1024, K: 256, N: 256, transB: true },
  { M: 256, K: 1024, N: 256, transA: true },
];

function shapeLabel(s: MatmulShape): string {
  return `${s.M}×${s.K}·${s.K}×${s.N}${s.transA ? ' (Aᵀ)' : ''}${s.transB ? ' (Bᵀ)' : ''}`;
}

function toMarkdown(mm: MatmulResult[], sm: SoftmaxResult[], meta: Record<string, string | number>): string {
  const lines = [
    '# Matmul and softmax (Wasm backend)',
    '',
    `${meta.date} · ${meta.cpu} · ${meta.cores} cores · Node ${meta.node}. 2 warm-ups, median of 5 runs.`,
    `Load average (1/5/15 min) before: ${meta.loadBefore}; after: ${meta.loadAfter}. Other processes on the machine slow both`,
    'columns, and the 2-thread one most.',
    'GFLOP/s = 2·M·N·K / median time. "relaxed" = relaxed-SIMD build (fused multiply-add).',
    '',
    '| shape (M×K·K×N) | build | threads | median ms | GFLOP/s |',
    '|---|---|---|---|---|',
    ...mm.map((r) => `| ${shapeLabel(r)} | ${r.relaxed ? 'relaxed' : 'simd'} | ${r.threads} | ${r.medianMs.toFixed(3)} | ${r.gflops.toFixed(1)} |`),
    '',
    '| softmax rows×cols | build | threads | median ms |',
    '|---|---|---|---|',
    ...sm.map((r) => `| ${r.rows}×${r.cols} | ${r.relaxed ? 'relaxed' : 'simd'} | ${r.threads} | ${r.medianMs.toFixed(2)} |`),
    '',
  ];
  return lines.join('\n');
}

async function main(): Promise<void> {
  const loadBefore = loadavg();
  const mm: MatmulResult[] = [];
  const sm: SoftmaxResult[] = [];
  for (const relaxed of [false, true]) {
    await shutdownRuntime();
    initRuntime({ threads: 2, relaxed });
    mm.push(...benchMatmul(STANDARD_SHAPES, [1, 2]));
    sm.push(...benchSoftmax(2048, 2048, [1, 2]));
  }
  await shutdownRuntime();
  const meta = {
    date: new Date().toISOString(), cpu: cpus()[0]?.model ?? 'unknown', cores: cpus().length, node: process.versions.node,
    loadBefore: loadBefore.map((l) => l.toFixed(2)).join(' '), loadAfter: loadavg().map((l) => l.toFixed(2)).join(' '),
  };
  const dir = join(dirname(fileURLToPath(import.meta.url)), 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'matmul.json'), `${JSON.stringify({ meta, matmul: mm, softmax: sm }, null, 2)}\n`);
  const md = toMarkdown(mm, sm, meta);
  writeFileSync(join(dir, 'matmul.md'), md);
  console.log(md);
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  main().catch((err: unknown) => {
    console.error(err);
    process.exitCode = 1;
  });
}
