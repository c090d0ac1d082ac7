import type { Env } from '../env.ts';
import { AlreadyPendingCallError, GymError, NoAsyncCallError } from '../errors.ts';
import type { Info } from '../types.ts';
import { BatchedVectorEnv, type VectorEnvOptions } from './batched-vector-env.ts';
import type { VectorResetOptions, VectorStepResult } from './vector-env.ts';

/**
 * Steps all sub-envs concurrently with `Promise.all`-style scheduling (Gymnasium's `AsyncVectorEnv`). Deviation:
 * this is concurrency inside one Node process, not worker processes: it overlaps the sub-envs' I/O (tool calls,
 * user-simulator requests) but not their CPU work. Results and infos are still assembled in env order, so a
 * seeded run gives the same batch as SyncVectorEnv. If sub-envs fail, every call is allowed to settle and the
 * lowest-index error is thrown. `resetAsync`/`resetWait` and `stepAsync`/`stepWait` mirror Gymnasium's split API.
 */
export class AsyncVectorEnv<BObs = unknown, BAct = unknown> extends BatchedVectorEnv<BObs, BAct> {
  private pending: { kind: 'reset' | 'step'; promise: Promise<unknown> } | null = null;

  constructor(envFns: readonly (() => Env)[], options: VectorEnvOptions = {}) {
    super(envFns, options);
  }

  protected async runAll<T>(tasks: readonly (() => Promise<T>)[]): Promise<T[]> {
    const settled = await Promise.allSettled(tasks.map((t) => t()));
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
    return settled.map((s) => (s as PromiseFulfilledResult<T>).value);
  }

  private start(kind: 'reset' | 'step', promise: Promise<unknown>): void {
    promise.catch(() => {}); // surfaced by the matching *Wait
    this.pending = { kind, promise };
  }

  private async wait<T>(kind: 'reset' | 'step', timeoutMs?: number): Promise<T> {
    this.assertOpen();
    if (!this.pending || this.pending.kind !== kind) {
      throw new NoAsyncCallError(`Calling \`${kind}Wait\` without any prior call to \`${kind}Async\`.`);
    }
    const { promise } = this.pending;
    try {
      if (timeoutMs === undefined) return (await promise) as T;
      let timer: ReturnType<typeof setTimeout> | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new GymError(`The call to \`${kind}Wait\` has timed out after ${timeoutMs} ms.`)), timeoutMs);
      });
      try {
        return (await Promise.race([promise, timeout])) as T;
      } finally {
        clearTimeout(timer);
      }
    } finally {
      this.pending = null;
    }
  }

  /** Starts a reset; collect it with `resetWait`. */
  resetAsync(options: VectorResetOptions = {}): void {
    this.assertOpen();
    if (this.pending) throw new AlreadyPendingCallError(`Calling \`resetAsync\` while waiting for a pending call to \`${this.pending.kind}\` to complete.`);
    this.start('reset', super.reset(options));
  }

  resetWait(options: { timeoutMs?: number } = {}): Promise<[BObs, Info]> {
    return this.wait('reset', options.timeoutMs);
  }

  /** Starts a step; collect it with `stepWait`. */
  stepAsync(actions: BAct): void {
    this.assertOpen();
    if (this.pending) throw new AlreadyPendingCallError(`Calling \`stepAsync\` while waiting for a pending call to \`${this.pending.kind}\` to complete.`);
    this.start('step', super.step(actions));
  }

  stepWait(options: { timeoutMs?: number } = {}): Promise<VectorStepResult<BObs>> {
    return this.wait('step', options.timeoutMs);
  }

  override async reset(options: VectorResetOptions = {}): Promise<[BObs, Info]> {
    this.resetAsync(options);
    return this.resetWait();
  }

  override async step(actions: BAct): Promise<VectorStepResult<BObs>> {
    this.stepAsync(actions);
    return this.stepWait();
  }

  override async close(): Promise<void> {
    if (this.pending) {
      await this.pending.promise.catch(() => {});
      this.pending = null;
    }
    await super.close();
  }
}
