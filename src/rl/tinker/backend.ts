/**
 * `TinkerBackend`: the training-backend seam (../backend.ts) over a Tinker-compatible service (client.ts: the protobuf
 * protocol of the tinker SDK ≥ 0.25, JSON of ≤ 0.24.x as a fallback), so that what runs on `GptOssBackend` in process
 * runs remotely unchanged —
 * `longrun serve trainer`, the hosted Tinker service, or any other server of the same API.
 *
 * - `forwardBackward`/`forward`: datums in Tinker's JSON form (`encoded_text` chunks, `TensorData` loss inputs; the
 *   client encodes them as protobuf where the server takes it),
 *   checked here first (shapes, finite values, the loss's required inputs, `loss_fn_config`) so a bad datum fails
 *   before it costs a request; the client chunks large batches. The per-datum `logprobs` outputs come back as
 *   Float32Arrays, `loss:sum` and the server's other metrics as they are (a server that reports no `loss:sum` gets
 *   it summed from its per-token `elementwise_loss`, else recomputed from the log-probs).
 * - `optimStep`: `optim_step` with the Adam parameters (learning rate, betas, eps, decoupled weight decay, global
 *   grad-norm clip).
 * - `sample`: through a sampling session on weights saved with `save_weights_for_sampler`. The session is made
 *   lazily and made again after every `optimStep` or `loadState`, so samples always come from the current weights
 *   (what `GptOssBackend` does by sharing them); `syncSampler` makes it now.
 * - `saveState(dir)`: `save_weights` (weights + optimizer state stay on the server) under a name made from `dir`;
 *   `dir/tinker-state.json` records the returned `tinker://` path, the base model and the model id, so
 *   `loadState(dir)` can `load_weights` it back (with the optimizer state when asked).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import { LOSS_FNS, tinkerLoss, validateDatum, validateLossConfig, type AdamParams, type Datum, type ForwardBackwardResult, type LossConfig, type LossFn, type SampledSequence, type SampleParams, type TrainingBackend } from '../backend.ts';
import { TinkerClient, TinkerError, type ForwardBackwardOutput, type TensorData, type TinkerClientOptions, type TinkerLora, type TinkerSamplingClient, type TinkerTrainingClient, type WireDatum } from './client.ts';

export interface TinkerBackendOptions extends TinkerClientOptions {
  /** The `base_model` to train (e.g. `openai/gpt-oss-20b`). */
  baseModel: string;
  /** LoRA adapters; without one the server trains every weight (where it allows that; the hosted service is LoRA only). */
  lora?: TinkerLora;
}

const STATE_FILE = 'tinker-state.json';
const STATE_FORMAT = 'longrun-tinker-state-v1';

const LOSS_INPUT_KEYS = ['target_tokens', 'weights', 'logprobs', 'advantages', 'clip_low_threshold', 'clip_high_threshold'] as const;

/** A datum in Tinker's JSON form. */
export function toWireDatum(d: Datum): WireDatum {
  const inputs: Record<string, TensorData> = {};
  for (const key of LOSS_INPUT_KEYS) {
    const a = d.lossInputs[key];
    if (a === undefined) continue;
    inputs[key] = { data: Array.from(a), dtype: key === 'target_tokens' ? 'int64' : 'float32', shape: [a.length] };
  }
  return { model_input: { chunks: [{ type: 'encoded_text', tokens: Array.from(d.tokens) }] }, loss_fn_inputs: inputs };
}

/** A checkpoint name the Tinker API accepts, from the last two parts of a local folder (`…/step-00000003/policy` → `step-00000003-policy`). */
export function checkpointName(dir: string): string {
  const abs = resolve(dir);
  const name = `${basename(dirname(abs))}-${basename(abs)}`.replace(/[^A-Za-z0-9_.-]/g, '_').replace(/^[.]+/, '').slice(-200);
  return name === '' ? 'state' : name;
}

export class TinkerBackend implements TrainingBackend {
  private sampler: Promise<TinkerSamplingClient> | null = null;

  private constructor(readonly client: TinkerClient, readonly training: TinkerTrainingClient, readonly baseModel: string) {}

  /** Connects (session, heartbeats) and creates the training model. */
  static async create(o: TinkerBackendOptions): Promise<TinkerBackend> {
    const client = await TinkerClient.connect(o);
    try {
      return new TinkerBackend(client, await client.createModel(o.baseModel, o.lora), o.baseModel);
    } catch (e) {
      await client.close();
      throw e;
    }
  }

  get modelId(): string {
    return this.training.modelId;
  }

  private check(data: readonly Datum[], lossFn: LossFn, config: LossConfig | undefined): WireDatum[] {
    if (!LOSS_FNS.includes(lossFn)) throw new Error(`unknown loss function '${String(lossFn)}' (known: ${LOSS_FNS.join(', ')})`);
    if (data.length === 0) throw new Error('forward_backward: no datums');
    validateLossConfig(lossFn, config);
    // The vocabulary is the server's; it checks the ids' range.
    for (const d of data) validateDatum(d, lossFn, Number.MAX_SAFE_INTEGER);
    return data.map(toWireDatum);
  }

  private result(out: ForwardBackwardOutput, data: readonly Datum[], lossFn: LossFn, config: LossConfig | undefined): ForwardBackwardResult {
    const logprobs = out.loss_fn_outputs.map((o, k) => {
      const lp = o.logprobs;
      if (!lp || !Array.isArray(lp.data) || lp.data.length !== data[k].tokens.length) {
        throw new TinkerError(`forward_backward: output ${k} has ${lp && Array.isArray(lp.data) ? lp.data.length : 'no'} logprobs for ${data[k].tokens.length} tokens`);
      }
      return Float32Array.from(lp.data);
    });
    const metrics = { ...out.metrics };
    if (typeof metrics['loss:sum'] !== 'number') {
      // A server that reports no `loss:sum` (SkyRL tx 0.3 answers per-token `elementwise_loss` only): its sum, else
      // the loss recomputed here from the returned log-probs with the same formulas (backend.ts, tinkerLoss).
      metrics['loss:sum'] = out.loss_fn_outputs.reduce((sum, o, k) => {
        const e = o.elementwise_loss;
        if (e && Array.isArray(e.data) && e.data.length === logprobs[k].length) return sum + e.data.reduce((a, b) => a + b, 0);
        return sum + tinkerLoss(lossFn, logprobs[k], data[k].lossInputs, config).loss;
      }, 0);
    }
    return { logprobs, metrics };
  }

  async forwardBackward(data: readonly Datum[], lossFn: LossFn, config?: LossConfig): Promise<ForwardBackwardResult> {
    return this.result(await this.training.forwardBackward(this.check(data, lossFn, config), lossFn, config), data, lossFn, config);
  }

  async forward(data: readonly Datum[], lossFn: LossFn, config?: LossConfig): Promise<ForwardBackwardResult> {
    return this.result(await this.training.forward(this.check(data, lossFn, config), lossFn, config), data, lossFn, config);
  }

  async optimStep(adam: AdamParams): Promise<{ metrics: Record<string, number> }> {
    for (const [k, v] of Object.entries(adam)) if (!Number.isFinite(v)) throw new Error(`optim_step: adam ${k} must be a finite number, got ${v}`);
    if (!(adam.learningRate >= 0)) throw new Error(`optim_step: the learning rate must be ≥ 0, got ${adam.learningRate}`);
    if (!(adam.beta1 >= 0 && adam.beta1 < 1 && adam.beta2 >= 0 && adam.beta2 < 1)) throw new Error(`optim_step: beta1 and beta2 must be in [0, 1), got ${adam.beta1} and ${adam.beta2}`);
    this.sampler = null;
    const metrics = await this.training.optimStep({
      learning_rate: adam.learningRate, beta1: adam.beta1, beta2: adam.beta2, eps: adam.eps, weight_decay: adam.weightDecay, grad_clip_norm: adam.gradClipNorm,
    });
    return { metrics };
  }

  /** A sampling session on the current weights (made once per weight change). */
  async syncSampler(): Promise<void> {
    await this.currentSampler();
  }

  private currentSampler(): Promise<TinkerSamplingClient> {
    if (!this.sampler) {
      const p = this.training.samplingClient().then((r) => r.sampler);
      this.sampler = p;
      p.catch(() => {
        if (this.sampler === p) this.sampler = null;
      });
    }
    return this.sampler;
  }

  async sample(prompt: readonly number[], n: number, params: SampleParams): Promise<SampledSequence[]> {
    if (!(Number.isInteger(n) && n >= 1)) throw new Error(`sample: num_samples must be a positive integer, got ${n}`);
    if (!(Number.isInteger(params.maxTokens) && params.maxTokens >= 1)) throw new Error(`sample: max_tokens must be a positive integer, got ${params.maxTokens}`);
    if (prompt.length === 0) throw new Error('sample: the prompt is empty');
    for (const t of prompt) if (!(Number.isInteger(t) && t >= 0)) throw new Error(`sample: prompt token ${t} is not a token id`);
    const sampler = await this.currentSampler();
    const seqs = await sampler.sample(prompt, n, {
      max_tokens: params.maxTokens, temperature: params.temperature ?? 1, seed: params.seed,
      top_k: params.topK !== undefined && params.topK > 0 ? params.topK : -1, top_p: params.topP ?? 1,
      stop: params.stopTokens ? Array.from(params.stopTokens) : undefined,
    });
    return seqs.map((s, i) => {
      if (!s.logprobs || s.logprobs.length !== s.tokens.length) throw new TinkerError(`sample: sequence ${i} came back without one log-prob per token`);
      return { tokens: s.tokens, logprobs: s.logprobs, stopReason: s.stop_reason === 'stop' ? 'stop' : 'length' };
    });
  }

  async saveState(dir: string): Promise<void> {
    const path = await this.training.saveState(checkpointName(dir));
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, STATE_FILE), JSON.stringify({ format: STATE_FORMAT, path, baseModel: this.baseModel, modelId: this.modelId }, null, 2) + '\n');
  }

  async loadState(dir: string, options: { optimizer: boolean }): Promise<void> {
    const file = join(dir, STATE_FILE);
    let state: { format?: unknown; path?: unknown; baseModel?: unknown };
    try {
      state = JSON.parse(readFileSync(file, 'utf8')) as typeof state;
    } catch (e) {
      throw new Error(`cannot read ${file} (a TinkerBackend checkpoint records its tinker:// path there): ${(e as Error).message}`, { cause: e });
    }
    if (state.format !== STATE_FORMAT || typeof state.path !== 'string') throw new Error(`${file} is not a ${STATE_FORMAT} file`);
    if (state.baseModel !== this.baseModel) throw new Error(`${file} holds a checkpoint of ${JSON.stringify(state.baseModel)}, this backend trains ${JSON.stringify(this.baseModel)}`);
    this.sampler = null;
    await this.training.loadState(state.path, options.optimizer);
  }

  async close(): Promise<void> {
    await this.client.close();
  }
}
