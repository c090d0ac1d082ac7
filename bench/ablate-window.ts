/**
 * Ablation: the sliding-window size. The sink-aware flex kernel (src/attention/wasm.ts) at windows 128 / 512 / 1024 /
 * 2048 (gpt-oss ships 128; the reference paper discusses 512 – 2048) and full causal for reference, gpt-oss-20b
 * attention shapes (64 query heads, 8 KV heads, head dim 64, learned sinks), forward and forward + backward.
 *
 *   npm run bench:ablate-window -- [--max-t N] [--max-t-causal N] [--reps R] [--windows 128,512,1024,2048]
 *
 * Defaults: T = 1024 … 32768 for the windows, full causal to 8192, 3 reps. Each T is one child process in which
 * every window runs on the same inputs, interleaved rep by rep (order rotated), so time ratios between windows are
 * measured under the same load. Memory: the kernel's peak engine bytes of the region (inputs excluded), and the KV
 * cache a decoder keeps for one such layer at context T (2 · Hkv · min(T, W) · d · 4 bytes, computed).
 * Writes bench/results/ablate-window.{json,md} after every child.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmtMiB, fmtMs, HKV, HQ, D, maybeKernelChild, median, MIB, parseOptions, runKernelChild, sweep, type KernelResult, type Variant } from './kernel-ablation.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..');

const kvCacheBytes = (t: number, window: number) => 2 * HKV * (window ? Math.min(t, window) : t) * D * 4;

function render(results: KernelResult[], meta: Record<string, unknown>, windows: number[]): string {
  const L: string[] = [
    '# Ablation: sliding-window size in the flex kernel (gpt-oss-20b attention shapes)',
    '',
    `Made by \`${meta.command}\` · ${meta.date} · ${meta.cpu} · ${meta.cores} cores · ${meta.memGiB} GiB · Node ${meta.node}.`,
    `Shapes: Hq = ${HQ}, Hkv = ${HKV}, d = ${D}, float32, learned sinks, batch 1; windows ${windows.join(' / ')} (W keys including the query itself) and full causal.`,
    `Each T is one child process; every variant runs on the same inputs, interleaved, ${meta.reps} reps (order rotated each rep), after two untimed warm-up passes each.`,
    'Time vs window 128 = the variant\'s fwd+bwd time over window 128\'s in the same rep; median and [min – max] over reps. Kernel memory = peak engine bytes of forward + backward, inputs (q, k, v, dO) excluded.',
    'Decode KV cache = what a decoder keeps for one such layer at context T: 2 · Hkv · min(T, W) · d · 4 bytes (computed, not measured).',
    `The machine is shared: 1-min load average on ${meta.cores} cores at the start / end of each child is given per T; compare variants within one T.`,
    '',
    '| T | variant | useful pairs (M) | fwd s | fwd+bwd s | fwd+bwd time vs window 128 | fwd peak MiB | fwd+bwd peak MiB | decode KV cache per layer (MiB) | load |',
    '|---:|---|---:|---:|---:|---|---:|---:|---:|---|',
  ];
  for (const res of results) {
    if (!res.ok || !res.variants) {
      L.push(`| ${res.t} | **failed**: ${res.reason ?? 'no result'} | | | | | | | | |`);
      continue;
    }
    const base = res.variants.find((v) => v.window === 128);
    for (const v of res.variants) {
      const rel = base && v !== base ? v.fwdBwdMs.map((x, i) => x / base.fwdBwdMs[i]) : null;
      const relText = rel ? `${median(rel).toFixed(2)}× [${Math.min(...rel).toFixed(2)} – ${Math.max(...rel).toFixed(2)}]` : v === base ? '1' : '–';
      L.push(`| ${res.t} | ${v.name} | ${(v.pairs / 1e6).toFixed(1)} | ${fmtMs(median(v.fwdMs))} | ${fmtMs(median(v.fwdBwdMs))} | ${relText} | ${fmtMiB(v.fwdPeakBytes)} | ${fmtMiB(v.fwdBwdPeakBytes)} | ` +
        `${(kvCacheBytes(res.t, v.window) / MIB).toFixed(2)} | ${res.loadAvgStart!.toFixed(1)} / ${res.loadAvgEnd!.toFixed(1)} |`);
    }
  }
  L.push('', 'Useful pairs = allowed (query, key) pairs over all heads; the kernel visits only the tiles that hold them, so its time should follow them; its memory is the outputs, log-sum-exp, gradients and per-tile scratch, O(T) at every window (the scratch depends on the tile shape: full causal runs 128 × 128 tiles, windows 64 × 128).');
  return L.join('\n') + '\n';
}

if (!(await maybeKernelChild())) {
  const o = parseOptions(process.argv.slice(2), { 'max-t': 'number', 'max-t-causal': 'number', reps: 'number', windows: 'string' }, 'bench:ablate-window');
  const maxT = (o['max-t'] as number | undefined) ?? 32768, maxCausal = Math.min((o['max-t-causal'] as number | undefined) ?? 8192, maxT);
  const reps = (o.reps as number | undefined) ?? 3;
  if (!Number.isInteger(reps) || reps < 1) throw new Error(`bench:ablate-window: --reps must be a positive integer, got ${reps}`);
  const windows = String(o.windows ?? '128,512,1024,2048').split(',').map((x) => Number(x));
  if (windows.some((w) => !Number.isInteger(w) || w < 1) || !windows.includes(128)) throw new Error(`bench:ablate-window: --windows must be positive integers including 128 (the reference), got ${o.windows}`);
  const meta = {
    command: ['npm run bench:ablate-window', ...(process.argv.length > 2 ? ['--', ...process.argv.slice(2)] : [])].join(' '),
    date: new Date().toISOString(), cpu: cpus()[0]?.model.trim() ?? 'unknown', cores: cpus().length, memGiB: Math.round(totalmem() / 2 ** 30), node: process.versions.node,
    reps, windows, loadAvgAtStart: loadavg()[0],
  };
  sweep(maxCausal, '--max-t-causal');
  const results: KernelResult[] = [];
  const out = join(HERE, 'results');
  mkdirSync(out, { recursive: true });
  for (const t of sweep(maxT, '--max-t')) {
    const variants: Variant[] = windows.map((w) => ({ name: `window ${w}${w >= t ? ' (= full causal at this T)' : ''}`, window: w, sinks: true }));
    if (t <= maxCausal) variants.push({ name: 'full causal', window: 0, sinks: true });
    const result = runKernelChild(import.meta.url, { t, reps, backward: true, checkHeads: 0, variants }, ROOT);
    results.push(result);
    console.log(result.ok && result.variants ? `T ${t}: ${result.variants.map((v) => `${v.name} ${fmtMs(median(v.fwdBwdMs))} s`).join(', ')} (load ${result.loadAvgStart?.toFixed(1)})` : `T ${t}: ${result.reason}`);
    writeFileSync(join(out, 'ablate-window.json'), JSON.stringify({ meta, results }, null, 2) + '\n');
    writeFileSync(join(out, 'ablate-window.md'), render(results, meta, windows));
  }
  console.log(render(results, meta, windows));
}
