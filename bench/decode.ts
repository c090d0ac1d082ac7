/**
 * Decode attention of the in-process rollout engine (src/model/generate.ts), alone: the work of one decode step's
 * attention in a full-attention layer, for two head shapes (the retail model's, Hq/Hkv/d = 8/2/24, and
 * gpt-oss-20b's, 64/8/64), float32, learned sinks, 2 threads.
 *
 * - Sampled tokens: 64 sequences feed one token each against caches of S positions, on the single-query kernel
 *   (assembly/decode.ts through ops/decode-attention-wasm.ts).
 * - Observation chunks: one sequence feeds c tokens at positions S − c … S − 1, one query at a time on the same kernel,
 *   or as query tiles of the blockwise kernel of training (ops/chunk-attention-wasm.ts, the default for c ≥ 32).
 *
 * Useful FLOPs: 4·d per (query head, key) pair a query sees (q·k and the weighted sum of v), sink excluded. Every case
 * runs twice over (the first pass warms up, untimed), then 1 untimed run and the median of 5. Writes bench/results/decode.{json,md}.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { getRuntime, Tensor } from '../src/engine/index.ts';
import { LayerKvCache } from '../src/model/kvcache.ts';
import { chunkAttentionTiles } from '../src/model/ops/chunk-attention-wasm.ts';
import { decodeAttentionWasm } from '../src/model/ops/decode-attention-wasm.ts';
import { benchMatmul } from './matmul.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
const SHAPES = [{ name: 'retail model (tiny-4m)', hq: 8, hkv: 2, d: 24 }, { name: 'gpt-oss-20b', hq: 64, hkv: 8, d: 64 }] as const;
const CONTEXTS = [1024, 3072, 7168];
const CHUNKS = [32, 64, 256];
const SEQUENCES = 64;

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function time(fn: () => void): number {
  fn();
  const runs: number[] = [];
  for (let i = 0; i < 5; i++) {
    const t0 = performance.now();
    fn();
    runs.push(performance.now() - t0);
  }
  return median(runs);
}

function filledCache(hkv: number, d: number, S: number, seed: number): LayerKvCache {
  const cache = new LayerKvCache(hkv, d, S, false, 0, 'wasm');
  const k = Float32Array.from({ length: hkv * S * d }, (_, i) => Math.sin(i * 0.37 + seed));
  const v = Float32Array.from({ length: hkv * S * d }, (_, i) => Math.cos(i * 0.23 + seed));
  for (let j = 0; j < S; j++) cache.append(k, v, S, j);
  return cache;
}

interface Row { shape: string; kind: string; context: number; tokens: number; ms: number; gflops: number; tilesMs?: number; tilesGflops?: number; maxAbsDiff?: number }

getRuntime();

/** Every case once: the rows of the table. */
function measure(): Row[] {
  const rows: Row[] = [];
  for (const sh of SHAPES) {
    const { hq, hkv, d } = sh, scale = 1 / Math.sqrt(d);
    const sinks = Tensor.from(Float32Array.from({ length: hq }, (_, h) => 0.1 * h), [hq]);
    for (const S of CONTEXTS) {
      // sampled tokens: 64 sequences (one cache each would need 64× the memory; they share one, reading it as theirs)
      const cache = filledCache(hkv, d, S, S);
      const q = Tensor.from(Float32Array.from({ length: hq * SEQUENCES * d }, (_, i) => Math.cos(i * 0.11)), [hq, SEQUENCES, d]);
      const out = Tensor.empty([SEQUENCES, hq * d]);
      const queries = Array.from({ length: SEQUENCES }, () => ({ cache, lo: 0, hi: S - 1 }));
      const ms = time(() => decodeAttentionWasm(q, queries, sinks, hq, hkv, d, scale, out));
      const flops = 4 * d * hq * S * SEQUENCES;
      rows.push({ shape: sh.name, kind: `${SEQUENCES} sampled tokens`, context: S, tokens: SEQUENCES, ms, gflops: flops / ms / 1e6 });
      q.dispose(); out.dispose();
      for (const c of CHUNKS) {
        const qc = Tensor.from(Float32Array.from({ length: hq * c * d }, (_, i) => Math.cos(i * 0.07)), [hq, c, d]);
        const o1 = Tensor.empty([c, hq * d]), o2 = Tensor.empty([c, hq * d]);
        const p0 = S - c;
        const rowsQ = Array.from({ length: c }, (_, t) => ({ cache, lo: 0, hi: p0 + t }));
        const single = time(() => decodeAttentionWasm(qc, rowsQ, sinks, hq, hkv, d, scale, o1));
        const sinkArray = sinks.toArray();
        const tiles = time(() => chunkAttentionTiles(qc, 0, c, cache, sinkArray, hq, hkv, d, scale, 64, o2));
        let worst = 0;
        const a = o1.data(), b = o2.data();
        for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
        const chunkFlops = 4 * d * hq * (c * p0 + (c * (c + 1)) / 2);
        rows.push({ shape: sh.name, kind: `chunk of ${c}`, context: S, tokens: c, ms: single, gflops: chunkFlops / single / 1e6, tilesMs: tiles, tilesGflops: chunkFlops / tiles / 1e6, maxAbsDiff: worst });
        qc.dispose(); o1.dispose(); o2.dispose();
      }
      cache.dispose();
    }
    sinks.dispose();
  }
  return rows;
}

// Two passes over every case; the first only warms the kernels up (Wasm tier-up, allocator), the second is reported.
measure();
const rows = measure();
const matmul = benchMatmul([{ M: 2048, K: 256, N: 1024 }], [getRuntime().threads]);
const meta = { date: new Date().toISOString(), cpu: cpus()[0]?.model ?? 'unknown', cpus: cpus().length, node: process.version, threads: getRuntime().threads, load1: loadavg()[0] };
mkdirSync(join(HERE, 'results'), { recursive: true });
writeFileSync(join(HERE, 'results', 'decode.json'), JSON.stringify({ meta, matmulGflops: matmul[0].gflops, rows }, null, 2) + '\n');
const f = (x: number, n = 2): string => x.toFixed(n);
const md = [
  '# Decode attention (one full-attention layer of a rollout decode step)',
  '',
  `${meta.cpu}, ${meta.cpus} cores, ${meta.threads} threads, node ${meta.node}, ${meta.date}, 1-min load ${f(meta.load1)} when it ended.`,
  `Engine matmul in the same run: ${f(matmul[0].gflops, 1)} GFLOP/s (2048×256·256×1024). Useful FLOPs 4·d per (query head, key) pair; median of 5 after a warm-up pass over every case.`,
  '',
  '| heads (Hq/Hkv/d) | work | context | one query at a time: ms | GFLOP/s | query tiles: ms | GFLOP/s | tiles speed-up | max abs diff |',
  '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
  ...rows.map((r) => `| ${r.shape} | ${r.kind} | ${r.context} | ${f(r.ms)} | ${f(r.gflops, 1)} | ${r.tilesMs === undefined ? '–' : f(r.tilesMs)} | ${r.tilesGflops === undefined ? '–' : f(r.tilesGflops, 1)} | ${r.tilesMs === undefined ? '–' : `${f(r.ms / r.tilesMs)}×`} | ${r.maxAbsDiff === undefined ? '–' : r.maxAbsDiff.toExponential(1)} |`),
  '',
].join('\n');
writeFileSync(join(HERE, 'results', 'decode.md'), md);
console.log(md);
