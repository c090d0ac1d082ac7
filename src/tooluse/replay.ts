/**
 * Gold replay: a task's reference actions run as an episode, used to self-check the evaluator and the domain
 * (`longrun tau2 replay`, tests, benchmarks).
 */
import type { GoldHashCache } from './evaluator.ts';
import { checkDb } from './evaluator.ts';
import { executeToolCall } from './execute.ts';
import type { Message } from './messages.ts';
import { GREETING } from './orchestrator.ts';
import type { Action, Task } from './tasks.ts';
import type { Domain } from './types.ts';
import { STOP_TOKEN } from './user.ts';

export interface GoldEpisode<DB> {
  db: DB;
  messages: Message[];
  outputs: { output: string; error: boolean }[];
}

/**
 * Runs `actions` (default: the task's gold actions) as tool calls, one per message, on a fresh DB: greeting, each
 * call and its result, then a user `###STOP###`.
 */
export function runGoldEpisode<DB>(domain: Domain<DB>, task: Task, actions: readonly Action[] = task.evaluation_criteria?.actions ?? []): GoldEpisode<DB> {
  const db = domain.freshDb();
  const messages: Message[] = [{ role: 'assistant', content: GREETING, toolCalls: null }];
  const outputs: { output: string; error: boolean }[] = [];
  actions.forEach((a, i) => {
    const id = `gold_${i}`;
    const result = executeToolCall(domain, db, { name: a.name, arguments: a.arguments });
    outputs.push(result);
    const call = { id, name: a.name, arguments: a.arguments, requestor: a.requestor };
    messages.push(a.requestor === 'user' ? { role: 'user', content: null, toolCalls: [call] } : { role: 'assistant', content: null, toolCalls: [call] });
    messages.push({ role: 'tool', id, content: result.output, requestor: a.requestor, error: result.error });
  });
  messages.push({ role: 'user', content: STOP_TOKEN, toolCalls: null });
  return { db, messages, outputs };
}

export interface TaskReplay {
  task_id: string;
  final_db_hash: string;
  outputs: { output: string; error: boolean }[];
  db_reward: number;
}

/**
 * Replays a task's gold actions and scores the resulting trajectory with the evaluator's DB component, the τ² way:
 * the trajectory's write calls are re-executed on a fresh DB and compared with an independent gold replay.
 */
export function replayTask<DB>(domain: Domain<DB>, task: Task, cache?: GoldHashCache): TaskReplay {
  const episode = runGoldEpisode(domain, task);
  const db = checkDb(domain, task, { messages: episode.messages, terminationReason: 'user_stop' }, cache);
  return { task_id: task.id, final_db_hash: domain.hashDb(episode.db), outputs: episode.outputs, db_reward: db.dbReward };
}

/** Indices of the task's gold actions that call a write tool. */
export function writeActionIndices<DB>(domain: Domain<DB>, task: Task): number[] {
  const kinds = new Map(domain.tools.map((t) => [t.name, t.kind]));
  return (task.evaluation_criteria?.actions ?? []).flatMap((a, i) => (kinds.get(a.name) === 'write' ? [i] : []));
}
