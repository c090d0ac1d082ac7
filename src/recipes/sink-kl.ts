/**
 * `longrun analyze sink-kl`: how far a checkpoint's next-token distributions move when its attention sinks are
 * ignored (ModelOptions.sinks 'ignore', what an engine that drops them serves), on recorded conversations.
 *
 * The conversations are the token ids an eval folder saved (`longrun eval --agent checkpoint --save-tokens`): each
 * episode's prompt and response are run teacher-forced through the model twice, with exact sinks and with sinks
 * ignored, and at every position the KL divergence KL(p_exact ‖ p_ignored) of the next-token distributions is taken
 * (temperature 1, full vocabulary). Reported over the agent's sampled tokens (the positions the policy generates)
 * and over every position, with the mean over episodes ± its standard error, the share of positions whose most likely
 * token is the same, the mean |Δ log p| of the token actually there, and the mean KL by context position.
 */
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { loadModel } from '../model/checkpoint/index.ts';
import type { GptOssModel } from '../model/model.ts';

export interface SinkKlOptions {
  /** A gpt-oss checkpoint folder. */
  checkpoint: string;
  /** A `longrun eval --out` folder run with --save-tokens, or its trajectories.jsonl. */
  episodes: string;
  /** Episodes used (default 16): trial 0 of each task first, then trial 1, … in task order. */
  maxEpisodes?: number;
}

/** Statistics of one set of positions (the agent's sampled tokens, or every position). */
export interface KlStats {
  positions: number;
  /** Mean KL per position, all episodes pooled (nats). */
  meanKl: number;
  /** Mean over episodes of each episode's mean KL, and its standard error over episodes. */
  episodeMeanKl: number;
  episodeMeanKlSe: number;
  medianKl: number;
  p90Kl: number;
  maxKl: number;
  /** Share of positions whose arg-max token is the same with and without sinks. */
  top1Agreement: number;
  /** Mean |log p_exact(x) − log p_ignored(x)| of the token x actually at the next position. */
  meanAbsDeltaLogp: number;
}

export interface SinkKlResult {
  checkpoint: string;
  episodes: string;
  used: { taskId: string; trial: number; tokens: number; agentTokens: number; meanKl: number }[];
  agent: KlStats;
  all: KlStats;
  /** Mean KL at the agent's positions by context position [from, to) (to null: to the end). */
  byContext: { from: number; to: number | null; positions: number; meanKl: number }[];
}

interface TokenRow { taskId: string; trial: number; tokens?: { prompt?: unknown; response?: unknown; responseMask?: unknown } }

/** The episodes of an eval folder (or trajectories.jsonl) that carry token ids, in the order sink-kl uses them. */
export function readTokenEpisodes(path: string): { taskId: string; trial: number; prompt: number[]; response: number[]; mask: number[] }[] {
  const file = existsSync(path) && statSync(path).isDirectory() ? join(path, 'trajectories.jsonl') : path;
  if (!existsSync(file)) throw new Error(`sink-kl: ${file} does not exist (pass a longrun eval --out folder or its trajectories.jsonl)`);
  const rows = readFileSync(file, 'utf8').split('\n').filter((l) => l.trim()).map((l, i) => {
    try {
      return JSON.parse(l) as TokenRow;
    } catch (e) {
      throw new Error(`sink-kl: ${file} line ${i + 1} is not JSON (${(e as Error).message})`, { cause: e });
    }
  });
  const ints = (x: unknown): x is number[] => Array.isArray(x) && x.every((v) => Number.isInteger(v));
  const out = rows.flatMap((r) => {
    const t = r.tokens;
    if (!t || !ints(t.prompt) || !ints(t.response)) return [];
    const mask = ints(t.responseMask) && t.responseMask.length === t.response.length ? t.responseMask : t.response.map(() => 1);
    return [{ taskId: String(r.taskId), trial: Number(r.trial ?? 0), prompt: t.prompt, response: t.response, mask }];
  });
  if (out.length === 0) throw new Error(`sink-kl: no episode in ${file} carries token ids; evaluate with \`longrun eval --agent checkpoint --save-tokens\``);
  const taskNo = (id: string) => Number(/(\d+)$/.exec(id)?.[1] ?? NaN);
  return out.sort((a, b) => a.trial - b.trial || taskNo(a.taskId) - taskNo(b.taskId) || a.taskId.localeCompare(b.taskId));
}

/** Full-vocabulary log-probs [T·V] of a sequence (row j: the distribution of token j + 1). */
function logprobRows(model: GptOssModel, tokens: Int32Array): Float32Array {
  const r = model.logprobs({ tokens }, { fullLogprobs: true });
  const a = r.fullLogprobs!.toArray();
  r.fullLogprobs!.dispose();
  return a;
}

function stats(kls: number[], agree: number, absDlp: number, perEpisode: number[]): KlStats {
  const sorted = Float64Array.from(kls).sort();
  const q = (p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] : NaN);
  const n = perEpisode.length;
  const m = perEpisode.reduce((a, x) => a + x, 0) / n;
  const sd = n > 1 ? Math.sqrt(perEpisode.reduce((a, x) => a + (x - m) ** 2, 0) / (n - 1)) : NaN;
  return {
    positions: kls.length, meanKl: kls.reduce((a, x) => a + x, 0) / kls.length, episodeMeanKl: m, episodeMeanKlSe: sd / Math.sqrt(n),
    medianKl: q(0.5), p90Kl: q(0.9), maxKl: sorted.length ? sorted[sorted.length - 1] : NaN, top1Agreement: agree / kls.length, meanAbsDeltaLogp: absDlp / kls.length,
  };
}

const CONTEXT_BINS = [0, 1024, 2048, 4096, Infinity];

export function sinkKl(o: SinkKlOptions): SinkKlResult {
  const max = o.maxEpisodes ?? 16;
  if (!(Number.isInteger(max) && max >= 1)) throw new Error(`sink-kl: --max-episodes must be a positive integer, got ${max}`);
  const episodes = readTokenEpisodes(o.episodes).slice(0, max);
  const exact = loadModel(resolve(o.checkpoint), { grads: false });
  const ignored = loadModel(resolve(o.checkpoint), { grads: false, sinks: 'ignore' });
  const V = exact.config.vocab_size, P = exact.config.max_position_embeddings;
  const acc = { agent: { kls: [] as number[], agree: 0, abs: 0, ep: [] as number[] }, all: { kls: [] as number[], agree: 0, abs: 0, ep: [] as number[] } };
  const bins = CONTEXT_BINS.slice(0, -1).map((from, i) => ({ from, to: CONTEXT_BINS[i + 1], positions: 0, sum: 0 }));
  const used: SinkKlResult['used'] = [];
  try {
    for (const e of episodes) {
      const seq = Int32Array.from([...e.prompt, ...e.response].slice(0, P));
      for (const t of seq) if (!(t >= 0 && t < V)) throw new Error(`sink-kl: episode ${e.taskId} trial ${e.trial} has token id ${t}, outside ${o.checkpoint}'s vocabulary of ${V} (another tokenizer?)`);
      const a = logprobRows(exact, seq), b = logprobRows(ignored, seq);
      const T = seq.length;
      // position j predicts token j + 1; the agent's positions are those whose next token it sampled
      const agentNext = new Uint8Array(T);
      e.mask.forEach((m, r) => { if (m && e.prompt.length + r < T) agentNext[e.prompt.length + r] = 1; });
      const epAll: number[] = [], epAgent: number[] = [];
      for (let j = 0; j + 1 < T; j++) {
        let kl = 0, ia = 0, ib = 0;
        const off = j * V;
        for (let v = 0; v < V; v++) {
          const la = a[off + v], lb = b[off + v];
          if (la > -Infinity) kl += Math.exp(la) * (la - lb);
          if (la > a[off + ia]) ia = v;
          if (lb > b[off + ib]) ib = v;
        }
        kl = Math.max(0, kl);
        const dlp = Math.abs(a[off + seq[j + 1]] - b[off + seq[j + 1]]);
        const sets = agentNext[j + 1] ? [acc.all, acc.agent] : [acc.all];
        for (const s of sets) { s.kls.push(kl); s.agree += ia === ib ? 1 : 0; s.abs += dlp; }
        epAll.push(kl);
        if (agentNext[j + 1]) {
          epAgent.push(kl);
          const bin = bins.find((x) => j >= x.from && j < x.to)!;
          bin.positions++; bin.sum += kl;
        }
      }
      const mean = (x: number[]) => (x.length ? x.reduce((p, c) => p + c, 0) / x.length : NaN);
      acc.all.ep.push(mean(epAll));
      if (epAgent.length) acc.agent.ep.push(mean(epAgent));
      used.push({ taskId: e.taskId, trial: e.trial, tokens: T, agentTokens: epAgent.length, meanKl: mean(epAgent) });
    }
  } finally {
    exact.dispose();
    ignored.dispose();
  }
  return {
    checkpoint: o.checkpoint, episodes: o.episodes, used,
    agent: stats(acc.agent.kls, acc.agent.agree, acc.agent.abs, acc.agent.ep),
    all: stats(acc.all.kls, acc.all.agree, acc.all.abs, acc.all.ep),
    byContext: bins.filter((x) => x.positions > 0).map((x) => ({ from: x.from, to: Number.isFinite(x.to) ? x.to : null, positions: x.positions, meanKl: x.sum / x.positions })),
  };
}

export function formatSinkKl(r: SinkKlResult): string {
  const f = (x: number) => (Math.abs(x) >= 0.01 || x === 0 ? x.toFixed(4) : x.toExponential(2));
  const row = (name: string, s: KlStats) => `| ${name} | ${s.positions} | ${f(s.meanKl)} | ${f(s.episodeMeanKl)} ± ${f(s.episodeMeanKlSe)} | ${f(s.medianKl)} | ${f(s.p90Kl)} | ${f(s.maxKl)} | ${(100 * s.top1Agreement).toFixed(1)} % | ${f(s.meanAbsDeltaLogp)} |`;
  return [
    `KL(p_exact ‖ p_sinks-ignored) of the next-token distributions of ${r.checkpoint}, teacher-forced on ${r.used.length} recorded episode(s) of ${r.episodes} ` +
      `(${r.used.reduce((a, u) => a + u.tokens, 0)} tokens; nats, temperature 1):`,
    '',
    '| positions | n | mean KL | mean over episodes ± s.e. | median | p90 | max | same arg-max token | mean \\|Δ log p\\| of the next token |',
    '|---|---:|---:|---:|---:|---:|---:|---:|---:|',
    row("the agent's sampled tokens", r.agent),
    row('every position', r.all),
    '',
    'Mean KL at the agent\'s positions by context position:',
    '',
    '| context positions | n | mean KL |',
    '|---|---:|---:|',
    ...r.byContext.map((b) => `| ${b.from} – ${b.to === null ? 'end' : b.to - 1} | ${b.positions} | ${f(b.meanKl)} |`),
    '',
  ].join('\n');
}
