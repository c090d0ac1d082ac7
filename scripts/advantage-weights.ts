/**
 * How a GRPO run's gradient divides between its successes and its failures, read from the run's `episodes.jsonl`
 * (`trainer.episodesFile`). Each training group (the samples of one task at one step) gets GRPO's advantages again from
 * the episodes' rewards (`grpoSequenceAdvantages`, the trainer's formula: unbiased group std, ε 1e-6); groups whose
 * rewards are all equal carry nothing and are left out. Per family, and over the run:
 *
 * - the groups drawn, their mean reward, and how many had unequal rewards (the informative ones);
 * - the episodes with a positive and with a negative advantage, and their mean sampled (model) tokens, the tokens the
 *   policy loss is taken on;
 * - the advantage-weighted token sums Σ A_i·n_i of each side: the weight each side has under `lossAggMode: token-mean`
 *   (every sampled token of the mini-batch weighs alike), and the ratio negative : positive;
 * - the same for Σ A_i, the weight under `seq-mean-token-mean` (every episode weighs its advantage alone), where a
 *   group's two sides balance by construction.
 *
 * A ratio above 1 under token-mean means the failures' push on the tokens they sample outweighs the successes' pull,
 * because the failures are the longer episodes.
 *
 *   node --import tsx scripts/advantage-weights.ts RUN/episodes.jsonl [MORE/episodes.jsonl …]
 */
import { readFileSync } from 'node:fs';
import { grpoSequenceAdvantages } from '../src/rl/advantages.ts';

interface Episode { kind: string; step: number; taskId: string; family?: string; reward: number; modelTokens: number }

interface Side { episodes: number; tokens: number; tokenWeight: number; seqWeight: number }
interface Tally { pos: Side; neg: Side; groups: number; drawn: number; rewardSum: number }

const side = (): Side => ({ episodes: 0, tokens: 0, tokenWeight: 0, seqWeight: 0 });
const tally = (): Tally => ({ pos: side(), neg: side(), groups: 0, drawn: 0, rewardSum: 0 });

/**
 * The rows of an `episodes.jsonl`. A line that is not JSON, or a training row without the fields the tally reads (a file
 * of another kind, or cut short), stops with its file and line number rather than turning into NaN in the table.
 */
export function parseEpisodes(text: string, file: string): Episode[] {
  const out: Episode[] = [];
  text.split('\n').forEach((line, n) => {
    if (!line.trim()) return;
    let e: Partial<Episode>;
    try {
      e = JSON.parse(line) as Partial<Episode>;
    } catch (err) {
      throw new Error(`${file}:${n + 1}: not JSON (${(err as Error).message})`, { cause: err });
    }
    if (e === null || typeof e !== 'object') throw new Error(`${file}:${n + 1}: not an episode row`);
    if (e.kind === 'train' && !(Number.isFinite(e.step) && typeof e.taskId === 'string' && Number.isFinite(e.reward) && Number.isFinite(e.modelTokens))) {
      throw new Error(`${file}:${n + 1}: a training episode needs a numeric step, reward and modelTokens and a taskId (the rows trainer.episodesFile writes)`);
    }
    out.push(e as Episode);
  });
  return out;
}

export function advantageWeights(episodes: readonly Episode[]): Map<string, Tally> {
  const groups = new Map<string, Episode[]>();
  for (const e of episodes) {
    if (e.kind !== 'train') continue;
    const key = `${e.step}\u0000${e.taskId}`;
    const g = groups.get(key);
    if (g) g.push(e);
    else groups.set(key, [e]);
  }
  const out = new Map<string, Tally>([['all', tally()]]);
  for (const g of groups.values()) {
    const family = g[0].family ?? 'unknown';
    if (!out.has(family)) out.set(family, tally());
    for (const t of [out.get('all')!, out.get(family)!]) {
      t.drawn++;
      t.rewardSum += g.reduce((a, e) => a + e.reward, 0) / g.length;
    }
    if (g.length < 2 || g.every((e) => e.reward === g[0].reward)) continue;
    const adv = grpoSequenceAdvantages(g.map((e) => e.reward), g.map(() => 'g'));
    for (const t of [out.get('all')!, out.get(family)!]) {
      t.groups++;
      g.forEach((e, i) => {
        if (adv[i] === 0) return;
        const s = adv[i] > 0 ? t.pos : t.neg;
        s.episodes++;
        s.tokens += e.modelTokens;
        s.tokenWeight += Math.abs(adv[i]) * e.modelTokens;
        s.seqWeight += Math.abs(adv[i]);
      });
    }
  }
  return out;
}

function main(files: string[]): void {
  if (files.length === 0) {
    console.error('usage: node --import tsx scripts/advantage-weights.ts RUN/episodes.jsonl [MORE/episodes.jsonl …]');
    process.exit(2);
  }
  for (const file of files) {
    const t = advantageWeights(parseEpisodes(readFileSync(file, 'utf8'), file));
    console.log(`${file}: groups drawn ${t.get('all')!.drawn}, informative ${t.get('all')!.groups}`);
    console.log('| family | groups drawn | training reward | informative groups | episodes + / − | mean sampled tokens + / − | token-mean weight − : + | seq-mean weight − : + |');
    console.log('| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |');
    const names = [...t.keys()].filter((k) => k !== 'all').sort();
    for (const name of [...names, 'all']) {
      const { pos, neg, groups, drawn, rewardSum } = t.get(name)!;
      const mean = (s: Side) => (s.episodes ? Math.round(s.tokens / s.episodes) : 0);
      const ratio = (a: number, b: number) => (b > 0 ? (a / b).toFixed(2) : '—');
      console.log(`| ${name} | ${drawn} | ${(rewardSum / drawn).toFixed(2)} | ${groups} | ${pos.episodes} / ${neg.episodes} | ${mean(pos)} / ${mean(neg)} | ${ratio(neg.tokenWeight, pos.tokenWeight)} | ${ratio(neg.seqWeight, pos.seqWeight)} |`);
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) main(process.argv.slice(2));
