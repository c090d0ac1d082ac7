/**
 * Training runs side by side (`longrun analyze runs`): from each GRPO/PPO run's metrics.jsonl, how many steps it took,
 * where its seconds went, its peak memory, its training reward and how much its gradient norm varied from step to
 * step. For comparing arms of an ablation that ran the same budget (docs/results/ablations/).
 */
import { readFileSync } from 'node:fs';

export interface RunSummary {
  name: string;
  steps: number;
  /** Summed `timing/step` (what trainer.maxWallSeconds is measured against). */
  stepSeconds: number;
  /** Mean seconds a step, and per phase (`timing/<phase>`, over every step; a phase a step skipped counts 0). */
  secondsPerStep: number;
  phases: Record<string, number>;
  /** Largest `perf/peak_memory_bytes` of any step. */
  peakMemoryBytes: number | null;
  /** Mean training `reward/mean` over all steps, and over the second half of them. */
  reward: number;
  rewardSecondHalf: number;
  /** `actor/grad_norm` over the steps that updated (norm > 0): mean, standard deviation, coefficient of variation. */
  gradNorm: { n: number; mean: number; sd: number; cv: number };
  /** The last step's `critic/explained_variance` (PPO with a critic), else null. */
  explainedVariance: number | null;
}

const PHASES = ['gen', 'logprob_check', 'old_log_prob', 'ref', 'values', 'critic', 'update'] as const;

function mean(xs: number[]): number {
  return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : Number.NaN;
}

/** Summarises the `kind: train` rows of one metrics.jsonl text; `name` labels it. */
export function summarizeRun(name: string, text: string): RunSummary {
  const rows: Record<string, unknown>[] = [];
  text.split('\n').forEach((line, i) => {
    if (!line.trim()) return;
    let row: unknown;
    try {
      row = JSON.parse(line);
    } catch {
      throw new Error(`${name}: line ${i + 1} is not JSON`);
    }
    if (typeof row !== 'object' || row === null) throw new Error(`${name}: line ${i + 1} is not a JSON object`);
    if ((row as { kind?: unknown }).kind === 'train') rows.push(row as Record<string, unknown>);
  });
  if (rows.length === 0) throw new Error(`${name}: no training steps (rows with kind "train")`);
  const num = (r: Record<string, unknown>, k: string): number | undefined => (typeof r[k] === 'number' ? (r[k] as number) : undefined);
  const seconds = rows.map((r) => num(r, 'timing/step') ?? 0);
  const rewards = rows.map((r) => num(r, 'reward/mean') ?? Number.NaN);
  const norms = rows.map((r) => num(r, 'actor/grad_norm') ?? 0).filter((g) => g > 0);
  const gMean = mean(norms);
  const sd = norms.length > 1 ? Math.sqrt(norms.reduce((a, g) => a + (g - gMean) ** 2, 0) / (norms.length - 1)) : Number.NaN;
  const phases: Record<string, number> = {};
  for (const p of PHASES) if (rows.some((r) => num(r, `timing/${p}`) !== undefined)) phases[p] = mean(rows.map((r) => num(r, `timing/${p}`) ?? 0));
  const peaks = rows.map((r) => num(r, 'perf/peak_memory_bytes')).filter((x): x is number => x !== undefined);
  const ev = num(rows[rows.length - 1], 'critic/explained_variance');
  const stepSeconds = seconds.reduce((a, b) => a + b, 0);
  return {
    name,
    steps: rows.length,
    stepSeconds,
    secondsPerStep: stepSeconds / rows.length,
    phases,
    peakMemoryBytes: peaks.length ? Math.max(...peaks) : null,
    reward: mean(rewards),
    rewardSecondHalf: mean(rewards.slice(Math.floor(rows.length / 2))),
    gradNorm: { n: norms.length, mean: gMean, sd, cv: sd / gMean },
    explainedVariance: ev ?? null,
  };
}

export function summarizeRunFile(file: string, name = file): RunSummary {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (e) {
    throw new Error(`cannot read metrics file ${file}: ${(e as Error).message}`, { cause: e });
  }
  return summarizeRun(name, text);
}

const f = (x: number, digits: number) => (Number.isFinite(x) ? x.toFixed(digits) : 'n/a');

/** The summaries as a Markdown table, one row per run. */
export function runSummaryTable(runs: readonly RunSummary[]): string {
  const phases = PHASES.filter((p) => runs.some((r) => r.phases[p] !== undefined));
  const head = ['run', 'steps', 'step s (sum)', 's/step', ...phases.map((p) => `${p} s/step`), 'peak MiB', 'train reward', '2nd half', 'grad norm mean ± sd (n)', 'grad norm cv', 'explained var.'];
  const lines = [`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`];
  for (const r of runs) {
    lines.push(`| ${[
      r.name, String(r.steps), f(r.stepSeconds, 0), f(r.secondsPerStep, 1), ...phases.map((p) => (r.phases[p] === undefined ? '' : f(r.phases[p], 1))),
      r.peakMemoryBytes === null ? 'n/a' : f(r.peakMemoryBytes / 2 ** 20, 0), f(r.reward, 3), f(r.rewardSecondHalf, 3),
      `${f(r.gradNorm.mean, 4)} ± ${f(r.gradNorm.sd, 4)} (${r.gradNorm.n})`, f(r.gradNorm.cv, 2), r.explainedVariance === null ? '' : f(r.explainedVariance, 3),
    ].join(' | ')} |`);
  }
  return `${lines.join('\n')}\n`;
}
