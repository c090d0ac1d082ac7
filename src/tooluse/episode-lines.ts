/**
 * Per-episode result lines, one an episode: `=== <taskId> (<family>) reward <r> …` (what `longrun analyze
 * episode-lines` writes, and the form the held-out results under docs/results/ are committed in, so that paired comparisons and
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

/** One finished episode, as a `longrun eval` trajectory records it, with its task's family. */
export interface EpisodeResult extends EpisodeLine {
  trial: number;
  termination: string;
}

/**
 * The per-episode lines of a set of episodes, `=== <taskId> (<family>) reward <r> trial <t> <termination>`, ordered by
 * task id (a trailing number compared as a number, so validation_2 comes before validation_10), then trial.
 */
export function formatEpisodeLines(episodes: readonly EpisodeResult[]): string {
  const order = (id: string): [string, number] => {
    const m = /^(.*?)(\d+)$/.exec(id);
    return m ? [m[1]!, Number(m[2])] : [id, -1];
  };
  const sorted = [...episodes].sort((a, b) => {
    const [pa, na] = order(a.taskId), [pb, nb] = order(b.taskId);
    return pa < pb ? -1 : pa > pb ? 1 : na - nb || a.trial - b.trial;
  });
  for (const e of sorted) {
    if (/\s/.test(e.taskId) || /\s/.test(e.family) || e.family === '') throw new Error(`episode line: task id and family must be single words, got '${e.taskId}' (${e.family})`);
    if (!Number.isFinite(e.reward)) throw new Error(`episode line: ${e.taskId} has no finite reward`);
  }
  return sorted.map((e) => `=== ${e.taskId} (${e.family}) reward ${e.reward} trial ${e.trial} ${e.termination}\n`).join('');
}
