import { BatchedVectorEnv } from './batched-vector-env.ts';

/** Steps sub-envs one after another, in index order (Gymnasium's `SyncVectorEnv`). */
export class SyncVectorEnv<BObs = unknown, BAct = unknown> extends BatchedVectorEnv<BObs, BAct> {
  protected async runAll<T>(tasks: readonly (() => Promise<T>)[]): Promise<T[]> {
    const out: T[] = [];
    for (const task of tasks) out.push(await task());
    return out;
  }
}
