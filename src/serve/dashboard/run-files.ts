/**
 * What the dashboard reads from a run folder: metrics JSONL files (the trainer's `metricsFile`, SFT's
 * `metrics.jsonl`: one object per step, numbers plotted against `step`) and trajectory JSONL files (`longrun eval`'s
 * `trajectories.jsonl` and the like: one episode per line with `messages`). Files are found by name in the folder
 * itself (no recursion, no paths from the client); a torn or non-JSON line is skipped and counted.
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

export interface RunFiles {
  metrics: string[];
  trajectories: string[];
}

/** The largest file read whole (bytes); bigger ones are refused with a clear error rather than exhausting memory. */
export const MAX_FILE_BYTES = 256 * 1024 * 1024;

export function listRunFiles(dir: string): RunFiles {
  let names: string[];
  try {
    names = readdirSync(dir).filter((n) => n.endsWith('.jsonl') && statSync(join(dir, n)).isFile()).sort();
  } catch (err) {
    throw new Error(`Cannot read the run folder ${dir}: ${(err as Error).message}`, { cause: err });
  }
  return { metrics: names.filter((n) => /metric/i.test(n)), trajectories: names.filter((n) => /traj|rollout|episode/i.test(n)) };
}

export function readJsonl(path: string): { rows: Record<string, unknown>[]; skipped: number } {
  const size = statSync(path).size;
  if (size > MAX_FILE_BYTES) throw new Error(`${path} is ${size} bytes; the dashboard reads files up to ${MAX_FILE_BYTES} bytes`);
  const rows: Record<string, unknown>[] = [];
  let skipped = 0;
  for (const line of readFileSync(path, 'utf8').split('\n')) {
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
  trial: number | null;
  reward: number | null;
  status: string | null;
  terminationReason: string | null;
  turns: number;
}

export function summarizeTrajectory(row: Record<string, unknown>, index: number): TrajectorySummary {
  const str = (v: unknown) => (typeof v === 'string' ? v : typeof v === 'number' ? String(v) : null);
  const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
  return {
    index,
    taskId: str(row.taskId ?? row.task_id),
    trial: num(row.trial),
    reward: num(row.reward),
    status: str(row.status),
    terminationReason: str(row.terminationReason ?? row.termination_reason),
    turns: Array.isArray(row.messages) ? row.messages.length : 0,
  };
}
