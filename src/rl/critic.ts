/**
 * The learned critic of PPO (`algorithm.advEstimator: 'gae'`, `critic:` in the trainer config; docs/grpo.md,
 * "PPO with a critic"). Two kinds:
 *   - 'head': a linear value head V(s) = w·h + b on the policy's final hidden state h = RMSNorm(x_L) (the
 *     unembedding's input). It trains with the policy: each actor micro-batch adds `valueCoef` × the value loss to the
 *     policy loss, so the value gradient reaches the trunk too; the head's two tensors have their own AdamW (`lr`).
 *   - 'separate': a small gpt-oss model of its own (a preset, e.g. tiny-1m, with the policy's vocabulary and
 *     positions) with the same kind of head, run without its unembedding, trained before the actor update on the same
 *     mini-batches by its own AdamW (verl's critic worker: `update_critic` before `update_actor`).
 * Values are per response slot, read where the slot's token is scored (position P−1+t, docs/grpo.md "The batch"),
 * i.e. V(s_t) of the state before token t, as verl's critic slices `values[:, -R-1:-1]`.
 * Checkpoints: `critic/` in the trainer's step folder (the head, or the model + head, and the AdamW state).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { AdamW, clipGradNorm, globalNorm, Tensor, type ParamWithGrad } from '../engine/index.ts';
import { loadCheckpoint as loadModelCheckpoint, loadWeightsInto, readSafetensors, saveModel, writeSafetensors } from '../model/checkpoint/index.ts';
import { presetConfig, type GptOssConfig } from '../model/config.ts';
import { TAG } from '../model/layers/context.ts';
import { GptOssModel } from '../model/model.ts';
import type { Batch } from '../rollout/batch.ts';
import { microBatches, miniBatchIndices, type ActorUpdateOptions } from './actor-update.ts';
import { aggregateLoss, aggregationDenominators } from './aggregate.ts';
import type { TrainerConfig } from './config.ts';
import { computeGaeAdvantageReturn, rewardsOnSampledTokens } from './gae.ts';
import { packForScoring, type GptOssPolicy } from './model-policy.ts';
import type { OptimizerStepResult, Policy } from './policy.ts';
import { computeValueLoss, explainedVariance, maskedMean, type ValueLossOptions } from './value-loss.ts';

export type CriticConfig = NonNullable<TrainerConfig['critic']>;

/** A linear value head on hidden states of width C: V = h·w + b (w starts at 0, so every value starts at b = 0). */
export class ValueHead {
  readonly weight: Tensor;
  readonly bias: Tensor;
  readonly gradWeight: Tensor;
  readonly gradBias: Tensor;

  constructor(readonly hiddenSize: number) {
    this.weight = Tensor.zeros([hiddenSize], { tag: TAG.params });
    this.bias = Tensor.zeros([1], { tag: TAG.params });
    this.gradWeight = Tensor.zeros([hiddenSize], { tag: TAG.grads });
    this.gradBias = Tensor.zeros([1], { tag: TAG.grads });
  }

  /** The head's parameters for an optimizer (no weight decay on the bias). */
  params(): ParamWithGrad[] {
    return [{ param: this.weight, grad: this.gradWeight }, { param: this.bias, grad: this.gradBias, weightDecay: 0 }];
  }

  /** V per row of `hidden` ([N, C] row-major). */
  predict(hidden: Float32Array): Float32Array {
    const C = this.hiddenSize, N = hidden.length / C;
    if (!Number.isInteger(N)) throw new Error(`value head: ${hidden.length} hidden values are not rows of ${C}`);
    const w = this.weight.data(), b = this.bias.data()[0];
    const out = new Float32Array(N);
    for (let n = 0; n < N; n++) {
      let s = b;
      for (let c = 0; c < C; c++) s += hidden[n * C + c] * w[c];
      out[n] = s;
    }
    return out;
  }

  /** Accumulates ∂/∂w = Σ_n dV_n h_n and ∂/∂b = Σ_n dV_n; returns ∂/∂h = dV_n · w ([N, C]). */
  backward(hidden: Float32Array, dValues: Float32Array): Float32Array {
    const C = this.hiddenSize, N = dValues.length;
    if (hidden.length !== N * C) throw new Error(`value head: ${hidden.length} hidden values for ${N} gradients of width ${C}`);
    const w = this.weight.data(), gw = this.gradWeight.data();
    const dh = new Float32Array(N * C);
    let gb = 0;
    for (let n = 0; n < N; n++) {
      const g = dValues[n];
      if (g === 0) continue;
      gb += g;
      for (let c = 0; c < C; c++) {
        gw[c] += g * hidden[n * C + c];
        dh[n * C + c] = g * w[c];
      }
    }
    this.gradBias.data()[0] += gb;
    return dh;
  }

  zeroGrad(): void {
    this.gradWeight.fill(0);
    this.gradBias.fill(0);
  }
}

export interface Critic {
  readonly type: 'head' | 'separate';
  /** V(s_t) per response slot `[B, R]` under the current weights, nothing kept for a backward. */
  values(batch: Batch): Promise<Float32Array>;
  /** V per response slot, keeping what `backward` needs (one backward per forward). */
  forward(batch: Batch): Promise<Float32Array>;
  /** ∂loss/∂V per response slot of the last `forward`; gradients accumulate until `zeroGrad`. */
  backward(dValues: Float32Array): Promise<void>;
  zeroGrad(): void;
  /** Clips the critic's grad norm to `gradClip` (≤ 0: none) and steps its AdamW (a non-finite norm skips the step). */
  optimizerStep(options: { gradClip: number }): Promise<OptimizerStepResult>;
  learningRate: number;
  saveCheckpoint(dir: string): Promise<void>;
  loadCheckpoint(dir: string): Promise<void>;
}

/** Steps an AdamW after clipping its gradients (the policy's rule: a non-finite norm zeroes the grads and skips). */
function clippedStep(opt: AdamW, gradClip: number): OptimizerStepResult {
  const grads = opt.params.map((p) => p.grad);
  const gradNorm = gradClip > 0 ? clipGradNorm(grads, gradClip) : globalNorm(grads);
  if (!Number.isFinite(gradNorm)) {
    for (const g of grads) g.fill(0);
    return { gradNorm, skipped: true };
  }
  opt.update();
  return { gradNorm, skipped: false };
}

/** `dir/critic-optimizer.{bin,json}`: m and v of every tensor, the step and the lr (GptOssPolicy's layout). */
function saveAdamW(dir: string, opt: AdamW): void {
  const parts: Float32Array[] = [];
  for (let i = 0; i < opt.params.length; i++) {
    const { m, v } = opt.moments(i);
    parts.push(Float32Array.from(m.data()), Float32Array.from(v.data()));
  }
  const all = new Float32Array(parts.reduce((a, x) => a + x.length, 0));
  let off = 0;
  for (const x of parts) {
    all.set(x, off);
    off += x.length;
  }
  writeFileSync(join(dir, 'critic-optimizer.bin'), Buffer.from(all.buffer));
  writeFileSync(join(dir, 'critic-optimizer.json'), JSON.stringify({ format: 'longrun-adamw-v1', step: opt.step, lr: opt.lr, tensors: opt.params.length, values: all.length }));
}

function loadAdamW(dir: string, opt: AdamW): void {
  const file = join(dir, 'critic-optimizer.json');
  const meta = JSON.parse(readFileSync(file, 'utf8')) as { format: string; step: number; lr: number; tensors: number; values: number };
  if (meta.format !== 'longrun-adamw-v1' || meta.tensors !== opt.params.length) throw new Error(`${file} does not match this critic's optimizer (${opt.params.length} tensors): a checkpoint of another critic type or model?`);
  const buf = readFileSync(join(dir, 'critic-optimizer.bin'));
  const all = new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4);
  if (all.length !== meta.values) throw new Error(`${dir}/critic-optimizer.bin has ${all.length} values, expected ${meta.values}`);
  let off = 0;
  for (let i = 0; i < meta.tensors; i++) {
    const { m, v } = opt.moments(i);
    m.data().set(all.subarray(off, off + m.size));
    off += m.size;
    v.data().set(all.subarray(off, off + v.size));
    off += v.size;
  }
  opt.step = meta.step;
  opt.lr = meta.lr;
}

function saveHead(dir: string, head: ValueHead): void {
  writeSafetensors(join(dir, 'value-head.safetensors'), new Map([
    ['value_head.weight', { dtype: 'F32' as const, shape: [head.hiddenSize], data: () => head.weight.data() }],
    ['value_head.bias', { dtype: 'F32' as const, shape: [1], data: () => head.bias.data() }],
  ]));
}

function loadHead(dir: string, head: ValueHead): void {
  const file = join(dir, 'value-head.safetensors');
  const t = readSafetensors(file).tensors;
  const w = t.get('value_head.weight'), b = t.get('value_head.bias');
  if (!w || w.data.length !== head.hiddenSize || !b || b.data.length !== 1) throw new Error(`${file} holds no value head of width ${head.hiddenSize}`);
  head.weight.data().set(w.data as Float32Array);
  head.bias.data().set(b.data as Float32Array);
}

/** Per-slot values from per-position values (packForScoring's slot map). */
function toSlots(perPosition: Float32Array, slotOf: Int32Array, size: number): Float32Array {
  const out = new Float32Array(size);
  for (let n = 0; n < slotOf.length; n++) if (slotOf[n] >= 0) out[slotOf[n]] = perPosition[n];
  return out;
}

/**
 * critic.type 'head': the value head on the policy's trunk. Inside the actor update the policy computes its values
 * (`Policy.logprobs` with `values`) and trains head and trunk together; this object's own `forward`/`backward` train
 * the head alone on the current hidden states (the critic warm-up steps, when the actor does not update).
 */
/** What both critics share: one AdamW over their parameters, stepped with clipping, its learning rate settable. */
abstract class AdamWCritic {
  abstract readonly optimizer: AdamW;

  async optimizerStep(o: { gradClip: number }): Promise<OptimizerStepResult> {
    return clippedStep(this.optimizer, o.gradClip);
  }

  get learningRate(): number {
    return this.optimizer.lr;
  }

  set learningRate(lr: number) {
    this.optimizer.lr = lr;
  }
}

export class HeadCritic extends AdamWCritic implements Critic {
  readonly type = 'head' as const;
  readonly optimizer: AdamW;
  private pending: { hidden: Float32Array; slotOf: Int32Array; size: number } | null = null;

  constructor(readonly policy: GptOssPolicy, readonly head: ValueHead, o: { lr: number; weightDecay: number }) {
    super();
    policy.attachValueHead(head);
    this.optimizer = new AdamW(head.params(), { lr: o.lr, weightDecay: o.weightDecay });
  }

  private run(batch: Batch): { values: Float32Array; hidden: Float32Array; slotOf: Int32Array; size: number } {
    const r = this.policy.hiddenStates(batch);
    return { values: toSlots(this.head.predict(r.hidden), r.slotOf, r.size), ...r };
  }

  async values(batch: Batch): Promise<Float32Array> {
    return this.run(batch).values;
  }

  async forward(batch: Batch): Promise<Float32Array> {
    const r = this.run(batch);
    this.pending = { hidden: r.hidden, slotOf: r.slotOf, size: r.size };
    return r.values;
  }

  async backward(dValues: Float32Array): Promise<void> {
    const p = this.pending;
    if (!p) throw new Error('HeadCritic: backward() needs a preceding forward()');
    this.pending = null;
    if (dValues.length !== p.size) throw new Error(`HeadCritic: dValues has ${dValues.length} values, expected ${p.size}`);
    const dv = new Float32Array(p.slotOf.length);
    for (let n = 0; n < dv.length; n++) if (p.slotOf[n] >= 0) dv[n] = dValues[p.slotOf[n]];
    this.head.backward(p.hidden, dv);
  }

  zeroGrad(): void {
    this.head.zeroGrad();
  }

  async saveCheckpoint(dir: string): Promise<void> {
    mkdirSync(dir, { recursive: true });
    saveHead(dir, this.head);
    saveAdamW(dir, this.optimizer);
    writeFileSync(join(dir, 'critic.json'), JSON.stringify({ type: this.type, hiddenSize: this.head.hiddenSize }));
  }

  async loadCheckpoint(dir: string): Promise<void> {
    checkCriticType(dir, this.type);
    loadHead(dir, this.head);
    loadAdamW(dir, this.optimizer);
  }
}

/** critic.type 'separate': a gpt-oss model of its own with a value head, run without its unembedding. */
export class SeparateCritic extends AdamWCritic implements Critic {
  readonly type = 'separate' as const;
  readonly optimizer: AdamW;
  private pending: { hidden: Float32Array; slotOf: Int32Array; size: number } | null = null;

  constructor(readonly model: GptOssModel, readonly head: ValueHead, o: { lr: number; weightDecay: number }) {
    super();
    if (head.hiddenSize !== model.config.hidden_size) throw new Error(`SeparateCritic: a value head of width ${head.hiddenSize} does not fit the critic model's hidden size ${model.config.hidden_size}`);
    // The critic never uses its lm_head: leave it out of the optimizer (weight decay would still move it).
    const trunk = model.trainable().filter((p) => p.param !== model.param('lm_head.weight'));
    this.optimizer = new AdamW([...trunk, ...head.params()], { lr: o.lr, weightDecay: o.weightDecay });
  }

  private run(batch: Batch, grad: boolean): { values: Float32Array; hidden: Float32Array; slotOf: Int32Array; size: number } {
    const p = packForScoring(batch);
    const r = this.model.forward({ tokens: p.tokens, docIds: p.docIds, targets: p.targets }, { grad, head: false, hidden: true });
    const hidden = r.hidden!;
    return { values: toSlots(this.head.predict(hidden), p.slotOf, p.B * p.R), hidden, slotOf: p.slotOf, size: p.B * p.R };
  }

  async values(batch: Batch): Promise<Float32Array> {
    return this.run(batch, false).values;
  }

  async forward(batch: Batch): Promise<Float32Array> {
    const r = this.run(batch, true);
    this.pending = { hidden: r.hidden, slotOf: r.slotOf, size: r.size };
    return r.values;
  }

  async backward(dValues: Float32Array): Promise<void> {
    const p = this.pending;
    if (!p) throw new Error('SeparateCritic: backward() needs a preceding forward()');
    this.pending = null;
    if (dValues.length !== p.size) throw new Error(`SeparateCritic: dValues has ${dValues.length} values, expected ${p.size}`);
    const dv = new Float32Array(p.slotOf.length);
    for (let n = 0; n < dv.length; n++) if (p.slotOf[n] >= 0) dv[n] = dValues[p.slotOf[n]];
    this.model.backward(undefined, { dHidden: this.head.backward(p.hidden, dv) });
  }

  zeroGrad(): void {
    this.model.zeroGrad();
    this.head.zeroGrad();
  }

  async saveCheckpoint(dir: string): Promise<void> {
    mkdirSync(dir, { recursive: true });
    saveModel(join(dir, 'model'), this.model);
    saveHead(dir, this.head);
    saveAdamW(dir, this.optimizer);
    writeFileSync(join(dir, 'critic.json'), JSON.stringify({ type: this.type, hiddenSize: this.head.hiddenSize }));
  }

  async loadCheckpoint(dir: string): Promise<void> {
    checkCriticType(dir, this.type);
    loadWeightsInto(this.model, loadModelCheckpoint(join(dir, 'model')).params);
    loadHead(dir, this.head);
    loadAdamW(dir, this.optimizer);
  }
}

function checkCriticType(dir: string, type: string): void {
  const file = join(dir, 'critic.json');
  let meta: { type?: string };
  try {
    meta = JSON.parse(readFileSync(file, 'utf8')) as { type?: string };
  } catch (err) {
    throw new Error(`cannot read the critic state ${file} (the checkpoint was written without a critic, or by another algorithm?): ${(err as Error).message}`, { cause: err });
  }
  if (meta.type !== type) throw new Error(`${file} is a '${String(meta.type)}' critic; this run's critic.type is '${type}'`);
}

/**
 * The critic of a trainer config. 'head' needs the in-process gpt-oss policy; 'separate' builds `critic.model` (a
 * preset) with the vocabulary `vocabSize` and, when `like` is given (the policy's model config), its positions and
 * RoPE scaling, so it reads every sequence the policy does.
 */
export function createCritic(cfg: CriticConfig, o: { policy: Policy; vocabSize: number; like?: GptOssConfig }): Critic {
  if (cfg.type === 'head') {
    const policy = o.policy as Partial<GptOssPolicy>;
    if (typeof policy.attachValueHead !== 'function' || typeof policy.hiddenStates !== 'function' || !policy.model) {
      throw new Error("critic.type 'head' puts the value head on the in-process gpt-oss policy's trunk; this policy has none (use critic.type 'separate')");
    }
    return new HeadCritic(o.policy as GptOssPolicy, new ValueHead(policy.model.config.hidden_size), { lr: cfg.lr, weightDecay: cfg.weightDecay });
  }
  const overrides = { vocab_size: o.vocabSize, ...(o.like ? { max_position_embeddings: o.like.max_position_embeddings, rope_scaling: o.like.rope_scaling } : {}) };
  const model = new GptOssModel(presetConfig(cfg.model, overrides), { seed: cfg.seed });
  return new SeparateCritic(model, new ValueHead(model.config.hidden_size), { lr: cfg.lr, weightDecay: cfg.weightDecay });
}

export interface CriticUpdateOptions {
  /** Rows per mini-batch (as the actor's). */
  miniBatchRows: number;
  epochs: number;
  /** The actor section: its micro-batch settings split each mini-batch the same way. */
  actor: TrainerConfig['actor'];
  loss: ValueLossOptions;
  gradClip: number;
}

/**
 * The critic's update (verl's `update_critic`): `epochs` passes × mini-batches (one optimizer step each) ×
 * micro-batches, the value loss token-mean over each mini-batch's sampled tokens. The batch holds `values` (the
 * rollout-time V, the clip's centre) and `returns`. Returns the `critic/*` metrics (means over the optimizer steps).
 */
export async function updateCritic(critic: Critic, batch: Batch, o: CriticUpdateOptions): Promise<Record<string, number>> {
  const losses: number[] = [], clipFracs: number[] = [], norms: number[] = [];
  let skipped = 0;
  const R = batch.tensor('responses').shape[1];
  for (let epoch = 0; epoch < o.epochs; epoch++) {
    for (const rows of miniBatchIndices(batch.size, o.miniBatchRows)) {
      if (rows.length === 0) continue;
      const mini = batch.select({ indices: rows });
      const denominators = aggregationDenominators(mini.tensor('response_mask').data, mini.size, R);
      critic.zeroGrad();
      let loss = 0, clipped = 0, tokens = 0;
      for (const micro of microBatches(mini, o.actor)) {
        const mask = micro.tensor('response_mask').data;
        const vpreds = await critic.forward(micro);
        const vl = computeValueLoss(vpreds, micro.tensor('values').data, micro.tensor('returns').data, mask, o.loss);
        const agg = aggregateLoss(vl.losses, mask, micro.size, R, 'token-mean', { denominators });
        const d = new Float32Array(vl.dValues.length);
        for (let k = 0; k < d.length; k++) d[k] = agg.weights[k] * vl.dValues[k];
        await critic.backward(d);
        loss += agg.value;
        clipped += vl.clipFrac * vl.tokens;
        tokens += vl.tokens;
      }
      const r = await critic.optimizerStep({ gradClip: o.gradClip });
      if (r.skipped) skipped++;
      losses.push(loss);
      clipFracs.push(tokens > 0 ? clipped / tokens : 0);
      norms.push(r.gradNorm);
    }
  }
  const mean = (xs: number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);
  return { 'critic/value_loss': mean(losses), 'critic/vf_clipfrac': mean(clipFracs), 'critic/grad_norm': mean(norms), 'critic/skipped_steps': skipped, 'critic/optimizer_steps': losses.length };
}

/** `critic/values_mean`, `critic/returns_mean` over the sampled tokens of a batch. */
export function valueMetrics(values: ArrayLike<number>, returns: ArrayLike<number>, mask: ArrayLike<number>): Record<string, number> {
  return { 'critic/values_mean': maskedMean(values, mask), 'critic/returns_mean': maskedMean(returns, mask) };
}

/**
 * The advantage phase of `algorithm.advEstimator: 'gae'`: rewards moved onto sampled tokens (gae.ts), GAE with γ and
 * λ over the batch's `values`, `advantages` (whitened) and `returns` set on the batch, and the critic's batch metrics
 * added to `metrics` (`critic/values_mean`, `critic/returns_mean`, `critic/explained_variance`, `critic/adv_raw_mean`).
 * `sequence`: each row's mean advantage over its sampled tokens (for `adv/mean_abs`).
 */
export function gaeAdvantages(batch: Batch, algorithm: Pick<TrainerConfig['algorithm'], 'gamma' | 'lam'>, metrics: Record<string, number>): { sequence: Float64Array; tokens: Float32Array } {
  const B = batch.size, R = batch.tensor('responses').shape[1];
  const mask = batch.tensor('response_mask').data, values = batch.tensor('values').data;
  const rewards = rewardsOnSampledTokens(batch.tensor('token_level_rewards').data, mask, B, R);
  const g = computeGaeAdvantageReturn(rewards, values, mask, B, R, algorithm.gamma, algorithm.lam);
  batch.setTensor('advantages', g.advantages, [B, R]);
  batch.setTensor('returns', g.returns, [B, R]);
  Object.assign(metrics, valueMetrics(values, g.returns, mask), {
    'critic/explained_variance': explainedVariance(values, g.returns, mask),
    'critic/adv_raw_mean': maskedMean(g.raw, mask),
  });
  const sequence = new Float64Array(B);
  for (let i = 0; i < B; i++) {
    let s = 0, n = 0;
    for (let t = 0; t < R; t++) if (mask[i * R + t]) { s += g.advantages[i * R + t]; n++; }
    sequence[i] = n > 0 ? s / n : 0;
  }
  return { sequence, tokens: g.advantages };
}

/**
 * What the critic does in a step: `warmup` (step < critic.warmupSteps: the actor does not update), `separateUpdate`
 * (the options of `updateCritic`: a separate critic every step, the head alone during the warm-up), `value` (the head
 * trained inside the actor update).
 */
export function criticStepOptions(c: TrainerConfig, step: number, miniBatchRows: number, critic: Critic): { warmup: boolean; separateUpdate?: CriticUpdateOptions; value?: NonNullable<ActorUpdateOptions['value']> } {
  const cc = c.critic;
  if (!cc) throw new Error('criticStepOptions: the config has no critic section');
  const loss: ValueLossOptions = { valueClip: cc.valueClip, loss: cc.loss, huberDelta: cc.huberDelta };
  const warmup = step < cc.warmupSteps;
  const separateUpdate = critic.type === 'separate' || warmup ? { miniBatchRows, epochs: c.actor.ppoEpochs, actor: c.actor, loss, gradClip: cc.gradClip } : undefined;
  const value = critic.type === 'head' && !warmup ? { critic, loss, coef: cc.valueCoef, gradClip: cc.gradClip } : undefined;
  return { warmup, separateUpdate, value };
}
