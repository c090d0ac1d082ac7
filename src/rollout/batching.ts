/**
 * Request batching for an in-process model: many trajectories submit generation requests concurrently (each agent
 * loop awaits its own turn); the engine gathers the pending requests into batches — up to `maxBatchSize` requests
 * and `maxBatchTokens` tokens (Σ prompt + maxNewTokens) — and runs one batch at a time through `generateBatch`.
 * Requests that arrive while a batch runs wait for the next one, so the model is never idle while work is queued.
 * Each caller gets exactly its own result.
 *
 * This is generic over `generateBatch`, so it is tested with a fake model; `model-engine.ts` adapts the gpt-oss
 * model. (Iteration-level continuous batching, where sequences join a running decode loop, is `StepBatchingEngine`
 * in step-batching.ts.)
 */
import type { GenerationRequest, GenerationResult, InferenceEngine } from './inference.ts';
import { validateRequest } from './inference.ts';

export type GenerateBatchFn = (requests: GenerationRequest[]) => Promise<GenerationResult[]>;

export interface BatchingOptions {
  generateBatch: GenerateBatchFn;
  /** Most requests in one batch. */
  maxBatchSize: number;
  /** Most tokens (Σ prompt length + maxNewTokens) in one batch; a single larger request still runs, alone. */
  maxBatchTokens?: number;
  /** After the first request arrives at an idle engine, wait this long for more before launching (default 0: the next macrotask). */
  maxWaitMs?: number;
}

interface Pending {
  request: GenerationRequest;
  resolve: (r: GenerationResult) => void;
  reject: (e: unknown) => void;
}

export interface BatchingStats {
  /** Request count of every batch run, in order. */
  batchSizes: number[];
  /** Token count (Σ prompt + maxNewTokens) of every batch. */
  batchTokens: number[];
}

const cost = (r: GenerationRequest) => r.tokens.length + r.maxNewTokens;

export class BatchingEngine implements InferenceEngine {
  readonly stats: BatchingStats = { batchSizes: [], batchTokens: [] };
  private readonly queue: Pending[] = [];
  private running = false;
  private scheduled = false;
  private closed = false;

  constructor(private readonly options: BatchingOptions) {
    if (!(Number.isInteger(options.maxBatchSize) && options.maxBatchSize >= 1)) throw new RangeError(`maxBatchSize must be a positive integer, got ${options.maxBatchSize}`);
    if (options.maxBatchTokens !== undefined && !(options.maxBatchTokens >= 1)) throw new RangeError(`maxBatchTokens must be ≥ 1, got ${options.maxBatchTokens}`);
  }

  generate(requests: readonly GenerationRequest[]): Promise<GenerationResult[]> {
    return Promise.all(requests.map((r) => this.submit(r)));
  }

  /** Queues one request; resolves with its own result. */
  submit(request: GenerationRequest): Promise<GenerationResult> {
    if (this.closed) return Promise.reject(new Error('BatchingEngine is closed'));
    try {
      validateRequest(request);
    } catch (e) {
      return Promise.reject(e);
    }
    return new Promise((resolve, reject) => {
      this.queue.push({ request, resolve, reject });
      this.schedule();
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const p of this.queue.splice(0)) p.reject(new Error('BatchingEngine closed before the request ran'));
  }

  private schedule(): void {
    if (this.running || this.scheduled) return;
    this.scheduled = true;
    setTimeout(() => {
      this.scheduled = false;
      void this.runLoop();
    }, this.options.maxWaitMs ?? 0);
  }

  /** FIFO: takes requests while both limits hold (the first request always fits). */
  private takeBatch(): Pending[] {
    const batch: Pending[] = [];
    let tokens = 0;
    while (this.queue.length > 0 && batch.length < this.options.maxBatchSize) {
      const c = cost(this.queue[0].request);
      if (batch.length > 0 && this.options.maxBatchTokens !== undefined && tokens + c > this.options.maxBatchTokens) break;
      batch.push(this.queue.shift()!);
      tokens += c;
    }
    return batch;
  }

  private async runLoop(): Promise<void> {
    if (this.running) return;
    this.running = true;
    try {
      while (this.queue.length > 0) {
        const batch = this.takeBatch();
        this.stats.batchSizes.push(batch.length);
        this.stats.batchTokens.push(batch.reduce((a, p) => a + cost(p.request), 0));
        try {
          const results = await this.options.generateBatch(batch.map((p) => p.request));
          if (!Array.isArray(results) || results.length !== batch.length) throw new Error(`generateBatch returned ${Array.isArray(results) ? results.length : typeof results} results for ${batch.length} requests`);
          batch.forEach((p, i) => p.resolve(results[i]));
        } catch (e) {
          for (const p of batch) p.reject(e);
        }
        // Let callers that were just resolved submit their next turn before the next batch forms.
        await new Promise((r) => setTimeout(r, 0));
      }
    } finally {
      this.running = false;
    }
  }
}
