/**
 * A task's reference trajectory as agent turns, for driving an env with the known answer (load tests, client
 * tests): each gold action as one tool call, then one text that states the task's `communicate_info` (so the v0
 * DB × COMMUNICATE reward can be 1), then `done` (τ²'s gym stop). Turns are plain JSON, ready to send over HTTP.
 */
import type { Task } from '../tooluse/tasks.ts';

export interface GoldTurn {
  content: string | null;
  toolCalls: { name: string; arguments: Record<string, unknown> }[] | null;
}

export function goldTurns(task: Task): GoldTurn[] {
  const actions = (task.evaluation_criteria?.actions ?? []).filter((a) => a.requestor === 'assistant');
  const turns: GoldTurn[] = actions.map((a) => ({ content: null, toolCalls: [{ name: a.name, arguments: a.arguments }] }));
  const info = task.evaluation_criteria?.communicate_info ?? [];
  turns.push({ content: info.length ? `Here is what I found: ${info.join('; ')}.` : 'Your request has been handled.', toolCalls: null });
  turns.push({ content: null, toolCalls: [{ name: 'done', arguments: {} }] });
  return turns;
}
