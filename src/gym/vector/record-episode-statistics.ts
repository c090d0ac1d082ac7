import { GymError } from '../errors.ts';
import { AutoresetMode, type Info } from '../types.ts';
import { BoundedQueue } from '../wrappers/record-episode-statistics.ts';
import type { VectorEnv, VectorResetOptions, VectorStepResult } from './vector-env.ts';
import { VectorWrapper } from './vector-wrapper.ts';

/**
 * Episode statistics for vector envs (Gymnasium's vector `RecordEpisodeStatistics`): on a step where sub-envs end
 * their episodes, `info.episode = {r, l, t}` holds per-env arrays (0 for envs that did not end) and
 * `info._episode` masks the ones that did; `returnQueue`/`lengthQueue`/`timeQueue` keep the last `bufferLength`
 * episodes. Aware of all three autoreset modes: in `next-step` the reset step after an episode is not counted, in
 * `same-step` counting restarts right after the ending step, in `disabled` it restarts at the masked reset.
 */
export class VectorRecordEpisodeStatistics<BObs = unknown, BAct = unknown> extends VectorWrapper<BObs, BAct> {
  readonly returnQueue: BoundedQueue<number>;
  readonly lengthQueue: BoundedQueue<number>;
  readonly timeQueue: BoundedQueue<number>;
  episodeCount = 0;
  readonly episodeReturns: Float64Array;
  readonly episodeLengths: Int32Array;
  private readonly episodeStart: Float64Array;
  private prevDones: boolean[];

  constructor(env: VectorEnv<BObs, BAct>, options: { bufferLength?: number } = {}) {
    super(env);
    const n = env.numEnvs;
    const bufferLength = options.bufferLength ?? 100;
    this.returnQueue = new BoundedQueue(bufferLength);
    this.lengthQueue = new BoundedQueue(bufferLength);
    this.timeQueue = new BoundedQueue(bufferLength);
    this.episodeReturns = new Float64Array(n);
    this.episodeLengths = new Int32Array(n);
    this.episodeStart = new Float64Array(n);
    this.prevDones = new Array<boolean>(n).fill(false);
  }

  private restart(i: number): void {
    this.episodeReturns[i] = 0;
    this.episodeLengths[i] = 0;
    this.episodeStart[i] = performance.now();
    this.prevDones[i] = false;
  }

  override async reset(options: VectorResetOptions = {}): Promise<[BObs, Info]> {
    const result = await this.env.reset(options);
    const mask = this.metadata.autoresetMode === AutoresetMode.DISABLED ? options.options?.reset_mask : undefined;
    for (let i = 0; i < this.numEnvs; i++) if (mask === undefined || mask[i]) this.restart(i);
    return result;
  }

  override async step(actions: BAct): Promise<VectorStepResult<BObs>> {
    const [obs, rewards, terminations, truncations, info] = await this.env.step(actions);
    const mode = this.metadata.autoresetMode;
    const n = this.numEnvs;
    const dones = terminations.map((t, i) => t || truncations[i]!);
    for (let i = 0; i < n; i++) {
      if (mode === AutoresetMode.NEXT_STEP && this.prevDones[i]) {
        this.restart(i); // this step was the sub-env's reset
        continue;
      }
      this.episodeReturns[i]! += rewards[i]!;
      this.episodeLengths[i]! += 1;
    }
    if (!dones.some((d) => d)) {
      this.prevDones = dones;
      return [obs, rewards, terminations, truncations, info];
    }
    if ('episode' in info || '_episode' in info) throw new GymError(`Attempted to add episode stats when they already exist, info keys: ${Object.keys(info).join(', ')}`);
    const now = performance.now();
    const r = new Float64Array(n);
    const l = new Int32Array(n);
    const t = new Float64Array(n);
    for (let i = 0; i < n; i++) {
      if (!dones[i]) continue;
      r[i] = this.episodeReturns[i]!;
      l[i] = this.episodeLengths[i]!;
      t[i] = Math.round((now - this.episodeStart[i]!) * 1000) / 1e6;
      this.returnQueue.push(r[i]!);
      this.lengthQueue.push(l[i]!);
      this.timeQueue.push(t[i]!);
      this.episodeCount += 1;
      if (mode === AutoresetMode.SAME_STEP) this.restart(i);
    }
    this.prevDones = mode === AutoresetMode.SAME_STEP ? new Array<boolean>(n).fill(false) : dones;
    return [obs, rewards, terminations, truncations, { ...info, episode: { r, l, t }, _episode: [...dones] }];
  }
}
