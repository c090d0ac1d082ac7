/**
 * A FIFO lock per session: requests on one session run one at a time in arrival order. At most `maxWaiting`
 * requests may wait; one more is refused (the server answers 409 `session_busy`) rather than queueing without bound.
 */
export class SessionLock {
  private tail: Promise<void> = Promise.resolve();
  private waiting = 0;
  private held = false;

  constructor(private readonly maxWaiting: number) {}

  get busy(): boolean {
    return this.held || this.waiting > 0;
  }

  /** Runs `fn` once every earlier holder is done; returns null (without running it) if the queue is full. */
  tryRun<T>(fn: () => Promise<T>): Promise<T> | null {
    if (this.held && this.waiting >= this.maxWaiting) return null;
    this.waiting++;
    const prev = this.tail;
    let release!: () => void;
    this.tail = new Promise<void>((r) => (release = r));
    return prev.then(async () => {
      this.waiting--;
      this.held = true;
      try {
        return await fn();
      } finally {
        this.held = false;
        release();
      }
    });
  }
}
