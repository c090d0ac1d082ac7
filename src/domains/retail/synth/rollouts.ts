/** Many episodes over a task set: every task × trial, with per-episode seeds derived from one seed, and a summary. */
import { computeMetrics, isSuccess, type AgentMetrics } from '../../../tooluse/metrics.ts';
import type { UserSimulator } from '../../../tooluse/user.ts';
import type { RetailDomain } from '../domain.ts';
import type { SynthAgent } from './agent.ts';
import { EpisodeRunner, type Trajectory } from './episode.ts';
import { ExpertAgent } from './expert.ts';
import { parseMistakeKinds } from './expert-mistakes.ts';
import { RandomAgent } from './random-agent.ts';
import { SynthRng } from './rng.ts';
import type { SynthTask } from './task-gen.ts';
import { ScriptedRetailUser } from './user-sim.ts';

export const AGENT_NAMES = ['expert', 'random'] as const;
export type AgentName = (typeof AGENT_NAMES)[number];
export const USER_NAMES = ['scripted'] as const;
export type UserName = (typeof USER_NAMES)[number];

export interface MakeAgentOptions {
  /** The expert's mistake rate in [0, 1] (expert-mistakes.ts); omitted: the perfect expert. */
  mistakeRate?: number;
  /** The mistake kinds it may make (names from `MISTAKE_KINDS`); default all. Needs `mistakeRate`. */
  mistakeKinds?: readonly string[];
  /** The expert restates the request in its first reply (`ExpertAgentOptions.restate`). */
  restate?: boolean;
  /** The expert writes notes (its chain of thought) before the copies that need them (`ExpertAgentOptions.notes`). */
  notes?: boolean;
  /** With `notes`: the note before an item proposal walks the product's variants (`ExpertAgentOptions.walk`). */
  walk?: boolean;
  /** With `notes`: the note before a product lookup walks the order's items (`ExpertAgentOptions.itemWalk`). */
  itemWalk?: boolean | 'printed';
}

export function makeAgent(name: string, options: MakeAgentOptions = {}): SynthAgent {
  const { mistakeRate, mistakeKinds, restate, notes, walk, itemWalk } = options;
  if (mistakeKinds !== undefined && mistakeRate === undefined) throw new Error('mistakeKinds needs a mistakeRate');
  if (name === 'expert') {
    const extra = { ...(restate ? { restate: true } : {}), ...(notes ? { notes: true } : {}), ...(walk ? { walk: true } : {}), ...(itemWalk ? { itemWalk } : {}) };
    if (mistakeRate === undefined) return new ExpertAgent(extra);
    return new ExpertAgent({ ...extra, mistakes: { rate: mistakeRate, ...(mistakeKinds === undefined ? {} : { kinds: parseMistakeKinds(mistakeKinds) }) } });
  }
  if (name === 'random') {
    if (mistakeRate !== undefined) throw new Error(`The mistake rate is a knob of the 'expert' agent, not of '${name}'`);
    if (restate) throw new Error(`restate is a knob of the 'expert' agent, not of '${name}'`);
    if (notes || walk || itemWalk) throw new Error(`${notes ? 'notes' : walk ? 'walk' : 'itemWalk'} is a knob of the 'expert' agent, not of '${name}'`);
    return new RandomAgent();
  }
  throw new Error(`Unknown agent '${name}' (known: ${AGENT_NAMES.join(', ')})`);
}

export function makeUser(name: string): UserSimulator {
  if (name === 'scripted') return new ScriptedRetailUser();
  throw new Error(`Unknown user simulator '${name}' (known: ${USER_NAMES.join(', ')})`);
}

export interface RolloutOptions {
  domain: RetailDomain;
  tasks: readonly SynthTask[];
  agent: SynthAgent;
  user: UserSimulator;
  trials?: number;
  seed?: number;
  maxSteps?: number;
  /** Called after each episode (e.g. to write it out and advance a progress bar). */
  onEpisode?: (t: Trajectory, task: SynthTask) => void;
}

export interface RolloutSummary {
  episodes: number;
  metrics: AgentMetrics;
  byFamily: Record<string, { episodes: number; successRate: number }>;
  terminations: Record<string, number>;
  meanSteps: number;
  /** For agents that note their mistakes: how many, at how many decision points, by kind. */
  mistakes?: { count: number; opportunities: number; byKind: Record<string, number> };
}

export async function runRollouts(o: RolloutOptions): Promise<RolloutSummary> {
  const trials = o.trials ?? 1;
  if (!Number.isInteger(trials) || trials < 1) throw new Error(`trials must be a positive integer, got ${trials}`);
  if (o.tasks.length === 0) throw new Error('No tasks to roll out');
  const runner = new EpisodeRunner({ domain: o.domain, tasks: o.tasks, user: o.user, maxSteps: o.maxSteps });
  const rng = new SynthRng(o.seed ?? 0);
  const results: { taskId: string; reward: number }[] = [];
  const fam: Record<string, { episodes: number; successes: number }> = {};
  const terminations: Record<string, number> = {};
  let steps = 0;
  let mistakes: RolloutSummary['mistakes'];
  try {
    for (const task of o.tasks) {
      for (let trial = 0; trial < trials; trial++) {
        const t = await runner.run(o.agent, task.id, rng.nextU32(), trial);
        results.push({ taskId: t.taskId, reward: t.reward });
        const f = (fam[task.longrun.family] ??= { episodes: 0, successes: 0 });
        f.episodes++;
        if (isSuccess(t.reward)) f.successes++;
        const reason = t.terminationReason ?? 'unknown';
        terminations[reason] = (terminations[reason] ?? 0) + 1;
        steps += t.steps;
        if (t.mistakes) {
          mistakes ??= { count: 0, opportunities: 0, byKind: {} };
          mistakes.count += t.mistakes.length;
          mistakes.opportunities += t.mistakeOpportunities ?? 0;
          for (const m of t.mistakes) mistakes.byKind[m.kind] = (mistakes.byKind[m.kind] ?? 0) + 1;
        }
        o.onEpisode?.(t, task);
      }
    }
  } finally {
    await runner.close();
  }
  const byFamily = Object.fromEntries(Object.entries(fam).map(([k, v]) => [k, { episodes: v.episodes, successRate: v.successes / v.episodes }]));
  return { episodes: results.length, metrics: computeMetrics(results), byFamily, terminations, meanSteps: steps / results.length, ...(mistakes ? { mistakes } : {}) };
}
