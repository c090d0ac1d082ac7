/** Many episodes over a task set: every task × trial, with per-episode seeds derived from one seed, and a summary. */
import { computeMetrics, isSuccess, type AgentMetrics } from '../../../tooluse/metrics.ts';
import type { UserSimulator } from '../../../tooluse/user.ts';
import type { RetailDomain } from '../domain.ts';
import type { SynthAgent } from './agent.ts';
import { EpisodeRunner, type Trajectory } from './episode.ts';
import { ExpertAgent } from './expert.ts';
import { RandomAgent } from './random-agent.ts';
import { SynthRng } from './rng.ts';
import type { SynthTask } from './task-gen.ts';
import { ScriptedRetailUser } from './user-sim.ts';

export const AGENT_NAMES = ['expert', 'random'] as const;
export type AgentName = (typeof AGENT_NAMES)[number];
export const USER_NAMES = ['scripted'] as const;
export type UserName = (typeof USER_NAMES)[number];

export function makeAgent(name: string): SynthAgent {
  if (name === 'expert') return new ExpertAgent();
  if (name === 'random') return new RandomAgent();
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
        o.onEpisode?.(t, task);
      }
    }
  } finally {
    await runner.close();
  }
  const byFamily = Object.fromEntries(Object.entries(fam).map(([k, v]) => [k, { episodes: v.episodes, successRate: v.successes / v.episodes }]));
  return { episodes: results.length, metrics: computeMetrics(results), byFamily, terminations, meanSteps: steps / results.length };
}
