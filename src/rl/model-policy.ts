/**
 * `GptOssPolicy`: the in-process gpt-oss model behind the trainer's `Policy` interface.
 *
 * Each batch row is unpadded (attention_mask) and the rows are packed into one sequence of documents (the model's
 * document mask keeps them apart, positions restart per row). The target of packed position n is the next token
 * when that token is a response token, so response slot t of row i is scored from position P−1+t (docs/grpo.md, "The batch").
 * `backward` maps d loss / d logprob per response slot onto the packed positions and calls `model.backward`.
 *
 * Limits of the current model API (documented, checked): training forwards need temperature 1 (the model's backward
 * starts from target log-probs at temperature 1); scoring-only forwards accept any temperature (through the full
 * log-softmax). Entropy (at temperature 1 for training forwards) is returned per token, and `backward` takes its
 * gradient (`dEntropy`, the entropy bonus) through the model's head: dH/dz_j = −p_j (log p_j + H). The reference policy is a separate frozen model, the same model with its LoRA adapters off, or none (a run without a KL term).
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { clipGradNorm, globalNorm, memoryReport, type AdamW, type AdamWOptions } from '../engine/index.ts';
import { loadCheckpoint as loadModelCheckpoint, loadWeightsInto, readSafetensors, saveModel, writeSafetensors } from '../model/checkpoint/index.ts';
import { logSumExp, softmaxEntropy } from '../model/layers/entropy.ts';
import type { GptOssModel } from '../model/model.ts';
import type { Batch } from '../rollout/batch.ts';
import type { ValueHead } from './critic.ts';
import { batchDims, type OptimizerStepResult, type Policy, type PolicyForward, type PolicyForwardOptions } from './policy.ts';

export interface GptOssPolicyOptions {
  optimizer: AdamWOptions;
  /**
   * A frozen model for the KL reference, `'adapters-off'` (LoRA training: the base model is the reference), or null:
   * no KL term, so no copy of the model is kept.
   */
  reference: GptOssModel | 'adapters-off' | null;
}

interface Packed {
  tokens: Int32Array;
  docIds: Int32Array;
  targets: Int32Array;
  /** Packed position → response slot index `i·R + t` (−1 for non-scored positions). */
  slotOf: Int32Array;
  B: number;
  R: number;
}

export function packForScoring(batch: Batch): Packed {
  const { B, P, R } = batchDims(batch);
  const ids = batch.tensor('input_ids').data;
  const att = batch.tensor('attention_mask').data;
  const W = P + R;
  const tokens: number[] = [];
  const docIds: number[] = [];
  const targets: number[] = [];
  const slotOf: number[] = [];
  for (let i = 0; i < B; i++) {
    const cols: number[] = [];
    for (let j = 0; j < W; j++) if (att[i * W + j]) cols.push(j);
    cols.forEach((j, k) => {
      tokens.push(ids[i * W + j]);
      docIds.push(i);
      const next = cols[k + 1];
      if (next !== undefined && next >= P) {
        targets.push(ids[i * W + next]);
        slotOf.push(i * R + (next - P));
      } else {
        targets.push(-1);
        slotOf.push(-1);
      }
    });
  }
  return { tokens: Int32Array.from(tokens), docIds: Int32Array.from(docIds), targets: Int32Array.from(targets), slotOf: Int32Array.from(slotOf), B, R };
}

export class GptOssPolicy implements Policy {
  readonly optimizer: AdamW;
  private pending: Packed | null = null;
  /** The pending grad forward's final hidden states [N, C], when it computed values. */
  private pendingHidden: Float32Array | null = null;
  /** The value head on the trunk (critic.type 'head', src/rl/critic.ts), when one is attached. */
  private valueHead: ValueHead | null = null;
  syncs = 0;

  constructor(readonly model: GptOssModel, private readonly options: GptOssPolicyOptions) {
    this.optimizer = model.optimizer(options.optimizer);
  }

  /**
   * Puts a value head on the trunk (critic.type 'head'): forwards with `values` then return V per response slot from
   * the final hidden state, and `backward`'s `dValues` trains the head and, through the hidden state, the model.
   */
  attachValueHead(head: ValueHead): void {
    if (head.hiddenSize !== this.model.config.hidden_size) throw new Error(`GptOssPolicy: a value head of width ${head.hiddenSize} does not fit the model's hidden size ${this.model.config.hidden_size}`);
    this.valueHead = head;
  }

  /**
   * The final hidden states of a batch's packed positions ([N, C], no gradient kept, no unembedding) and the packed
   * position → response slot map: what the value head reads when it trains alone (the critic warm-up).
   */
  hiddenStates(batch: Batch): { hidden: Float32Array; slotOf: Int32Array; size: number } {
    const p = packForScoring(batch);
    const r = this.model.forward({ tokens: p.tokens, docIds: p.docIds, targets: p.targets }, { grad: false, head: false, hidden: true });
    return { hidden: r.hidden!, slotOf: p.slotOf, size: p.B * p.R };
  }

  private score(model: GptOssModel, batch: Batch, temperature: number, grad: boolean, entropy: boolean, adapters: boolean, values = false): PolicyForward {
    const p = packForScoring(batch);
    if (grad && temperature !== 1) throw new Error(`GptOssPolicy: training forwards need temperature 1 (got ${temperature}); the model's backward starts from untempered log-probs`);
    const head = values ? this.valueHead : null;
    if (values && !head) throw new Error('GptOssPolicy: values were asked for but no value head is attached (critic.type head)');
    const needFull = entropy || temperature !== 1;
    const r = model.forward({ tokens: p.tokens, docIds: p.docIds, targets: p.targets }, { grad, adapters, fullLogprobs: needFull, hidden: head !== null });
    const logprobs = new Float32Array(p.B * p.R);
    const ent = entropy ? new Float32Array(p.B * p.R) : undefined;
    const full = r.fullLogprobs?.toArray();
    r.fullLogprobs?.dispose();
    const V = model.config.vocab_size;
    const inv = temperature > 0 ? 1 / temperature : 1;
    for (let n = 0; n < p.tokens.length; n++) {
      const slot = p.slotOf[n];
      if (slot < 0) continue;
      if (!full) {
        logprobs[slot] = r.logprobs[n];
        continue;
      }
      // Tempered log-softmax from the untempered one: softmax((z − lse)/T) = softmax(z/T).
      const lse = logSumExp(full, n * V, V, inv);
      logprobs[slot] = temperature === 1 ? r.logprobs[n] : full[n * V + p.targets[n]] * inv - lse;
      if (ent) ent[slot] = softmaxEntropy(full, n * V, V, lse, inv);
    }
    let vals: Float32Array | undefined;
    if (head) {
      const perPosition = head.predict(r.hidden!);
      vals = new Float32Array(p.B * p.R);
      for (let n = 0; n < p.tokens.length; n++) if (p.slotOf[n] >= 0) vals[p.slotOf[n]] = perPosition[n];
    }
    if (grad) {
      this.pending = p;
      this.pendingHidden = head ? r.hidden! : null;
    }
    return { logprobs, entropy: ent, values: vals };
  }

  async logprobs(batch: Batch, options: PolicyForwardOptions): Promise<PolicyForward> {
    return this.score(this.model, batch, options.temperature, options.grad, options.entropy, true, options.values ?? false);
  }

  async referenceLogprobs(batch: Batch, options: { temperature: number }): Promise<Float32Array> {
    const ref = this.options.reference;
    if (ref === null) throw new Error('GptOssPolicy: no reference model (built without one because the run has no KL term: actor.useKlLoss and algorithm.useKlInReward are off)');
    if (ref === 'adapters-off') return this.score(this.model, batch, options.temperature, false, false, false).logprobs;
    return this.score(ref, batch, options.temperature, false, false, true).logprobs;
  }

  async backward(dLogprobs: Float32Array, dEntropy?: Float32Array, dValues?: Float32Array): Promise<void> {
    const p = this.pending;
    if (!p) throw new Error('GptOssPolicy: backward() needs a preceding logprobs(..., { grad: true })');
    this.pending = null;
    const hidden = this.pendingHidden;
    this.pendingHidden = null;
    let dHidden: Float32Array | undefined;
    if (dValues) {
      if (!hidden || !this.valueHead) throw new Error('GptOssPolicy: dValues needs a preceding grad forward with values: true');
      if (dValues.length !== p.B * p.R) throw new Error(`GptOssPolicy: dValues has ${dValues.length} values, expected ${p.B * p.R}`);
      const dv = new Float32Array(p.tokens.length);
      for (let n = 0; n < dv.length; n++) if (p.slotOf[n] >= 0) dv[n] = dValues[p.slotOf[n]];
      dHidden = this.valueHead.backward(hidden, dv);
    }
    if (dLogprobs.length !== p.B * p.R) throw new Error(`GptOssPolicy: dLogprobs has ${dLogprobs.length} values, expected ${p.B * p.R}`);
    if (dEntropy && dEntropy.length !== p.B * p.R) throw new Error(`GptOssPolicy: dEntropy has ${dEntropy.length} values, expected ${p.B * p.R}`);
    const dl = new Float32Array(p.tokens.length);
    for (let n = 0; n < dl.length; n++) if (p.slotOf[n] >= 0) dl[n] = dLogprobs[p.slotOf[n]];
    let de: Float32Array | undefined;
    if (dEntropy && dEntropy.some((x) => x !== 0)) {
      de = new Float32Array(p.tokens.length);
      for (let n = 0; n < de.length; n++) if (p.slotOf[n] >= 0) de[n] = dEntropy[p.slotOf[n]];
    }
    this.model.backward(dl, { dEntropy: de, dHidden });
  }

  zeroGrad(): void {
    this.model.zeroGrad();
  }

  get learningRate(): number {
    return this.optimizer.lr;
  }

  set learningRate(lr: number) {
    this.optimizer.lr = lr;
  }

  /** Whether a frozen reference model was built (with `'adapters-off'` the reference is the base model itself). */
  get hasReferenceModel(): boolean {
    return this.options.reference !== null && this.options.reference !== 'adapters-off';
  }

  async optimizerStep(options: { gradClip: number }): Promise<OptimizerStepResult> {
    const grads = [...this.model.gradients().values()];
    const gradNorm = options.gradClip > 0 ? clipGradNorm(grads, options.gradClip) : globalNorm(grads);
    if (!Number.isFinite(gradNorm)) {
      this.model.zeroGrad();
      return { gradNorm, skipped: true };
    }
    this.optimizer.update();
    return { gradNorm, skipped: false };
  }

  async syncToInference(): Promise<void> {
    // The in-process engine reads the same parameter tensors.
    this.syncs++;
  }

  /**
   * `dir/model` (safetensors + config), `dir/adapters.safetensors` (the LoRA adapters, when the model has any) and
   * `dir/optimizer.bin` (m and v of every trainable tensor) + `dir/optimizer.json`.
   */
  async saveCheckpoint(dir: string): Promise<void> {
    mkdirSync(dir, { recursive: true });
    saveModel(join(dir, 'model'), this.model);
    const extras = this.model.extraParameters();
    if (extras.size > 0) writeSafetensors(join(dir, 'adapters.safetensors'), new Map([...extras].map(([n, t]) => [n, { dtype: 'F32' as const, shape: [...t.shape], data: () => t.data() }])));
    const n = this.optimizer.params.length;
    const parts: Float32Array[] = [];
    for (let i = 0; i < n; i++) {
      const { m, v } = this.optimizer.moments(i);
      parts.push(Float32Array.from(m.data()), Float32Array.from(v.data()));
    }
    const total = parts.reduce((a, x) => a + x.length, 0);
    const all = new Float32Array(total);
    let off = 0;
    for (const x of parts) {
      all.set(x, off);
      off += x.length;
    }
    writeFileSync(join(dir, 'optimizer.bin'), Buffer.from(all.buffer));
    writeFileSync(join(dir, 'optimizer.json'), JSON.stringify({ format: 'longrun-adamw-v1', step: this.optimizer.step, lr: this.optimizer.lr, tensors: n, values: total }));
  }

  async loadCheckpoint(dir: string): Promise<void> {
    const loaded = loadModelCheckpoint(join(dir, 'model'));
    loadWeightsInto(this.model, loaded.params);
    const extras = this.model.extraParameters();
    if (extras.size > 0) {
      const adapters = readSafetensors(join(dir, 'adapters.safetensors')).tensors;
      for (const [name, t] of extras) {
        const a = adapters.get(name);
        if (!a || a.data.length !== t.size) throw new Error(`${dir}/adapters.safetensors has no adapter '${name}' of ${t.size} values (a checkpoint of another LoRA config?)`);
        t.data().set(a.data as Float32Array);
      }
    }
    const meta = JSON.parse(readFileSync(join(dir, 'optimizer.json'), 'utf8')) as { format: string; step: number; lr: number; tensors: number; values: number };
    if (meta.format !== 'longrun-adamw-v1' || meta.tensors !== this.optimizer.params.length) throw new Error(`${dir}/optimizer.json does not match this model's optimizer (${this.optimizer.params.length} tensors)`);
    const buf = readFileSync(join(dir, 'optimizer.bin'));
    const all = new Float32Array(buf.buffer, buf.byteOffset, buf.byteLength / 4);
    if (all.length !== meta.values) throw new Error(`${dir}/optimizer.bin has ${all.length} values, expected ${meta.values}`);
    let off = 0;
    for (let i = 0; i < meta.tensors; i++) {
      const { m, v } = this.optimizer.moments(i);
      m.data().set(all.subarray(off, off + m.size));
      off += m.size;
      v.data().set(all.subarray(off, off + v.size));
      off += v.size;
    }
    this.optimizer.step = meta.step;
    this.optimizer.lr = meta.lr;
  }

  /** Makes the frozen reference a copy of the current weights (e.g. after an SFT warm start). */
  resetReferenceToCurrent(): void {
    const ref = this.options.reference;
    if (ref === null || ref === 'adapters-off') return;
    const mine = this.model.parameters();
    for (const [name, p] of ref.parameters()) {
      const src = mine.get(name);
      if (!src || src.size !== p.size) throw new Error(`GptOssPolicy: the reference model's ${name} does not match the policy model`);
      p.data().set(src.data());
    }
  }

  peakMemoryBytes(): number {
    return memoryReport().peakBytes;
  }
}
