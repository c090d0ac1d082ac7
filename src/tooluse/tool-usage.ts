/**
 * How an agent used its tools in recorded episodes, for any env: per episode the tool calls it made, which of them
 * failed, which tool it called first, and (for rewards that compare a final state, `rewards.finalState`) whether the
 * end state matched. `longrun analyze tools EVAL_DIR…` prints it for eval folders side by side, so a change in
 * behaviour that the mean reward hides (an unneeded lookup dropped, fewer failed calls) shows.
 */
import { existsSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';

/** The parts of a `longrun eval --out` trajectories.jsonl row this reads. */
interface UsageRow {
  status?: string;
  reward?: unknown;
  rewardInfo?: { info?: { match?: unknown } } | null;
  messages?: { role: string; toolCalls?: { name: string }[] | null; error?: boolean }[];
}

export interface ToolUsage {
  name: string;
  episodes: number;
  meanReward: number;
  /** Episodes whose reward info says the final state matched (`info.match`); null when no row carries it. */
  finalStateMatch: number | null;
  callsPerEpisode: number;
  errorsPerEpisode: number;
  /** Episodes with no tool call. */
  noCall: number;
  /** Per tool: calls, failed calls (tool messages marked as errors), and episodes that called it first. */
  tools: Map<string, { calls: number; errors: number; first: number }>;
}

/** Reads an eval folder (or its trajectories.jsonl); rows that did not finish (`status` other than ok) are left out. */
export function toolUsageOf(path: string): ToolUsage {
  const file = path.endsWith('.jsonl') ? path : join(path, 'trajectories.jsonl');
  if (!existsSync(file)) throw new Error(`${path}: no trajectories.jsonl (not a longrun eval --out folder)`);
  const usage: ToolUsage = { name: basename(path.endsWith('.jsonl') ? dirname(path) : path), episodes: 0, meanReward: 0, finalStateMatch: null, callsPerEpisode: 0, errorsPerEpisode: 0, noCall: 0, tools: new Map() };
  let rewardSum = 0, calls = 0, errors = 0, matched = 0, withMatch = 0;
  readFileSync(file, 'utf8').split('\n').forEach((line, n) => {
    if (!line.trim()) return;
    let r: UsageRow;
    try {
      r = JSON.parse(line) as UsageRow;
    } catch (e) {
      throw new Error(`${file}:${n + 1}: not JSON (${(e as Error).message})`, { cause: e });
    }
    if (r.status !== undefined && r.status !== 'ok') return;
    if (typeof r.reward !== 'number' || !Number.isFinite(r.reward)) throw new Error(`${file}:${n + 1}: a finished row needs a numeric reward`);
    if (!Array.isArray(r.messages)) throw new Error(`${file}:${n + 1}: the row has no messages (tool use cannot be read)`);
    usage.episodes++;
    rewardSum += r.reward;
    const match = r.rewardInfo?.info?.match;
    if (typeof match === 'boolean') {
      withMatch++;
      if (match) matched++;
    }
    let first: string | undefined;
    const msgs = r.messages;
    for (let i = 0; i < msgs.length; i++) {
      const m = msgs[i]!;
      if (m.role !== 'assistant' || !m.toolCalls) continue;
      // The tool results follow the call message in order, one per call.
      m.toolCalls.forEach((c, k) => {
        const t = usage.tools.get(c.name) ?? { calls: 0, errors: 0, first: 0 };
        t.calls++;
        calls++;
        const result = msgs[i + 1 + k];
        if (result?.role === 'tool' && result.error === true) {
          t.errors++;
          errors++;
        }
        if (first === undefined) {
          first = c.name;
          t.first++;
        }
        usage.tools.set(c.name, t);
      });
    }
    if (first === undefined) usage.noCall++;
  });
  if (usage.episodes === 0) throw new Error(`${file}: no finished episodes`);
  usage.meanReward = rewardSum / usage.episodes;
  usage.callsPerEpisode = calls / usage.episodes;
  usage.errorsPerEpisode = errors / usage.episodes;
  usage.finalStateMatch = withMatch > 0 ? matched / withMatch : null;
  return usage;
}

/** Runs side by side: one summary row each, then per tool calls per episode, failed share and first-call share. */
export function formatToolUsage(runs: readonly ToolUsage[]): string {
  const f3 = (x: number) => x.toFixed(3);
  const out = ['| run | episodes | mean reward | final state matched | tool calls / episode | failed calls / episode | episodes without a call |', '| --- | ---: | ---: | ---: | ---: | ---: | ---: |'];
  for (const u of runs) out.push(`| ${u.name} | ${u.episodes} | ${f3(u.meanReward)} | ${u.finalStateMatch === null ? '—' : f3(u.finalStateMatch)} | ${u.callsPerEpisode.toFixed(2)} | ${u.errorsPerEpisode.toFixed(2)} | ${u.noCall} |`);
  const names = [...new Set(runs.flatMap((u) => [...u.tools.keys()]))].sort();
  out.push('', `| tool | ${runs.map((u) => `${u.name}: calls / episode, failed, called first`).join(' | ')} |`, `| --- |${runs.map(() => ' --- |').join('')}`);
  for (const name of names) {
    const cells = runs.map((u) => {
      const t = u.tools.get(name);
      if (!t) return '0';
      return `${(t.calls / u.episodes).toFixed(2)}, ${t.calls ? f3(t.errors / t.calls) : '—'}, ${f3(t.first / u.episodes)}`;
    });
    out.push(`| ${name} | ${cells.join(' | ')} |`);
  }
  return out.join('\n') + '\n';
}
