/**
 * `longrun plot`: the figure of a run (src/rl/report.ts) as SVG, or PNG rendered by headless Chromium
 * (Debian's `chromium`, driven by playwright-core; `--chromium PATH` for another build).
 */
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import type { Command } from 'commander';
import { readJsonl, renderPanels, runPanels, type HeldoutCurve, type Series } from '../rl/report.ts';
import { parseEpisodeLines } from '../tooluse/episode-lines.ts';
import { computeMetrics } from '../tooluse/metrics.ts';

export interface PlotOptions {
  sft?: string[];
  grpo?: string;
  episodes?: string;
  compare?: string[];
  heldout?: string[];
  window?: string;
  title?: string;
  out: string;
  chromium?: string;
}

/** `NAME=FILE`: FILE is a GRPO-style metrics JSONL (its `kind: "val"` lines) or lines of `{ step, reward }`. */
function compareSeries(spec: string): Series {
  const eq = spec.indexOf('=');
  if (eq <= 0) throw new Error(`--compare wants NAME=FILE, got ${JSON.stringify(spec)}`);
  const rows = readJsonl(spec.slice(eq + 1));
  const points = rows
    .map((r) => [r.step, r.kind === 'val' ? r['val/reward_mean'] : r.reward] as const)
    .filter((p): p is readonly [number, number] => typeof p[0] === 'number' && typeof p[1] === 'number')
    .map((p) => [p[0], p[1]] as [number, number]);
  if (points.length === 0) throw new Error(`--compare ${spec}: no {step, reward} or validation lines`);
  return { name: spec.slice(0, eq), points, dashed: true };
}

/** One held-out point's mean reward and standard error (over tasks) from an eval folder or a per-episode file. */
function heldoutPoint(name: string, path: string): { reward: number; stderr?: number } {
  let isDir: boolean;
  try {
    isDir = statSync(path).isDirectory();
  } catch (e) {
    throw new Error(`--heldout ${name}: cannot read ${path} (${(e as Error).message})`, { cause: e });
  }
  if (!isDir) {
    const m = computeMetrics(parseEpisodeLines(readFileSync(path, 'utf8'), `--heldout ${name}: ${path}`));
    return { reward: m.avgReward, stderr: m.rewardStdErr };
  }
  const file = join(path, 'results.json');
  let metrics: { avgReward?: unknown; rewardStdErr?: unknown } | undefined;
  try {
    metrics = (JSON.parse(readFileSync(file, 'utf8')) as { metrics?: typeof metrics }).metrics;
  } catch (e) {
    throw new Error(`--heldout ${name}: cannot read ${file} (${(e as Error).message})`, { cause: e });
  }
  if (typeof metrics?.avgReward !== 'number') throw new Error(`--heldout ${name}: ${file} has no metrics.avgReward (not a longrun eval output)`);
  return { reward: metrics.avgReward, stderr: typeof metrics.rewardStdErr === 'number' ? metrics.rewardStdErr : undefined };
}

/**
 * `NAME=MIN:PATH[,MIN:PATH…]`: a held-out curve against wall time. Each PATH is a `longrun eval --out` folder (its
 * results.json gives the mean reward and its standard error) or a per-episode file (`=== <task> (<family>) reward
 * <r>` lines, src/tooluse/episode-lines.ts; the mean and its standard error over tasks); MIN is the training wall
 * time (minutes) of the checkpoint it evaluated.
 */
export function heldoutCurve(spec: string): HeldoutCurve {
  const eq = spec.indexOf('=');
  if (eq <= 0) throw new Error(`--heldout wants NAME=MIN:PATH[,MIN:PATH…], got ${JSON.stringify(spec)}`);
  const name = spec.slice(0, eq);
  const points = spec.slice(eq + 1).split(',').map((part) => {
    const colon = part.indexOf(':');
    const minutes = Number(part.slice(0, colon));
    if (colon <= 0 || !Number.isFinite(minutes) || minutes < 0) throw new Error(`--heldout ${name}: ${JSON.stringify(part)} is not MIN:PATH (minutes ≥ 0, then an eval folder or a per-episode file)`);
    return { minutes, ...heldoutPoint(name, part.slice(colon + 1)) };
  });
  return { name, points };
}

export async function plotCommand(o: PlotOptions): Promise<string> {
  const window = o.window !== undefined ? Number(o.window) : undefined;
  if (window !== undefined && !(Number.isInteger(window) && window > 0)) throw new Error(`--window must be a positive integer, got ${o.window}`);
  if (!o.sft?.length && !o.grpo && !o.episodes && !o.heldout?.length) throw new Error('nothing to plot: give --sft, --grpo, --episodes and/or --heldout');
  const panels = runPanels({
    sftRuns: (o.sft ?? []).map((spec) => {
      const eq = spec.indexOf('=');
      return eq > 0 ? { name: spec.slice(0, eq), rows: readJsonl(spec.slice(eq + 1)) } : { name: 'train loss', rows: readJsonl(spec) };
    }),
    grpoMetrics: o.grpo ? readJsonl(o.grpo) : undefined,
    episodes: o.episodes ? readJsonl(o.episodes) : undefined,
    compare: (o.compare ?? []).map(compareSeries),
    heldout: (o.heldout ?? []).map(heldoutCurve),
    slidingWindow: window,
  });
  if (panels.length === 0) throw new Error('the given files hold no SFT, validation, training or episode lines');
  const svg = renderPanels(panels, { title: o.title });
  mkdirSync(dirname(o.out), { recursive: true });
  if (o.out.endsWith('.svg')) {
    writeFileSync(o.out, svg);
    return o.out;
  }
  if (!o.out.endsWith('.png')) throw new Error(`--out must end in .svg or .png, got ${o.out}`);
  const exe = o.chromium ?? ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
  if (!exe) throw new Error('PNG output needs Chromium (apt-get install chromium, or --chromium PATH); or write .svg');
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: exe, args: ['--no-sandbox'] });
  try {
    const page = await browser.newPage({ viewport: { width: 1100, height: 400 }, deviceScaleFactor: 1.5 });
    await page.setContent(`<!doctype html><html><body style="margin:0">${svg}</body></html>`);
    await page.locator('svg').first().screenshot({ path: o.out });
  } finally {
    await browser.close();
  }
  return o.out;
}

export function register(program: Command): void {
  program
    .command('plot')
    .description('plot a run: SFT loss, held-out reward, training reward, episode lengths (SVG or PNG)')
    .option('--sft <file...>', 'SFT metrics.jsonl, or NAME=FILE for several runs in one panel')
    .option('--grpo <file>', 'GRPO metrics.jsonl (training steps and validations)')
    .option('--episodes <file>', 'GRPO episodes.jsonl (token-length histogram)')
    .option('--compare <name=file...>', 'extra held-out curves: NAME=metrics.jsonl')
    .option('--heldout <name=spec...>', 'held-out reward against wall time: NAME=MIN:PATH[,MIN:PATH…] (longrun eval --out folders or per-episode === lines files)')
    .option('--window <n>', 'mark the sliding window on the length histogram')
    .option('--title <text>', 'figure title')
    .option('--chromium <path>', 'Chromium executable for PNG output')
    .requiredOption('--out <file>', 'output .svg or .png')
    .action(async (opts: PlotOptions) => {
      console.log(`wrote ${await plotCommand(opts)}`);
    });
}
