/**
 * The GRPO trainer on a training backend (backend.ts): `BackendPolicy` is the trainer's `Policy` with nothing but
 * the seam under it, and `BackendEngine` the rollouts' `InferenceEngine` sampling through the same backend, so the
 * weights live in one place only (in process, or behind the Tinker API with `TinkerBackend`). The actor update goes
 * through `updateActorViaBackend` (backend-update.ts), which the trainer takes as its `actorUpdate`.
 *
 * `BackendPolicy`:
 * - `logprobs` (scoring only, π_old): one `forward` over the batch's rows as datums (each row's real tokens, every
 *   position's next token as target), the log-probs put back in the `[B, R]` response layout. The seam scores at
 *   temperature 1 and returns no entropy (`actor/entropy` is not reported).
 * - `backward`, `zeroGrad`, `optimizerStep` are refused: gradients only accumulate inside the backend.
 * - `referenceLogprobs` is refused: a KL term needs a second model, which a run on a backend does not build
 *   (`longrun train` refuses the KL options with a backend).
 * - `syncToInference` makes the backend's sampler follow the new weights (`syncSampler` when it has one).
 * - `saveCheckpoint`/`loadCheckpoint`: the backend's `saveState`/`loadState` (with the optimizer state).
 * - `learningRate`: the Adam learning rate every optimizer step sends.
 */
import type { Batch } from '../rollout/batch.ts';
import { validateRequest, type GenerationRequest, type GenerationResult, type InferenceEngine } from '../rollout/inference.ts';
import type { ActorUpdateOptions } from './actor-update.ts';
import type { AdamParams, Datum, TrainingBackend } from './backend.ts';
import { rowDatums, updateActorViaBackend } from './backend-update.ts';
import { batchDims, type OptimizerStepResult, type Policy, type PolicyForward, type PolicyForwardOptions } from './policy.ts';

/** A backend that can move its sampler onto the current weights ahead of the next sample (TinkerBackend). */
interface SyncingBackend extends TrainingBackend {
  syncSampler?(): Promise<void>;
}

export class BackendPolicy implements Policy {
  constructor(readonly backend: SyncingBackend, readonly adam: Omit<AdamParams, 'gradClipNorm'>) {}

  get learningRate(): number {
    return this.adam.learningRate;
  }

  set learningRate(lr: number) {
    if (!(Number.isFinite(lr) && lr >= 0)) throw new RangeError(`learning rate must be a finite number ≥ 0, got ${lr}`);
    this.adam.learningRate = lr;
  }

  async logprobs(batch: Batch, options: PolicyForwardOptions): Promise<PolicyForward> {
    if (options.grad) throw new Error('BackendPolicy: training forwards go through the backend (updateActorViaBackend), not Policy.logprobs');
    if (options.temperature !== 1) throw new Error(`BackendPolicy: a training backend scores at temperature 1; the rollout used ${options.temperature} (set rollout.temperature: 1)`);
    const { B, R } = batchDims(batch);
    const out = new Float32Array(B * R);
    const rows = rowDatums(batch).datums.filter((d) => d.tokens.length > 0);
    if (rows.length === 0) return { logprobs: out };
    const data: Datum[] = rows.map((d) => ({ tokens: d.tokens, lossInputs: { target_tokens: d.targets } }));
    const r = await this.backend.forward(data, 'cross_entropy');
    rows.forEach((d, j) => d.slots.forEach((s, k) => {
      if (s >= 0) out[s] = r.logprobs[j][k];
    }));
    return { logprobs: out };
  }

  async backward(): Promise<void> {
    throw new Error('BackendPolicy: backward runs inside the training backend (forward_backward); use updateActorViaBackend');
  }

  zeroGrad(): void {
    // Gradients live in the backend, cleared by each optimizer step; nothing to clear here.
  }

  async optimizerStep(): Promise<OptimizerStepResult> {
    throw new Error('BackendPolicy: optimizer steps run inside the training backend (optim_step); use updateActorViaBackend');
  }

  async referenceLogprobs(): Promise<Float32Array> {
    throw new Error('BackendPolicy: no reference model on a training backend (the KL loss and KL in the reward are off for runs on a backend)');
  }

  async syncToInference(): Promise<void> {
    await this.backend.syncSampler?.();
  }

  async saveCheckpoint(dir: string): Promise<void> {
    await this.backend.saveState(dir);
  }

  async loadCheckpoint(dir: string): Promise<void> {
    await this.backend.loadState(dir, { optimizer: true });
  }

  /** The trainer's actor update through this policy's backend, with its Adam parameters. */
  actorUpdate(): (batch: Batch, options: ActorUpdateOptions) => Promise<Record<string, number>> {
    return (batch, options) => updateActorViaBackend(this.backend, batch, { ...options, adam: { ...this.adam } });
  }
}

/**
 * Rollouts through a backend's `sample`: one sample per request, with the request's seed, temperature, top-k/top-p,
 * token cap and stop ids. Each turn sends its whole context (the backend keeps no session state between turns; a
 * server may still reuse its prefix cache).
 */
export class BackendEngine implements InferenceEngine {
  constructor(private readonly backend: TrainingBackend) {}

  async generate(requests: readonly GenerationRequest[]): Promise<GenerationResult[]> {
    for (const r of requests) validateRequest(r);
    return Promise.all(requests.map(async (r) => {
      const [s] = await this.backend.sample(Array.from(r.tokens), 1, {
        maxTokens: r.maxNewTokens, temperature: r.temperature, topK: r.topK !== undefined && r.topK > 0 ? r.topK : undefined, topP: r.topP, seed: r.seed, stopTokens: r.stop,
      });
      if (!s) throw new Error('BackendEngine: the backend returned no sample');
      return { tokens: s.tokens, logprobs: s.logprobs, finishReason: s.stopReason };
    }));
  }
}
