/**
 * Run reports: the figure of an SFT → GRPO run as an SVG (and a PNG through headless Chromium in `longrun plot`).
 * Panels: SFT loss by step; held-out mean@1 by GRPO step (plus any comparison series, e.g. continued SFT); training
 * reward by GRPO step; the token-length distribution of the episodes (with the sliding window marked).
 * Inputs are the JSONL files the trainers write (sft metrics.jsonl, grpo metrics.jsonl, grpo episodes.jsonl).
 */
import { readFileSync } from 'node:fs';

export interface Series {
  name: string;
  points: [number, number][];
  color?: string;
  dashed?: boolean;
  /** Error bars: a half-width per point (e.g. one standard error), drawn as ±errors[i] around points[i]. */
  errors?: number[];
}

export interface Panel {
  title: string;
  xLabel: string;
  yLabel: string;
  series: Series[];
  /** Fixed y range (e.g. [0, 1] for rewards). */
  yRange?: [number, number];
  /** Bars instead of lines (histograms): the series' points are [bin start, count]; `binWidth` wide. */
  binWidth?: number;
  /** Vertical reference lines with labels. */
  marks?: { x: number; label: string }[];
}

const PALETTE = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#e377c2', '#17becf'];

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');

function niceTicks(lo: number, hi: number, count = 5): number[] {
  if (!(hi > lo)) return [lo];
  const raw = (hi - lo) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
  const out: number[] = [];
  for (let v = Math.ceil(lo / step) * step; v <= hi + step * 1e-9; v += step) out.push(Number(v.toPrecision(12)));
  return out;
}

const fmt = (v: number) => (Math.abs(v) >= 1000 ? `${Math.round(v / 100) / 10}k` : Number(v.toPrecision(3)).toString());

function panelSvg(p: Panel, x0: number, y0: number, w: number, h: number): string {
  const m = { l: 52, r: 12, t: 26, b: 38 };
  const pw = w - m.l - m.r, ph = h - m.t - m.b;
  const pts = p.series.flatMap((s) => s.points.flatMap(([x, y], i) => {
    const e = s.errors?.[i] ?? 0;
    return e > 0 ? [[x, y - e], [x, y + e]] as [number, number][] : [[x, y]] as [number, number][];
  }));
  const xs = pts.map((q) => q[0]).concat(p.binWidth ? pts.map((q) => q[0] + p.binWidth!) : []).concat((p.marks ?? []).map((k) => k.x));
  let xlo = xs.length ? Math.min(...xs) : 0, xhi = xs.length ? Math.max(...xs) : 1;
  if (xhi === xlo) { xlo -= 1; xhi += 1; }
  const ylo = p.yRange?.[0] ?? Math.min(0, ...pts.map((q) => q[1]));
  let yhi = p.yRange?.[1] ?? Math.max(...pts.map((q) => q[1]), 1e-9);
  if (!p.yRange) yhi += (yhi - ylo) * 0.05;
  if (yhi === ylo) yhi = ylo + 1;
  const sx = (x: number) => x0 + m.l + ((x - xlo) / (xhi - xlo)) * pw;
  const sy = (y: number) => y0 + m.t + ph - ((y - ylo) / (yhi - ylo)) * ph;
  const out: string[] = [];
  out.push(`<text x="${x0 + m.l}" y="${y0 + 16}" class="title">${esc(p.title)}</text>`);
  out.push(`<rect x="${x0 + m.l}" y="${y0 + m.t}" width="${pw}" height="${ph}" class="frame"/>`);
  for (const t of niceTicks(ylo, yhi)) {
    out.push(`<line x1="${x0 + m.l}" x2="${x0 + m.l + pw}" y1="${sy(t)}" y2="${sy(t)}" class="grid"/>`);
    out.push(`<text x="${x0 + m.l - 4}" y="${sy(t) + 4}" class="tick" text-anchor="end">${fmt(t)}</text>`);
  }
  for (const t of niceTicks(xlo, xhi, 6)) {
    out.push(`<text x="${sx(t)}" y="${y0 + m.t + ph + 14}" class="tick" text-anchor="middle">${fmt(t)}</text>`);
  }
  out.push(`<text x="${x0 + m.l + pw / 2}" y="${y0 + h - 6}" class="label" text-anchor="middle">${esc(p.xLabel)}</text>`);
  out.push(`<text transform="translate(${x0 + 12},${y0 + m.t + ph / 2}) rotate(-90)" class="label" text-anchor="middle">${esc(p.yLabel)}</text>`);
  p.series.forEach((s, i) => {
    const color = s.color ?? PALETTE[i % PALETTE.length];
    if (p.binWidth) {
      for (const [x, y] of s.points) {
        out.push(`<rect x="${sx(x)}" y="${sy(y)}" width="${Math.max(0.5, sx(x + p.binWidth) - sx(x) - 1)}" height="${sy(ylo) - sy(y)}" fill="${color}" fill-opacity="0.6"/>`);
      }
    } else if (s.points.length === 1) {
      out.push(`<circle cx="${sx(s.points[0][0])}" cy="${sy(s.points[0][1])}" r="3" fill="${color}"/>`);
    } else {
      const d = s.points.map(([x, y]) => `${sx(x).toFixed(1)},${sy(y).toFixed(1)}`).join(' ');
      out.push(`<polyline points="${d}" fill="none" stroke="${color}" stroke-width="1.8"${s.dashed ? ' stroke-dasharray="5,3"' : ''}/>`);
      if (s.points.length <= 40) for (const [x, y] of s.points) out.push(`<circle cx="${sx(x)}" cy="${sy(y)}" r="2.2" fill="${color}"/>`);
    }
    if (!p.binWidth && s.errors) {
      s.points.forEach(([x, y], j) => {
        const e = s.errors![j] ?? 0;
        if (!(e > 0)) return;
        const cx = sx(x).toFixed(1), lo = sy(y - e).toFixed(1), hi = sy(y + e).toFixed(1);
        out.push(`<line x1="${cx}" x2="${cx}" y1="${lo}" y2="${hi}" stroke="${color}" stroke-width="1.2" class="errbar"/>`);
        for (const yy of [lo, hi]) out.push(`<line x1="${(sx(x) - 3).toFixed(1)}" x2="${(sx(x) + 3).toFixed(1)}" y1="${yy}" y2="${yy}" stroke="${color}" stroke-width="1.2"/>`);
      });
    }
    out.push(`<line x1="${x0 + m.l + 8}" x2="${x0 + m.l + 24}" y1="${y0 + m.t + 12 + i * 14}" y2="${y0 + m.t + 12 + i * 14}" stroke="${color}" stroke-width="3"/>`);
    out.push(`<text x="${x0 + m.l + 28}" y="${y0 + m.t + 16 + i * 14}" class="legend">${esc(s.name)}</text>`);
  });
  for (const k of p.marks ?? []) {
    out.push(`<line x1="${sx(k.x)}" x2="${sx(k.x)}" y1="${y0 + m.t}" y2="${y0 + m.t + ph}" class="mark"/>`);
    out.push(`<text x="${sx(k.x) + 3}" y="${y0 + m.t + ph - 6}" class="tick">${esc(k.label)}</text>`);
  }
  return out.join('\n');
}

/** A grid of panels (two per row; a single panel takes the whole width) as one standalone SVG document. */
export function renderPanels(panels: readonly Panel[], options: { title?: string; width?: number; panelHeight?: number } = {}): string {
  const W = options.width ?? 1100, PH = options.panelHeight ?? 300, cols = panels.length === 1 ? 1 : 2;
  const head = options.title ? 34 : 0;
  const rows = Math.ceil(panels.length / cols);
  const H = head + rows * PH;
  const body = panels.map((p, i) => panelSvg(p, (i % cols) * (W / cols), head + Math.floor(i / cols) * PH, W / cols, PH)).join('\n');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}">
<style>
text { font-family: 'DejaVu Sans', Arial, sans-serif; fill: #222; }
.title { font-size: 13px; font-weight: bold; } .tick { font-size: 10px; fill: #555; } .label { font-size: 11px; }
.legend { font-size: 11px; } .frame { fill: none; stroke: #999; } .grid { stroke: #e6e6e6; } .mark { stroke: #888; stroke-dasharray: 3,3; }
</style>
<rect width="100%" height="100%" fill="white"/>
${options.title ? `<text x="12" y="22" style="font-size:15px;font-weight:bold">${esc(options.title)}</text>` : ''}
${body}
</svg>
`;
}

export function readJsonl(path: string): Record<string, unknown>[] {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`cannot read ${path}: ${(e as Error).message}`, { cause: e });
  }
  return text.split('\n').filter((l) => l.trim() !== '').map((l, i) => {
    try {
      return JSON.parse(l) as Record<string, unknown>;
    } catch (e) {
      throw new Error(`${path}:${i + 1}: not valid JSON (${(e as Error).message})`, { cause: e });
    }
  });
}

/** Keeps the last line per key (a resumed run repeats the steps after its checkpoint). */
function lastBy<T>(rows: readonly T[], key: (r: T) => string): T[] {
  const m = new Map<string, T>();
  for (const r of rows) m.set(key(r), r);
  return [...m.values()];
}

export function histogram(values: readonly number[], binWidth: number): [number, number][] {
  const counts = new Map<number, number>();
  for (const v of values) {
    const b = Math.floor(v / binWidth) * binWidth;
    counts.set(b, (counts.get(b) ?? 0) + 1);
  }
  return [...counts].sort((a, b) => a[0] - b[0]);
}

export interface RunReportInput {
  sftMetrics?: Record<string, unknown>[];
  /** Further SFT runs drawn in the same panel (e.g. attempts with different data). */
  sftRuns?: { name: string; rows: Record<string, unknown>[] }[];
  grpoMetrics?: Record<string, unknown>[];
  episodes?: Record<string, unknown>[];
  /** Extra held-out curves by step (e.g. continued SFT for the same time). */
  compare?: Series[];
  /**
   * Held-out mean@1 against training wall time, one curve per method (GRPO, continued SFT, RFT from one start):
   * points in minutes of summed step time, with their standard errors as error bars.
   */
  heldout?: HeldoutCurve[];
  slidingWindow?: number;
}

export interface HeldoutCurve {
  name: string;
  points: { minutes: number; reward: number; stderr?: number }[];
}

const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** The standard run figure's panels from the trainers' JSONL files. */
export function runPanels(input: RunReportInput): Panel[] {
  const panels: Panel[] = [];
  const sftCurve = (rows: Record<string, unknown>[]) => lastBy(rows.filter((r) => r.type === 'train'), (r) => String(r.step))
    .map((r) => [num(r.step), num(r.loss)] as const).filter((p): p is readonly [number, number] => p[0] !== undefined && p[1] !== undefined)
    .map((p) => [p[0], p[1]] as [number, number]);
  const sftSeries: Series[] = [
    ...(input.sftMetrics ? [{ name: 'train loss', points: sftCurve(input.sftMetrics) }] : []),
    ...(input.sftRuns ?? []).map((r) => ({ name: r.name, points: sftCurve(r.rows) })),
  ].filter((x) => x.points.length > 0);
  if (sftSeries.length) panels.push({ title: 'SFT on expert trajectories', xLabel: 'SFT step', yLabel: 'loss (assistant tokens)', series: sftSeries });
  const grpo = input.grpoMetrics ?? [];
  const val = lastBy(grpo.filter((r) => r.kind === 'val'), (r) => String(r.step)).sort((a, b) => num(a.step)! - num(b.step)!);
  const train = lastBy(grpo.filter((r) => r.kind !== 'val' && num(r['reward/mean']) !== undefined), (r) => String(r.step)).sort((a, b) => num(a.step)! - num(b.step)!);
  if (val.length || input.compare?.length) {
    panels.push({ title: 'Held-out validation (mean@1 reward)', xLabel: 'GRPO step', yLabel: 'reward', yRange: [0, 1], series: [
      { name: 'GRPO', points: val.map((r) => [num(r.step)!, num(r['val/reward_mean'])!]) },
      ...(input.compare ?? []),
    ] });
  }
  if (train.length) {
    panels.push({ title: 'Training rollouts', xLabel: 'GRPO step', yLabel: 'value', yRange: [0, 1], series: [
      { name: 'reward mean', points: train.map((r) => [num(r.step)!, num(r['reward/mean'])!]) },
      { name: 'tool-error rate', points: train.map((r) => [num(r.step)!, num(r.tool_error_rate) ?? 0]), dashed: true },
    ] });
  }
  const curves = (input.heldout ?? []).filter((c) => c.points.length > 0);
  if (curves.length) {
    panels.push({ title: 'Held-out mean@1 against training wall time', xLabel: 'training wall time (minutes)', yLabel: 'reward', yRange: [0, 1], series: curves.map((c) => {
      const pts = [...c.points].sort((a, b) => a.minutes - b.minutes);
      return { name: c.name, points: pts.map((q) => [q.minutes, q.reward] as [number, number]), errors: pts.map((q) => q.stderr ?? 0) };
    }) });
  }
  const eps = input.episodes ?? [];
  if (eps.length) {
    const total = eps.map((e) => (num(e.promptTokens) ?? 0) + (num(e.responseTokens) ?? 0));
    const maxLen = Math.max(...total);
    const bin = Math.max(64, Math.ceil(maxLen / 40 / 64) * 64);
    const marks = input.slidingWindow ? [{ x: input.slidingWindow, label: `window ${input.slidingWindow}` }] : [];
    panels.push({ title: `Episode length (prompt + response), ${eps.length} episodes`, xLabel: 'tokens', yLabel: 'episodes', binWidth: bin, marks, series: [
      { name: 'episodes', points: histogram(total, bin) },
    ] });
  }
  return panels;
}
