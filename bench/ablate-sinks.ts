/**
 * Ablation: attention sinks kept vs removed in the kernel. The sink-aware flex kernel (src/attention/wasm.ts) with
 * gpt-oss's learned sink logits against the same kernel with no sink term (`sinks: null`: each row's softmax starts
 * from m = −∞, l = 0, which is what a sink logit of −∞ gives), at gpt-oss-20b attention shapes (64 query heads,
 * 8 KV heads, head dim 64), full-causal and sliding-window-128 layers, forward and forward + backward.
 *
 *   npm run bench:ablate-sinks -- [--max-t-causal N] [--max-t-window N] [--reps R]
 *
 * Defaults: full causal T = 1024 … 8192, window 128 T = 1024 … 32768, 3 reps. Each (layer, T) is one child process
 * in which both variants run on the same inputs, interleaved rep by rep (order rotated), so the ratio of their times
 * is measured under the same load; the table gives the median of the per-rep ratios and their range. Memory: peak
 * engine bytes of the region (inputs excluded). Check, on the first 4 heads: the outputs differ, and differ exactly
 * as the sink predicts (O_sinks = O_none · (1 − e^(σ − L_sinks)) per row), dsinks is null without sinks.
 * Writes bench/results/ablate-sinks.{json,md} after every child.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { fmtMiB, fmtMs, HKV, HQ, D, maybeKernelChild, median, parseOptions, runKernelChild, sweep, type KernelResult } from './kernel-ablation.ts';

const HERE = dirname(fileURLToPath(import.meta.url));
const ROOT = join(HERE, '..');
const WINDOW = 128;

interface Row { layer: string; window: number; result: KernelResult }

function render(rows: Row[], meta: Record<string, unknown>): string {
  const L: string[] = [
    '# Ablation: attention sinks kept vs removed in the flex kernel (gpt-oss-20b attention shapes)',
    '',
    `Made by \`${meta.command}\` · ${meta.date} · ${meta.cpu} · ${meta.cores} cores · ${meta.memGiB} GiB · Node ${meta.node}.`,
    `Shapes: Hq = ${HQ}, Hkv = ${HKV}, d = ${D}, float32, batch 1. Sinks: one logit per query head, −0.75 … 0.75; "none" = the same kernel with \`sinks: null\` (no sink term).`,
    `Each (layer, T) is one child process; both variants run on the same inputs, interleaved, ${meta.reps} reps (order rotated each rep), after two untimed warm-up passes per variant.`,
    'Time ratio = none / sinks per rep (below 1: removing the sink is faster); median and [min – max] over reps. Memory = peak engine bytes of the region, inputs (q, k, v, dO) excluded.',
    `The machine is shared: 1-min load average on ${meta.cores} cores when each child started / ended is in the last column; compare the two variants of a row (same process, same load), not rows with each other.`,
    '',
    '| layer | T | fwd s, sinks | fwd s, none | fwd ratio none/sinks | fwd+bwd s, sinks | fwd+bwd s, none | fwd+bwd ratio none/sinks | every rep on one side of 1? | fwd peak MiB sinks / none | fwd+bwd peak MiB sinks / none | max \\|ΔO\\| | rescaling error | mean sink share | load |',
    '|---|---:|---:|---:|---|---:|---:|---|---|---|---|---:|---:|---:|---|',
  ];
  for (const r of rows) {
    const res = r.result;
    if (!res.ok || !res.variants) {
      L.push(`| ${r.layer} | ${res.t} | **failed**: ${res.reason ?? 'no result'} | | | | | | | | | | | | |`);
      continue;
    }
    const [s, n] = res.variants;
    const ratios = (a: number[], b: number[]) => a.map((x, i) => b[i] / x);
    const fr = ratios(s.fwdMs, n.fwdMs), br = ratios(s.fwdBwdMs, n.fwdBwdMs);
    const range = (x: number[]) => `${median(x).toFixed(3)} [${Math.min(...x).toFixed(3)} – ${Math.max(...x).toFixed(3)}]`;
    const c = res.sinkCheck!;
    // every rep's fwd+bwd ratio on the same side of 1 (with R reps, a chance of 2^(1−R) under pure noise)
    const beyond = (x: number[]) => (x.every((y) => y < 1) ? 'yes, none faster' : x.every((y) => y > 1) ? 'yes, sinks faster' : 'no');
    L.push(`| ${r.layer} | ${res.t} | ${fmtMs(median(s.fwdMs))} | ${fmtMs(median(n.fwdMs))} | ${range(fr)} | ${fmtMs(median(s.fwdBwdMs))} | ${fmtMs(median(n.fwdBwdMs))} | ${range(br)} | ${beyond(br)} | ` +
      `${fmtMiB(s.fwdPeakBytes)} / ${fmtMiB(n.fwdPeakBytes)} | ${fmtMiB(s.fwdBwdPeakBytes)} / ${fmtMiB(n.fwdBwdPeakBytes)} | ${c.maxAbsDiff.toExponential(2)} | ${c.relationError.toExponential(1)} | ${c.meanSinkShare.toExponential(2)} | ${res.loadAvgStart!.toFixed(1)} / ${res.loadAvgEnd!.toFixed(1)} |`);
  }
  const checks = rows.filter((r) => r.result.ok).map((r) => r.result.sinkCheck!);
  L.push('');
  if (checks.length) {
    L.push(`Check (first 4 heads of every row): the outputs differ (max |ΔO| ${Math.min(...checks.map((c) => c.maxAbsDiff)).toExponential(2)} – ${Math.max(...checks.map((c) => c.maxAbsDiff)).toExponential(2)}); ` +
      `the sink only rescales each row, O_sinks = O_none · (1 − e^(σ − L)), to ${Math.max(...checks.map((c) => c.relationError)).toExponential(1)} of max |O| (float32 rounding); ` +
      `dsinks is null without sinks in ${checks.filter((c) => c.dsinksNullWithout).length}/${checks.length} rows and finite with them in ${checks.filter((c) => c.dsinksFiniteWith).length}/${checks.length}. ` +
      'Mean sink share = the mean over rows of e^(σ − L), the attention the sink takes from the keys (random inputs).');
  }
  L.push('', 'What the sink adds to the kernel: the row statistics start at (m, l) = (σ_h, 1) instead of (−∞, 0), one more term per row in the backward prepass (dσ_h = −Σ_rows e^(σ_h − L_row) D_row), and an [Hq] copy and gradient; the work per row is d·(keys per row) multiply-adds either way. With ${meta.reps} reps, every rep on one side of 1 happens by chance in ${(100 * 2 ** (1 - Number(meta.reps))).toFixed(0)} % of rows when there is no difference.');
  return L.join('\n') + '\n';
}

if (!(await maybeKernelChild())) {
  const o = parseOptions(process.argv.slice(2), { 'max-t-causal': 'number', 'max-t-window': 'number', reps: 'number' }, 'bench:ablate-sinks');
  const maxCausal = (o['max-t-causal'] as number | undefined) ?? 8192, maxWindow = (o['max-t-window'] as number | undefined) ?? 32768;
  const reps = (o.reps as number | undefined) ?? 3;
  if (!Number.isInteger(reps) || reps < 1) throw new Error(`bench:ablate-sinks: --reps must be a positive integer, got ${reps}`);
  const meta = {
    command: ['npm run bench:ablate-sinks', ...(process.argv.length > 2 ? ['--', ...process.argv.slice(2)] : [])].join(' '),
    date: new Date().toISOString(), cpu: cpus()[0]?.model.trim() ?? 'unknown', cores: cpus().length, memGiB: Math.round(totalmem() / 2 ** 30), node: process.versions.node,
    reps, loadAvgAtStart: loadavg()[0],
  };
  const plan = [
    ...sweep(maxCausal, '--max-t-causal').map((t) => ({ layer: 'full causal', window: 0, t })),
    ...sweep(maxWindow, '--max-t-window').map((t) => ({ layer: `window ${WINDOW}`, window: WINDOW, t })),
  ];
  const rows: Row[] = [];
  const out = join(HERE, 'results');
  mkdirSync(out, { recursive: true });
  for (const p of plan) {
    const result = runKernelChild(import.meta.url, {
      t: p.t, reps, backward: true, checkHeads: 4,
      variants: [{ name: 'sinks', window: p.window, sinks: true }, { name: 'none', window: p.window, sinks: false }],
    }, ROOT);
    rows.push({ layer: p.layer, window: p.window, result });
    const v = result.variants;
    console.log(result.ok && v ? `${p.layer} T ${p.t}: fwd+bwd ${fmtMs(median(v[0].fwdBwdMs))} s with sinks, ${fmtMs(median(v[1].fwdBwdMs))} s without (load ${result.loadAvgStart?.toFixed(1)})` : `${p.layer} T ${p.t}: ${result.reason}`);
    writeFileSync(join(out, 'ablate-sinks.json'), JSON.stringify({ meta, rows }, null, 2) + '\n');
    writeFileSync(join(out, 'ablate-sinks.md'), render(rows, meta));
  }
  console.log(render(rows, meta));
}
