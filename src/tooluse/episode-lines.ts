/**
 * Per-episode result lines, one an episode: `=== <taskId> (<family>) reward <r> …` (what scripts/probe-heldout.ts
 * prints, and the form the held-out results under docs/results/ are committed in, so that paired comparisons and
 * figures outlive the machine whose eval folders they came from). Anything after the reward is free text (trial,
 * how the episode ended). Older printouts have no family (`=== <taskId> reward <r> …`); their family reads as 'task'.
 * Other lines (transcripts) are skipped.
 */

export interface EpisodeLine {
  taskId: string;
  family: string;
  reward: number;
}

const HEADER = /^=== (\S+)(?: \((\S+)\))? reward (\S+)/;

/** The episodes of a per-episode file's text; `source` names it in errors. Throws on a bad reward or no episodes. */
export function parseEpisodeLines(text: string, source: string): EpisodeLine[] {
  const out: EpisodeLine[] = [];
  for (const line of text.split('\n')) {
    const m = HEADER.exec(line);
    if (!m) continue;
    const reward = Number(m[3]);
    if (!Number.isFinite(reward)) throw new Error(`${source}: bad reward in '${line.slice(0, 120)}'`);
    out.push({ taskId: m[1]!, family: m[2] ?? 'task', reward });
  }
  if (out.length === 0) throw new Error(`${source}: no episode lines (=== <task> (<family>) reward <r>) found`);
  return out;
}
