/**
 * What the dashboard reads from a run folder, and how it finds it. Our commands write these shapes:
 *
 *   longrun demo / longrun train   RUN/sft/metrics.jsonl (rows `type` train / eval), RUN/curriculum/stage-N/metrics.jsonl,
 *                                  RUN/grpo/metrics.jsonl (rows `kind` train / val) and RUN/grpo/episodes.jsonl
 *                                  (one line per episode, some with the conversation), RUN/summary.json (the demo)
 *   longrun eval --out DIR         DIR/config.json, DIR/results.json, DIR/trajectories.jsonl (one episode per line)
 *
 * `discoverRun` walks the folder (at most three levels; checkpoints, model, policy and data folders are skipped) and
 * returns every folder holding such files as a stage, and a run's `data/prepare.json` as its data stage. When the folder is itself a run (it holds a stage, or `sft/`,
 * `grpo/` or `curriculum/` stages), every stage belongs to it; otherwise each child folder is a run of its own
 * (`runs/`: the GRPO run beside its baselines). A stage's kind comes from its rows: SFT, GRPO, or online
 * rejection-sampling fine-tuning (GRPO rows with `rft/` keys), eval from results.json.
 * Files are named by their path relative to the run folder; the server only opens names this listing returned, so
 * no path ever comes from the client. A torn or non-JSON line is skipped and counted.
 */
import { closeSync, existsSync, openSync, readdirSync, readFileSync, readSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';

/** The largest file read whole (bytes); bigger ones are refused with a clear error rather than exhausting memory. */
export const MAX_FILE_BYTES = 256 * 1024 * 1024;

/** Folders discovery does not enter: weights, optimizer state and data, never run output the page shows. */
const SKIP_DIRS = /^(checkpoints|step-\d{8}|step_\d+|model|policy|data|node_modules|\..*)$/;
const MAX_DEPTH = 3;
/** Entries looked at per folder (a folder of thousands of files is not a run folder). */
const MAX_ENTRIES = 2000;

export type StageKind = 'data' | 'sft' | 'grpo' | 'rft' | 'eval' | 'files';

export interface Stage {
  /** The stage folder, relative to the run folder ('' for the folder itself). */
  path: string;
  /** The run it belongs to: '' (the folder given) or a child folder's name. */
  run: string;
  /** The stage's name: its path inside its run ('sft', 'grpo', 'curriculum/stage-1'), or the folder's name. */
  name: string;
  kind: StageKind;
  /** Metrics JSONL (relative path), when the stage has one. */
  metrics?: string;
  /** Per-episode JSONL: GRPO's episodes.jsonl or eval's trajectories.jsonl (relative path). */
  episodes?: string;
  /** longrun eval's results.json (relative path). */
  results?: string;
  /** The data stage's prepare.json (relative path). */
  prepare?: string;
}

export interface RunLayout {
  /** Runs in display order, each with its stages in pipeline order. */
  runs: { name: string; stages: Stage[]; summary?: string }[];
  /** Every metrics file and every per-episode file, as relative paths (what `?file=` may name). */
  metrics: string[];
  trajectories: string[];
}

const METRICS_FILE = /metric/i;
const EPISODES_FILE = /traj|rollout|episode/i;

/** The first complete lines of a file (at most `bytes`), parsed; for classifying a file without reading it whole. */
export function headRows(path: string, bytes = 64 * 1024): Record<string, unknown>[] {
  const fd = openSync(path, 'r');
  try {
    const buf = Buffer.alloc(bytes);
    const n = readSync(fd, buf, 0, bytes, 0);
    const text = buf.subarray(0, n).toString('utf8');
    const lines = text.split('\n');
    if (n === bytes) lines.pop(); // the last line may be cut
    return parseLines(lines).rows;
  } finally {
    closeSync(fd);
  }
}

function parseLines(lines: readonly string[]): { rows: Record<string, unknown>[]; skipped: number } {
  const rows: Record<string, unknown>[] = [];
  let skipped = 0;
  for (const line of lines) {
    if (line.trim() === '') continue;
    try {
      const v: unknown = JSON.parse(line);
      if (typeof v === 'object' && v !== null && !Array.isArray(v)) rows.push(v as Record<string, unknown>);
      else skipped++;
    } catch {
      skipped++;
    }
  }
  return { rows, skipped };
}

export function readJsonl(path: string): { rows: Record<string, unknown>[]; skipped: number } {
  const size = statSync(path).size;
  if (size > MAX_FILE_BYTES) throw new Error(`${path} is ${size} bytes; the dashboard reads files up to ${MAX_FILE_BYTES} bytes`);
  return parseLines(readFileSync(path, 'utf8').split('\n'));
}

export function readJson(path: string): unknown {
  const size = statSync(path).size;
  if (size > MAX_FILE_BYTES) throw new Error(`${path} is ${size} bytes; the dashboard reads files up to ${MAX_FILE_BYTES} bytes`);
  return JSON.parse(readFileSync(path, 'utf8'));
}

/** SFT (rows `type`), GRPO or RFT (rows `kind`; RFT's training rows carry `rft/` keys), from the first rows. */
export function metricsKind(rows: readonly Record<string, unknown>[]): 'sft' | 'grpo' | 'rft' | 'files' {
  if (rows.some((r) => r.kind === 'train' && Object.keys(r).some((k) => k.startsWith('rft/')))) return 'rft';
  if (rows.some((r) => r.kind === 'train' || r.kind === 'val')) return 'grpo';
  if (rows.some((r) => r.type === 'train' || r.type === 'eval')) return 'sft';
  return 'files';
}

const rel = (...parts: string[]) => parts.filter((p) => p !== '').join('/');

/** A file's run name in a folder of several runs' files: `grpo-x.metrics.jsonl` → `grpo-x`; `metrics.jsonl` → ''. */
const filePrefix = (n: string) => n.replace(/\.jsonl$/, '').replace(/(^|[._-])?(metrics?|episodes?|trajector(y|ies)|rollouts?)$/i, '');

type Found = Omit<Stage, 'run' | 'name'> & { file?: string };

/**
 * The stages of one folder: one, or one per file prefix when the folder holds several runs' files side by side
 * (`a.metrics.jsonl`, `a.episodes.jsonl`, `b.metrics.jsonl`).
 */
function folderStages(dir: string, path: string, names: readonly string[]): Found[] {
  const files = names.filter((n) => {
    try {
      return statSync(join(dir, path, n)).isFile();
    } catch {
      return false;
    }
  });
  const jsonl = files.filter((n) => n.endsWith('.jsonl') && (METRICS_FILE.test(n) || EPISODES_FILE.test(n))).sort();
  let results: string | undefined;
  if (files.includes('results.json')) {
    try {
      const r = readJson(join(dir, path, 'results.json')) as { metrics?: unknown };
      if (r && typeof r === 'object' && typeof r.metrics === 'object') results = 'results.json';
    } catch {
      // not an eval's results file
    }
  }
  const prefixes = [...new Set(jsonl.map(filePrefix))];
  if (prefixes.length === 0 && !results) return [];
  if (prefixes.length === 0) prefixes.push('');
  return prefixes.map((prefix) => {
    const own = prefixes.length === 1 ? jsonl : jsonl.filter((n) => filePrefix(n) === prefix);
    const metrics = own.find((n) => METRICS_FILE.test(n));
    // GRPO's episodes.jsonl before other per-episode files; eval's trajectories.jsonl is the one in its folder.
    const episodes = own.find((n) => /^episodes?\.jsonl$/.test(n)) ?? own.find((n) => n === 'trajectories.jsonl') ?? own.find((n) => EPISODES_FILE.test(n) && n !== metrics);
    const res = prefixes.length === 1 ? results : undefined;
    let kind: StageKind = res ? 'eval' : 'files';
    if (metrics && !res) kind = metricsKind(headRows(join(dir, path, metrics)));
    return {
      path, kind,
      ...(prefixes.length > 1 ? { file: prefix } : {}),
      ...(metrics ? { metrics: rel(path, metrics) } : {}),
      ...(episodes ? { episodes: rel(path, episodes) } : {}),
      ...(res ? { results: rel(path, res) } : {}),
    };
  });
}

const STAGE_ORDER: Record<StageKind, number> = { data: 0, sft: 1, grpo: 2, rft: 2, eval: 3, files: 4 };
const RUN_STAGE_DIRS = new Set(['sft', 'grpo', 'curriculum']);

/** The run folder's stages and files (see the file comment). */
export function discoverRun(dir: string): RunLayout {
  let top: string[];
  try {
    top = readdirSync(dir);
  } catch (err) {
    throw new Error(`Cannot read the run folder ${dir}: ${(err as Error).message}`, { cause: err });
  }
  const found: Found[] = [];
  const walk = (path: string, depth: number, names: string[]) => {
    found.push(...folderStages(dir, path, names.slice(0, MAX_ENTRIES)));
    if (depth >= MAX_DEPTH) return;
    for (const n of names.slice(0, MAX_ENTRIES).sort()) {
      if (SKIP_DIRS.test(n)) continue;
      const p = rel(path, n);
      let children: string[];
      try {
        if (!statSync(join(dir, p)).isDirectory()) continue;
        children = readdirSync(join(dir, p));
      } catch {
        continue;
      }
      walk(p, depth + 1, children);
    }
  };
  walk('', 0, top);
  const isRun = found.some((s) => s.path === '' || RUN_STAGE_DIRS.has(s.path.split('/')[0]));
  const stages: Stage[] = found.map(({ file, ...s }) => {
    const run = isRun ? '' : s.path.split('/')[0];
    const inRun = isRun ? s.path : s.path.split('/').slice(1).join('/');
    const name = inRun === '' ? (s.path === '' ? basename(dir) : basename(s.path)) : inRun;
    return { ...s, run, name: file !== undefined ? (inRun === '' ? file || name : `${inRun}/${file || '(unnamed)'}`) : name };
  });
  const runNames = [...new Set(stages.map((s) => s.run))];
  // The data stage (longrun train's retail.prepare section: task sets, expert corpus, tokenizer) is a folder discovery skips.
  for (const run of runNames) {
    if (existsSync(join(dir, run, 'data', 'prepare.json'))) stages.push({ path: rel(run, 'data'), run, name: 'data', kind: 'data', prepare: rel(run, 'data', 'prepare.json') });
  }
  const runs = runNames.map((name) => {
    const own = stages.filter((s) => s.run === name).sort((a, b) => STAGE_ORDER[a.kind] - STAGE_ORDER[b.kind] || a.name.localeCompare(b.name, 'en', { numeric: true }));
    const summary = join(dir, name, 'summary.json');
    return { name, stages: own, summary: existsSync(summary) ? rel(name, 'summary.json') : undefined };
  });
  // Runs with a GRPO stage first (the headline's subject), then baselines, then evals and the rest.
  const rank = (r: { stages: Stage[] }) => Math.min(...r.stages.map((s) => (s.kind === 'grpo' ? 0 : s.kind === 'rft' ? 1 : s.kind === 'sft' ? 2 : s.kind === 'data' ? 4 : 3)));
  runs.sort((a, b) => rank(a) - rank(b) || a.name.localeCompare(b.name, 'en', { numeric: true }));
  return {
    runs: runs.map((r) => ({ name: r.name, stages: r.stages, ...(r.summary ? { summary: r.summary } : {}) })),
    metrics: stages.flatMap((s) => (s.metrics ? [s.metrics] : [])).sort(),
    trajectories: stages.flatMap((s) => (s.episodes ? [s.episodes] : [])).sort(),
  };
}

export interface MetricSeries {
  /** `kind` / `type` of the rows (train, eval, val…), or `all`. */
  group: string;
  key: string;
  points: [number, number][];
}

/** Numeric fields per group as (step, value) series; rows without `step` use their position. */
export function metricSeries(rows: readonly Record<string, unknown>[]): MetricSeries[] {
  const series = new Map<string, MetricSeries>();
  rows.forEach((row, i) => {
    const group = typeof row.kind === 'string' ? row.kind : typeof row.type === 'string' ? row.type : 'all';
    const step = typeof row.step === 'number' && Number.isFinite(row.step) ? row.step : i;
    for (const [key, value] of Object.entries(row)) {
      if (key === 'step' || typeof value !== 'number' || !Number.isFinite(value)) continue;
      const id = `${group}\u0000${key}`;
      let s = series.get(id);
      if (!s) series.set(id, (s = { group, key, points: [] }));
      s.points.push([step, value]);
    }
  });
  return [...series.values()];
}

export interface TrajectorySummary {
  index: number;
  taskId: string | null;
  /** The episode's place among the task's samples: eval's `trial`, GRPO's `sample`. */
  trial: number | null;
  reward: number | null;
  status: string | null;
  terminationReason: string | null;
  turns: number;
  /** GRPO episode records: `train` or `val`, and the step. */
  kind?: string;
  step?: number;
  /** Whether the record holds the conversation. */
  hasMessages?: boolean;
}

export function summarizeTrajectory(row: Record<string, unknown>, index: number): TrajectorySummary {
  const str = (v: unknown) => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : null);
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  const out: TrajectorySummary = {
    index,
    taskId: str(row.taskId ?? row.task_id),
    trial: num(row.trial ?? row.sample),
    reward: num(row.reward),
    status: str(row.status),
    terminationReason: str(row.terminationReason ?? row.termination_reason ?? row.termination),
    turns: Array.isArray(row.messages) ? row.messages.length : 0,
  };
  if (typeof row.kind === 'string') out.kind = row.kind;
  if (typeof row.step === 'number') out.step = row.step;
  if (typeof row.kind === 'string' || typeof row.step === 'number') out.hasMessages = Array.isArray(row.messages);
  return out;
}
