/**
 * What the dashboard page shows, computed from a run folder's files (run-files.ts finds them):
 *
 * - the headline: held-out reward (validation `val/reward_mean` ± `val/reward_se`) of every GRPO and RFT stage
 *   against the GRPO step and against the wall time of the steps (cumulative `timing/step`; validation time is not
 *   in it), with each `longrun eval` folder beside them as a baseline band, and the change from the first validation
 *   (before GRPO) to the last, paired over tasks when the per-episode records allow it;
 * - the training panels: reward, the share of zero-advantage groups, tool and parse error rates, episode lengths and
 *   turns (GRPO), loss and held-out loss (SFT);
 * - every stage's key numbers, and the episode sets the trajectory viewer offers (GRPO's episodes.jsonl by
 *   validation / training step, eval's trajectories.jsonl whole).
 * Shares are sent as percentages; every chart names its axes and units.
 */
import { join } from 'node:path';
import { computeMetrics } from '../../tooluse/metrics.ts';
import { discoverRun, readJson, readJsonl, summarizeTrajectory, type RunLayout, type Stage, type TrajectorySummary } from './run-files.ts';

type Row = Record<string, unknown>;

export interface ChartSeries {
  name: string;
  /** (x, y) */
  points: [number, number][];
  /** (x, low, high): the ±1 standard-error band. */
  band?: [number, number, number][];
  dashed?: boolean;
}

export interface Chart {
  id: string;
  title: string;
  xLabel: string;
  yLabel: string;
  yRange?: [number, number];
  series: ChartSeries[];
  /** Horizontal reference values (baselines measured once): y ± se. */
  references?: { name: string; y: number; se: number | null }[];
  note?: string;
}

export interface HeldOutPoint {
  step: number;
  /** Seconds of GRPO steps up to this validation (validation time excluded); null when the rows have no timing. */
  wallS: number | null;
  reward: number;
  se: number | null;
  success: number | null;
  /** Validation episodes and tasks, from the per-episode records when there are any. */
  episodes: number | null;
  tasks: number | null;
}

export interface HeldOutArm {
  id: string;
  label: string;
  kind: 'grpo' | 'rft';
  run: string;
  stage: string;
  file: string;
  points: HeldOutPoint[];
}

export interface Baseline {
  id: string;
  label: string;
  run: string;
  stage: string;
  agent: string | null;
  reward: number;
  se: number | null;
  success: number | null;
  episodes: number | null;
  tasks: number | null;
  trials: number | null;
}

export interface Change {
  arm: string;
  before: HeldOutPoint;
  after: HeldOutPoint;
  delta: number;
  /** Standard error of `delta`: paired over tasks (per-episode records) or from the two standard errors. */
  se: number | null;
  paired: boolean;
  tasks: number | null;
}

export interface StageFacts {
  run: string;
  name: string;
  kind: Stage['kind'];
  path: string;
  /** Label → value, in display order. */
  facts: [string, string][];
}

export interface EpisodeSet {
  id: string;
  label: string;
  file: string;
  kind?: string;
  step?: number;
  episodes: number;
  withMessages: number;
}

export interface Overview {
  dir: string;
  runs: { name: string; summary: Record<string, unknown> | null; stages: StageFacts[] }[];
  headline: { arms: HeldOutArm[]; baselines: Baseline[]; change: Change | null; charts: Chart[]; notes: string[] };
  panels: Chart[];
  /** Every (file, group, key) of the metrics files: the long tail behind the selector. */
  tail: { file: string; group: string; key: string }[];
  episodeSets: EpisodeSet[];
  layout: RunLayout;
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);
const f3 = (x: number) => x.toFixed(3);
const stageLabel = (s: Stage) => (s.run && s.run !== s.name ? `${s.run}/${s.name}` : s.name);

/** Seconds of one GRPO step: `timing/step`, or the sum of its phase timings in rows written before that key. */
function stepSeconds(row: Row): number | null {
  const t = num(row['timing/step']);
  if (t !== null) return t;
  const parts = Object.entries(row).filter(([k, v]) => k.startsWith('timing/') && typeof v === 'number').map(([, v]) => v as number);
  return parts.length ? parts.reduce((a, b) => a + b, 0) : null;
}

/** Wall-time unit for a range of seconds. */
export function wallUnit(maxS: number): { unit: string; div: number } {
  if (maxS >= 2 * 3600) return { unit: 'h', div: 3600 };
  if (maxS >= 120) return { unit: 'min', div: 60 };
  return { unit: 's', div: 1 };
}

function heldOut(stage: Stage, rows: readonly Row[], episodes: readonly Row[] | null): HeldOutArm {
  let wall = 0;
  let timed = true;
  const wallAt = new Map<number, number | null>();
  wallAt.set(0, 0);
  for (const r of rows) {
    if (r.kind !== 'train') continue;
    const s = stepSeconds(r);
    if (s === null) timed = false;
    else wall += s;
    if (typeof r.step === 'number') wallAt.set(r.step, timed ? wall : null);
  }
  const points: HeldOutPoint[] = [];
  for (const r of rows) {
    const reward = num(r['val/reward_mean']);
    if (r.kind !== 'val' || reward === null || typeof r.step !== 'number') continue;
    const eps = episodes?.filter((e) => e.kind === 'val' && e.step === r.step) ?? [];
    let se = num(r['val/reward_se']);
    if (se === null && eps.length) se = computeMetrics(eps.map((e) => ({ taskId: String(e.taskId), reward: Number(e.reward) }))).rewardStdErr;
    points.push({
      step: r.step, wallS: wallAt.get(r.step) ?? null, reward, se, success: num(r['val/success']),
      episodes: eps.length || null, tasks: eps.length ? new Set(eps.map((e) => e.taskId)).size : null,
    });
  }
  const kind = stage.kind === 'rft' ? 'rft' : 'grpo';
  const what = kind === 'rft' ? 'rejection-sampling fine-tuning' : 'GRPO';
  return { id: stage.metrics!, label: `${what} · ${stageLabel(stage)}`, kind, run: stage.run, stage: stage.name, file: stage.metrics!, points };
}

/** The change from the first validation to the last; paired over tasks when both have per-episode records. */
function change(arm: HeldOutArm, episodes: readonly Row[] | null): Change | null {
  if (arm.points.length < 2) return null;
  const before = arm.points[0], after = arm.points.at(-1)!;
  const delta = after.reward - before.reward;
  const perTask = (step: number) => {
    const m = new Map<string, number[]>();
    for (const e of episodes ?? []) if (e.kind === 'val' && e.step === step && typeof e.reward === 'number') m.set(String(e.taskId), [...(m.get(String(e.taskId)) ?? []), e.reward]);
    return new Map([...m].map(([k, v]) => [k, v.reduce((a, b) => a + b, 0) / v.length]));
  };
  const a = perTask(before.step), b = perTask(after.step);
  const common = [...a.keys()].filter((k) => b.has(k));
  if (common.length >= 2 && common.length === a.size && common.length === b.size) {
    const d = common.map((k) => b.get(k)! - a.get(k)!);
    const mean = d.reduce((x, y) => x + y, 0) / d.length;
    const variance = d.reduce((x, y) => x + (y - mean) ** 2, 0) / (d.length - 1);
    return { arm: arm.label, before, after, delta, se: Math.sqrt(variance / d.length), paired: true, tasks: common.length };
  }
  const se = before.se !== null && after.se !== null ? Math.sqrt(before.se ** 2 + after.se ** 2) : null;
  return { arm: arm.label, before, after, delta, se, paired: false, tasks: before.tasks };
}

function baseline(stage: Stage, results: Row): Baseline | null {
  const m = results.metrics as Row | undefined;
  const reward = num(m?.avgReward);
  if (!m || reward === null) return null;
  const config = (results.config ?? {}) as Row;
  const agent = typeof config.agent === 'string' ? config.agent : null;
  return {
    id: stage.results!, label: `eval · ${stageLabel(stage)}${agent ? ` (${agent})` : ''}`, run: stage.run, stage: stage.name, agent, reward,
    se: num(m.rewardStdErr), success: num(m.successRate), episodes: num(m.numEpisodes), tasks: num(m.numTasks), trials: num(config.trials),
  };
}

const series = (rows: readonly Row[], kind: string, key: string, scale = 1): [number, number][] =>
  rows.filter((r) => r.kind === kind && typeof r.step === 'number' && num(r[key]) !== null).map((r) => [r.step as number, (r[key] as number) * scale]);

function grpoPanels(arms: readonly { arm: HeldOutArm; rows: readonly Row[] }[]): Chart[] {
  const many = arms.length > 1;
  const name = (arm: HeldOutArm, what: string) => (many ? `${arm.label}: ${what}` : what);
  const chart = (id: string, title: string, yLabel: string, yRange: [number, number] | undefined, parts: [string, string, string, number, boolean][]): Chart => ({
    id, title, xLabel: 'GRPO step', yLabel, ...(yRange ? { yRange } : {}),
    series: arms.flatMap(({ arm, rows }) => parts.map(([what, kind, key, scale, dashed]) => ({ name: name(arm, what), points: series(rows, kind, key, scale), dashed })).filter((s) => s.points.length > 0)),
  });
  // Rewards are whatever the env's reward function returns: the 0–1 axis only when every training value lies in it.
  const trainRewards = arms.flatMap(({ rows }) => [...series(rows, 'train', 'reward/mean'), ...series(rows, 'train', 'success/mean')].map((p) => p[1]));
  const unit = withinUnit(trainRewards);
  return [
    chart('train-reward', 'Training reward', unit ? 'mean reward per episode (0–1)' : 'mean reward per episode', unit ? [0, 1] : undefined, [
      ['reward (training episodes)', 'train', 'reward/mean', 1, false],
      ['success (reward 1)', 'train', 'success/mean', 1, true],
    ]),
    chart('zero-adv', 'Groups with zero advantage (all rewards equal: no policy gradient)', '% of groups', [0, 100], [['zero-advantage groups', 'train', 'adv/zero_groups', 100, false]]),
    chart('errors', 'Tool errors (% of calls) and parse errors (% of turns)', '% of calls / of turns', undefined, [
      ['tool errors (training)', 'train', 'tool_error_rate', 100, false],
      ['parse errors (training)', 'train', 'parse_error_rate', 100, false],
      ['tool errors (held-out)', 'val', 'val/tool_error_rate', 100, true],
      ['parse errors (held-out)', 'val', 'val/parse_error_rate', 100, true],
    ]),
    chart('lengths', 'Episode length (mean per episode)', 'tokens after the prompt', undefined, [
      ['training', 'train', 'response_length/mean', 1, false],
      ['held-out', 'val', 'val/response_length/mean', 1, true],
    ]),
    chart('turns', 'Assistant turns (mean per episode)', 'turns', undefined, [
      ['training', 'train', 'turns/mean', 1, false],
      ['held-out', 'val', 'val/turns_mean', 1, true],
    ]),
  ].filter((c) => c.series.length > 0);
}

function sftPanel(stage: Stage, rows: readonly Row[]): Chart | null {
  const pick = (type: string, key: string): [number, number][] => rows.filter((r) => r.type === type && typeof r.step === 'number' && num(r[key]) !== null).map((r) => [r.step as number, r[key] as number]);
  const parts: ChartSeries[] = [
    { name: 'training loss (assistant tokens)', points: pick('train', 'loss') },
    { name: 'context loss (other tokens)', points: pick('train', 'contextLoss'), dashed: true },
    { name: 'held-out loss', points: pick('eval', 'evalLoss') },
  ].filter((s) => s.points.length > 0);
  if (!parts.length) return null;
  return { id: `sft:${stage.metrics}`, title: `SFT loss · ${stageLabel(stage)}`, xLabel: 'SFT step', yLabel: 'cross-entropy (nats per token)', series: parts };
}

function facts(stage: Stage, rows: readonly Row[] | null, results: Row | null, arm: HeldOutArm | undefined): [string, string][] {
  const out: [string, string][] = [];
  if (stage.kind === 'sft' && rows) {
    const train = rows.filter((r) => r.type === 'train'), ev = rows.filter((r) => r.type === 'eval');
    const last = train.at(-1);
    out.push(['steps', String(last?.step ?? 0)]);
    if (num(last?.loss) !== null) out.push(['final loss', f3(last!.loss as number)]);
    if (ev.length && num(ev.at(-1)!.evalLoss) !== null) out.push([`held-out loss (step ${ev.at(-1)!.step})`, f3(ev.at(-1)!.evalLoss as number)]);
    if (num(last?.tokensSeen) !== null) out.push(['tokens seen', String(last!.tokensSeen)]);
    const secs = train.reduce((a, r) => a + (num(r.tokens) !== null && num(r.tokensPerSec) ? (r.tokens as number) / (r.tokensPerSec as number) : 0), 0);
    if (secs > 0) out.push(['training time', formatSeconds(secs)]);
  } else if ((stage.kind === 'grpo' || stage.kind === 'rft') && rows) {
    const train = rows.filter((r) => r.kind === 'train');
    const last = train.at(-1);
    out.push(['steps', String(last?.step ?? 0)]);
    if (num(last?.['reward/mean']) !== null) out.push(['last training reward', f3(last!['reward/mean'] as number)]);
    const v = arm?.points.at(-1);
    if (v) out.push([`held-out reward (step ${v.step})`, `${f3(v.reward)}${v.se !== null ? ` ± ${f3(v.se)}` : ''}`]);
    out.push(['validations', String(arm?.points.length ?? 0)]);
    const wall = arm ? wallOf(rows) : null;
    if (wall !== null) out.push(['time in steps', formatSeconds(wall)]);
  } else if (stage.kind === 'data' && results) {
    const t = (results.tasks ?? {}) as Row;
    if (num(t.train) !== null) out.push(['training tasks', String(t.train)]);
    if (num(t.validation) !== null) out.push(['held-out tasks', String(t.validation)]);
    if (num(t.difficulty) !== null) out.push(['difficulty', String(t.difficulty)]);
    if (num(t.users) !== null) out.push(['world', `${t.users} users, ${t.orders} orders`]);
    const tok = (results.tokenizer ?? {}) as Row;
    if (num(tok.vocabSize) !== null) out.push(['tokenizer', `BPE, ${tok.vocabSize} tokens`]);
    if (num(results.seed) !== null) out.push(['seed', String(results.seed)]);
  } else if (stage.kind === 'eval' && results) {
    const m = results.metrics as Row;
    const config = (results.config ?? {}) as Row;
    if (typeof config.agent === 'string') out.push(['agent', config.agent]);
    out.push(['episodes', `${m.numEpisodes} (${m.numTasks} tasks × ${config.trials ?? '?'})`]);
    if (num(m.avgReward) !== null) out.push(['mean reward', `${f3(m.avgReward as number)}${num(m.rewardStdErr) !== null ? ` ± ${f3(m.rewardStdErr as number)}` : ''}`]);
    if (num(m.successRate) !== null) out.push(['success', f3(m.successRate as number)]);
    if (num(results.wallS) !== null) out.push(['wall time', formatSeconds(results.wallS as number)]);
  }
  if (stage.metrics) out.push(['metrics', stage.metrics]);
  if (stage.episodes) out.push(['episodes file', stage.episodes]);
  if (stage.results) out.push(['results', stage.results]);
  if (stage.prepare) out.push(['prepared', stage.prepare]);
  return out;
}

function wallOf(rows: readonly Row[]): number | null {
  let total = 0;
  for (const r of rows) {
    if (r.kind !== 'train') continue;
    const s = stepSeconds(r);
    if (s === null) return null;
    total += s;
  }
  return total;
}

/** Whether every mean lies in [0, 1]: then a reward chart keeps its 0–1 axis (widened by any ±1 s.e. band past it). */
export function withinUnit(values: readonly number[]): boolean {
  return values.every((v) => v >= 0 && v <= 1);
}

export function formatSeconds(s: number): string {
  if (s >= 2 * 3600) return `${(s / 3600).toFixed(1)} h`;
  if (s >= 120) return `${(s / 60).toFixed(1)} min`;
  return `${s.toFixed(1)} s`;
}

function episodeSets(stage: Stage, rows: readonly Row[]): EpisodeSet[] {
  const file = stage.episodes!;
  const grouped = rows.some((r) => (r.kind === 'val' || r.kind === 'train') && typeof r.step === 'number');
  if (!grouped) {
    return [{ id: file, label: stage.kind === 'eval' ? `eval · ${stageLabel(stage)}` : stageLabel(stage), file, episodes: rows.length, withMessages: rows.filter((r) => Array.isArray(r.messages)).length }];
  }
  const keys = new Map<string, { kind: string; step: number; episodes: number; withMessages: number }>();
  for (const r of rows) {
    if (typeof r.kind !== 'string' || typeof r.step !== 'number') continue;
    const k = `${r.kind}@${r.step}`;
    const e = keys.get(k) ?? { kind: r.kind, step: r.step, episodes: 0, withMessages: 0 };
    e.episodes++;
    if (Array.isArray(r.messages)) e.withMessages++;
    keys.set(k, e);
  }
  const valSteps = [...keys.values()].filter((e) => e.kind === 'val').map((e) => e.step);
  const firstVal = Math.min(...valSteps);
  const lastVal = Math.max(...valSteps);
  const what = stage.kind === 'rft' ? 'RFT' : 'GRPO';
  return [...keys.values()]
    .sort((a, b) => (a.kind === b.kind ? a.step - b.step : a.kind === 'val' ? -1 : 1))
    .map((e) => ({
      id: `${file}#${e.kind}@${e.step}`,
      label: e.kind === 'val'
        ? `held-out · ${stageLabel(stage)} step ${e.step}${e.step === firstVal && e.step === 0 ? ` (before ${what})` : e.step === lastVal ? ` (after ${what})` : ''}`
        : `training · ${stageLabel(stage)} step ${e.step}`,
      file, kind: e.kind, step: e.step, episodes: e.episodes, withMessages: e.withMessages,
    }));
}

/** The episodes of one set (`EpisodeSet.id`: FILE or FILE#KIND@STEP), summarized; `index` is the line in the file. */
export function setEpisodes(rows: readonly Row[], kind?: string, step?: number): TrajectorySummary[] {
  const out: TrajectorySummary[] = [];
  rows.forEach((r, i) => {
    if (kind !== undefined && (r.kind !== kind || r.step !== step)) return;
    out.push(summarizeTrajectory(r, i));
  });
  return out;
}

export function parseSetId(id: string): { file: string; kind?: string; step?: number } {
  const m = /^(.*)#(train|val)@(\d+)$/.exec(id);
  return m ? { file: m[1], kind: m[2], step: Number(m[3]) } : { file: id };
}

export function buildOverview(dir: string, shownDir: string = dir): Overview {
  const layout = discoverRun(dir);
  const read = (rel: string) => readJsonl(join(dir, rel)).rows;
  const arms: { arm: HeldOutArm; rows: Row[]; episodes: Row[] | null }[] = [];
  const baselines: Baseline[] = [];
  const panels: Chart[] = [];
  const sets: EpisodeSet[] = [];
  const notes: string[] = [];
  const tail: Overview['tail'] = [];
  const runs: Overview['runs'] = [];
  for (const run of layout.runs) {
    const stageFacts: StageFacts[] = [];
    for (const stage of run.stages) {
      const rows = stage.metrics ? read(stage.metrics) : null;
      const episodes = stage.episodes ? read(stage.episodes) : null;
      if (stage.episodes && episodes) {
        sets.push(...episodeSets(stage, episodes));
      }
      let results: Row | null = null;
      if (stage.results ?? stage.prepare) {
        try {
          results = readJson(join(dir, (stage.results ?? stage.prepare)!)) as Row;
        } catch {
          results = null;
        }
      }
      let arm: HeldOutArm | undefined;
      if ((stage.kind === 'grpo' || stage.kind === 'rft') && rows) {
        arm = heldOut(stage, rows, episodes);
        arms.push({ arm, rows, episodes });
      }
      if (stage.kind === 'sft' && rows) {
        const p = sftPanel(stage, rows);
        if (p) panels.push(p);
      }
      if (stage.kind === 'eval' && results) {
        const b = baseline(stage, results);
        if (b) baselines.push(b);
      }
      if (rows && stage.metrics) {
        const seen = new Set<string>();
        for (const r of rows) {
          const group = typeof r.kind === 'string' ? r.kind : typeof r.type === 'string' ? r.type : 'all';
          for (const [k, v] of Object.entries(r)) {
            if (k === 'step' || typeof v !== 'number' || seen.has(`${group}\u0000${k}`)) continue;
            seen.add(`${group}\u0000${k}`);
            tail.push({ file: stage.metrics, group, key: k });
          }
        }
      }
      stageFacts.push({ run: stage.run, name: stage.name, kind: stage.kind, path: stage.path, facts: facts(stage, rows, results, arm) });
    }
    let summary: Record<string, unknown> | null = null;
    if (run.summary) {
      try {
        const s = readJson(join(dir, run.summary)) as Record<string, unknown>;
        if (s && typeof s.wallSeconds === 'number') summary = s;
      } catch {
        // not the demo's summary
      }
    }
    runs.push({ name: run.name, summary, stages: stageFacts });
  }
  const sftOnly = layout.runs.filter((r) => r.stages.some((s) => s.kind === 'sft') && r.stages.every((s) => s.kind === 'sft' || s.kind === 'data'));
  if (arms.length && sftOnly.length) {
    notes.push(`${sftOnly.map((r) => r.name || 'this run').join(', ')}: SFT only, so no held-out reward in its metrics; ` +
      'evaluate its checkpoints with `longrun eval --out` in this folder to place them beside GRPO.');
  }
  // The headline shows the stages with held-out measurements; the training panels every GRPO / RFT stage.
  const measured = arms.filter((a) => a.arm.points.length > 0);
  const all = measured.map((a) => a.arm);
  const main = measured.find((a) => a.arm.kind === 'grpo') ?? measured[0];
  const ch = main ? change(main.arm, main.episodes) : null;
  const maxWall = Math.max(0, ...all.flatMap((a) => a.points.map((p) => p.wallS ?? 0)));
  const { unit, div } = wallUnit(maxWall);
  const references = baselines.map((b) => ({ name: b.label, y: b.reward, se: b.se }));
  const bySeries = (x: (p: HeldOutPoint) => number | null): ChartSeries[] => all.map((a) => {
    const pts = a.points.filter((p) => x(p) !== null);
    return {
      name: a.label,
      points: pts.map((p): [number, number] => [x(p)!, p.reward]),
      band: pts.every((p) => p.se !== null) ? pts.map((p): [number, number, number] => [x(p)!, p.reward - p.se!, p.reward + p.se!]) : undefined,
    };
  }).filter((s) => s.points.length > 0);
  const charts: Chart[] = [];
  if (all.length) {
    // The 0–1 axis only when every held-out mean and baseline lies in it; otherwise the data set the range.
    const values = [...all.flatMap((a) => a.points.map((p) => p.reward)), ...references.map((r) => r.y)];
    const unitScale = withinUnit(values);
    const yLabel = unitScale ? 'mean reward per task (0–1), ± 1 s.e.' : 'mean reward per task, ± 1 s.e.';
    const yRange: { yRange?: [number, number] } = unitScale ? { yRange: [0, 1] } : {};
    charts.push({ id: 'heldout-step', title: 'Held-out reward by GRPO step', xLabel: 'GRPO step', yLabel, ...yRange, series: bySeries((p) => p.step), references });
    const timed = bySeries((p) => (p.wallS === null ? null : p.wallS / div));
    if (timed.length) {
      charts.push({ id: 'heldout-wall', title: 'Held-out reward by wall time', xLabel: `wall time of the training steps (${unit})`, yLabel, ...yRange, series: timed, references, note: 'validation time is not counted' });
    }
  }
  panels.unshift(...grpoPanels(arms));
  return { dir: shownDir, runs, headline: { arms: all, baselines, change: ch, charts, notes }, panels, tail, episodeSets: sets, layout };
}
