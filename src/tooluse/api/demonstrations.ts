/**
 * SFT data from a defined env's demonstrator: `demonstrationEpisodes` plays the scripted turns of `spec.demonstrator`
 * against the env (its user, tools and reward) and returns one record per episode in the trajectories JSONL format
 * that `longrun rollout` writes and `longrun sft --data` reads (src/rl/sft-data.ts: messages, systemPrompt, tools,
 * taskId, reward); `writeTrajectoriesJsonl` writes them.
 */
import { writeFileSync } from 'node:fs';
import type { ToolSpec } from '../../llm/index.ts';
import type { Message } from '../messages.ts';
import type { AnyEnvDefinition } from './define.ts';
import { EpisodeError } from './errors.ts';

export interface DemonstrationRecord {
  taskId: string;
  trial: number;
  seed: number;
  reward: number;
  terminationReason: string;
  family?: string;
  systemPrompt: string;
  tools: ToolSpec[];
  /** The conversation (greeting first when the env has one). */
  messages: Message[];
  rewardInfo: Record<string, unknown>;
}

export interface DemonstrationOptions {
  /** Episode seeds are `seed + index` (default 0). */
  seed?: number;
  /** Only the first N tasks of the split. */
  maxTasks?: number;
  /** Keep only episodes whose reward reaches this. */
  minReward?: number;
  /** Called for an episode that ended in an EpisodeError (it is left out); default: the error is thrown. */
  onEnvError?: (taskId: string, trial: number, error: EpisodeError) => void;
}

/**
 * Plays the demonstrator `trials` times on every task of `split`. A demonstrator whose turns run out before the
 * episode ends is an error naming the env and task. An interactive demonstrator (a session) plays until the env ends
 * the episode (its `maxTurns`, or `maxSteps`, bounds it).
 */
export async function demonstrationEpisodes(def: AnyEnvDefinition, split = 'train', trials = 1, options: DemonstrationOptions = {}): Promise<DemonstrationRecord[]> {
  const { demonstrator, demonstratorSession } = def.spec;
  if (!demonstrator && !demonstratorSession) throw new Error(`env ${def.id} has no demonstrator (spec.demonstrator: (task) => turns, or spec.demonstratorSession)`);
  if (!(Number.isInteger(trials) && trials >= 1)) throw new RangeError(`demonstrationEpisodes: trials must be a positive integer, got ${trials}`);
  const tasks = (await def.tasks(split)).slice(0, options.maxTasks);
  const env = def.makeEnv({ tasks });
  const out: DemonstrationRecord[] = [];
  let index = 0;
  try {
    for (const task of tasks) {
      for (let trial = 0; trial < trials; trial++) {
        const seed = (options.seed ?? 0) + index++;
        try {
          const [obs0, info0] = await env.reset({ seed, options: { taskId: task.id } });
          const made = demonstrator ? demonstrator(task) : demonstratorSession!(task, { seed, tools: info0.tools as ToolSpec[] });
          let ended = info0.terminationReason !== null && info0.terminationReason !== undefined;
          let reward = ended ? ((info0.rewardInfo as { reward?: number } | null)?.reward ?? 0) : 0;
          let info = info0;
          if (Array.isArray(made)) {
            for (const turn of made) {
              if (ended) break;
              const [, r, terminated, truncated, i] = await env.step(turn);
              info = i;
              if (terminated || truncated) {
                ended = true;
                reward = r;
              }
            }
            if (!ended) throw new Error(`env ${def.id}: the demonstrator's ${made.length} turns ran out before the episode of task ${task.id} ended`);
          } else {
            if (typeof made?.act !== 'function') throw new TypeError(`env ${def.id}: demonstratorSession must return a session { act(observed) }, got ${made === null ? 'null' : typeof made} for task ${task.id}`);
            let observed = obs0.messages;
            while (!ended) {
              const [obs, r, terminated, truncated, i] = await env.step(made.act(observed));
              observed = obs.messages;
              info = i;
              if (terminated || truncated) {
                ended = true;
                reward = r;
              }
            }
          }
          if (options.minReward !== undefined && reward < options.minReward) continue;
          const family = def.familyOf(task);
          out.push({
            taskId: task.id, trial, seed, reward,
            terminationReason: String(info.terminationReason),
            ...(family !== undefined ? { family } : {}),
            systemPrompt: def.spec.instructions,
            tools: info0.tools as ToolSpec[],
            messages: [...env.messages],
            rewardInfo: ((info.rewardInfo as { info?: Record<string, unknown> } | null)?.info) ?? {},
          });
        } catch (e) {
          if (e instanceof EpisodeError && options.onEnvError) options.onEnvError(task.id, trial, e);
          else throw e;
        }
      }
    }
  } finally {
    await env.close();
  }
  return out;
}

/** Writes records as JSON Lines (`longrun sft --data` reads them). */
export function writeTrajectoriesJsonl(path: string, records: readonly object[]): void {
  writeFileSync(path, records.map((r) => `${JSON.stringify(r)}\n`).join(''));
}
