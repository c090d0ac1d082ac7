import { Env, Wrapper } from '../env.ts';
import { GymError } from '../errors.ts';
import type { ResetOptions, ResetResult, StepResult } from '../types.ts';

/** Episode statistics put in `info[statsKey]` at the end of an episode. */
export interface EpisodeStatistics {
  /** Cumulative reward. */
  r: number;
  /** Episode length in steps. */
  l: number;
  /** Elapsed wall time in seconds since reset, rounded to microseconds. */
  t: number;
}

/** A bounded FIFO like Python's `deque(maxlen=n)`. */
export class BoundedQueue<T> {
  private items: T[] = [];
  constructor(readonly maxLength: number) {}
  push(x: T): void {
    this.items.push(x);
    if (this.items.length > this.maxLength) this.items.shift();
  }
  get length(): number {
    return this.items.length;
  }
  toArray(): T[] {
    return [...this.items];
  }
}

/**
 * At the end of each episode adds `info.episode = {r, l, t}` and appends to `returnQueue`, `lengthQueue` and
 * `timeQueue` (the last `bufferLength` episodes), as Gymnasium's `RecordEpisodeStatistics`.
 */
export class RecordEpisodeStatistics<Obs = unknown, Act = unknown> extends Wrapper<Obs, Act> {
  readonly statsKey: string;
  readonly returnQueue: BoundedQueue<number>;
  readonly lengthQueue: BoundedQueue<number>;
  readonly timeQueue: BoundedQueue<number>;
  episodeCount = 0;
  episodeReturns = 0;
  episodeLengths = 0;
  private episodeStart = 0;

  constructor(env: Env<Obs, Act>, options: { bufferLength?: number; statsKey?: string } = {}) {
    super(env);
    const bufferLength = options.bufferLength ?? 100;
    if (!Number.isSafeInteger(bufferLength) || bufferLength <= 0) throw new RangeError(`RecordEpisodeStatistics: bufferLength must be a positive integer, got ${bufferLength}`);
    this.statsKey = options.statsKey ?? 'episode';
    this.returnQueue = new BoundedQueue(bufferLength);
    this.lengthQueue = new BoundedQueue(bufferLength);
    this.timeQueue = new BoundedQueue(bufferLength);
  }

  override async step(action: Act): Promise<StepResult<Obs>> {
    const [obs, reward, terminated, truncated, info] = await this.env.step(action);
    this.episodeReturns += reward;
    this.episodeLengths += 1;
    if (terminated || truncated) {
      if (this.statsKey in info) throw new GymError(`Attempted to add episode stats when they already exist, info keys: ${Object.keys(info).join(', ')}`);
      const t = Math.round((performance.now() - this.episodeStart) * 1000) / 1e6;
      const stats: EpisodeStatistics = { r: this.episodeReturns, l: this.episodeLengths, t };
      this.returnQueue.push(stats.r);
      this.lengthQueue.push(stats.l);
      this.timeQueue.push(stats.t);
      this.episodeCount += 1;
      this.episodeReturns = 0;
      this.episodeLengths = 0;
      this.episodeStart = performance.now();
      return [obs, reward, terminated, truncated, { ...info, [this.statsKey]: stats }];
    }
    return [obs, reward, terminated, truncated, info];
  }

  override async reset(options: ResetOptions = {}): Promise<ResetResult<Obs>> {
    const result = await this.env.reset(options);
    this.episodeStart = performance.now();
    this.episodeReturns = 0;
    this.episodeLengths = 0;
    return result;
  }
}
