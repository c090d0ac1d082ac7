/** A counting semaphore: at most `limit` tasks run at once, the rest wait in FIFO order. Shared by every client of a run. */
export class ConcurrencyLimiter {
  private active = 0;
  private readonly queue: (() => void)[] = [];
  /** Highest number of tasks seen running at once (for tests and reports). */
  peak = 0;

  constructor(readonly limit: number) {
    if (!Number.isInteger(limit) || limit < 1) throw new Error(`A concurrency limit must be a positive integer, got ${limit}`);
  }

  async run<T>(fn: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.queue.push(resolve));
    this.active++;
    this.peak = Math.max(this.peak, this.active);
    try {
      return await fn();
    } finally {
      this.active--;
      this.queue.shift()?.();
    }
  }
}
