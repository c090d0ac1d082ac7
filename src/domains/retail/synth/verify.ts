/**
 * Verifies a generated task by replay: it must parse as a τ² task, its gold actions replayed on a fresh DB must give
 * DB reward 1 under the evaluator, every gold write must succeed, and the DB must change exactly when the task asks
 * for a change (refusals, transfers, failed authentication and questions leave it as it was).
 */
import { replayTask } from '../../../tooluse/replay.ts';
import { parseTasks } from '../../../tooluse/tasks.ts';
import type { RetailDomain } from '../domain.ts';
import type { SynthTask } from './task-gen.ts';

/** Null when the task is sound, otherwise a short reason. */
export function verifyTask(domain: RetailDomain, task: SynthTask): string | null {
  try {
    parseTasks([task], 'generated task');
  } catch {
    return 'schema';
  }
  const replay = replayTask(domain, task);
  if (replay.db_reward !== 1) return 'gold replay reward';
  const writes = new Set(domain.tools.filter((t) => t.kind === 'write').map((t) => t.name));
  const actions = task.evaluation_criteria?.actions ?? [];
  if (actions.some((a, i) => writes.has(a.name) && replay.outputs[i]!.error)) return 'failed gold write';
  const s = task.longrun;
  const changes = s.authenticates && s.requests.some((r) => r.outcome === 'do' && r.kind !== 'info');
  const changed = replay.final_db_hash !== domain.hashDb(domain.freshDb());
  if (changes !== changed) return changes ? 'no DB change' : 'unexpected DB change';
  return null;
}
