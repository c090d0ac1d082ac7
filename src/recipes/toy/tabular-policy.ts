/**
 * A tabular softmax policy over a small vocabulary, with analytic gradients: the stand-in for the transformer in
 * CI-sized RL tests. The next-token distribution is `softmax(θ[key] / T)` where `key = contextKey(prefix)` is a short
 * summary of the tokens so far (for the toy task: the task cue, the assistant-turn index and the previous token).
 * It implements both `Policy` (training) and, through `TabularEngine`, `InferenceEngine` (sampling with per-token
 * log-probs), sharing one table, so recomputed log-probs equal rollout log-probs exactly.
 */
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { XoshiroRng } from '../../gym/rng.ts';
import type { Batch } from '../../rollout/batch.ts';
import type { GenerationRequest, GenerationResult, InferenceEngine } from '../../rollout/inference.ts';
import { validateRequest } from '../../rollout/inference.ts';
import { logSumExp, softmaxEntropy } from '../../model/layers/entropy.ts';
import { batchDims, type OptimizerStepResult, type Policy, type PolicyForward, type PolicyForwardOptions } from '../../rl/policy.ts';

export interface TabularPolicyOptions {
  vocabSize: number;
  /** Summarises a prefix (all tokens before the one being predicted) into a table key. */
  contextKey: (prefix: readonly number[]) => string;
  /** Initial logits for a fresh key (a "pre-trained" prior); default zeros. */
  prior?: (key: string) => Float64Array;
  /** Adam learning rate (default 0.3), betas (0.9, 0.999), eps 1e-8. */
  lr?: number;
}

interface SavedRow {
  tokens: number[];
  targets: { key: string; token: number; slot: number; temperature: number }[];
}

export class TabularPolicy implements Policy {
  readonly vocabSize: number;
  readonly table = new Map<string, Float64Array>();
  private readonly reference = new Map<string, Float64Array>();
  private readonly grads = new Map<string, Float64Array>();
  private readonly m = new Map<string, Float64Array>();
  private readonly v = new Map<string, Float64Array>();
  private step = 0;
  private saved: SavedRow[] | null = null;
  private savedDims: { B: number; R: number } | null = null;
  syncs = 0;
  lr: number;

  constructor(private readonly options: TabularPolicyOptions) {
    this.vocabSize = options.vocabSize;
    this.lr = options.lr ?? 0.3;
  }

  get learningRate(): number {
    return this.lr;
  }

  set learningRate(lr: number) {
    this.lr = lr;
  }

  contextKey(prefix: readonly number[]): string {
    return this.options.contextKey(prefix);
  }

  private fresh(key: string): Float64Array {
    const p = this.options.prior?.(key) ?? new Float64Array(this.vocabSize);
    if (p.length !== this.vocabSize) throw new Error(`tabular policy: prior for "${key}" has ${p.length} logits, expected ${this.vocabSize}`);
    return Float64Array.from(p);
  }

  /** The logits row of a key (created from the prior on first use, also in the frozen reference). */
  logitsOf(key: string, reference = false): Float64Array {
    let row = this.table.get(key);
    if (!row) {
      row = this.fresh(key);
      this.table.set(key, row);
      this.reference.set(key, this.fresh(key));
    }
    return reference ? this.reference.get(key)! : row;
  }

  /** log softmax(θ/T) of a row (T = 0 is treated as 1 for scoring: greedy rollouts report the untempered log-prob). */
  logSoftmax(key: string, temperature: number, reference = false): Float64Array {
    const z = this.logitsOf(key, reference);
    const inv = temperature > 0 ? 1 / temperature : 1;
    const lse = logSumExp(z, 0, z.length, inv);
    return z.map((x) => x * inv - lse);
  }

  /** Real tokens of a row: the prompt without left padding, then the response positions (with their slot t). */
  private rows(batch: Batch): { tokens: number[]; responseSlots: { pos: number; slot: number }[] }[] {
    const { B, P, R } = batchDims(batch);
    const ids = batch.tensor('input_ids').data;
    const att = batch.tensor('attention_mask').data;
    const W = P + R;
    const out = [];
    for (let i = 0; i < B; i++) {
      const tokens: number[] = [];
      const responseSlots: { pos: number; slot: number }[] = [];
      for (let j = 0; j < W; j++) {
        if (att[i * W + j] === 0) continue;
        if (j >= P) responseSlots.push({ pos: tokens.length, slot: j - P });
        tokens.push(ids[i * W + j]);
      }
      out.push({ tokens, responseSlots });
    }
    return out;
  }

  private score(batch: Batch, temperature: number, reference: boolean, keep: boolean, withEntropy: boolean): PolicyForward {
    const { B, R } = batchDims(batch);
    const logprobs = new Float32Array(B * R);
    const entropy = withEntropy ? new Float32Array(B * R) : undefined;
    const saved: SavedRow[] = [];
    this.rows(batch).forEach(({ tokens, responseSlots }, i) => {
      const row: SavedRow = { tokens, targets: [] };
      for (const { pos, slot } of responseSlots) {
        const key = this.options.contextKey(tokens.slice(0, pos));
        const lp = this.logSoftmax(key, temperature, reference);
        logprobs[i * R + slot] = lp[tokens[pos]];
        if (entropy) entropy[i * R + slot] = softmaxEntropy(lp, 0, lp.length, 0);
        row.targets.push({ key, token: tokens[pos], slot, temperature });
      }
      saved.push(row);
    });
    if (keep) {
      this.saved = saved;
      this.savedDims = { B, R };
    }
    return { logprobs, entropy };
  }

  async logprobs(batch: Batch, options: PolicyForwardOptions): Promise<PolicyForward> {
    return this.score(batch, options.temperature, false, options.grad, options.entropy);
  }

  async referenceLogprobs(batch: Batch, options: { temperature: number }): Promise<Float32Array> {
    return this.score(batch, options.temperature, true, false, false).logprobs;
  }

  /**
   * ∂logp(y)/∂θ_j = (1[j=y] − p_j)/T;  ∂H/∂θ_j = −p_j (log p_j + H)/T  (model/layers/entropy.ts, chain rule through ÷T).
   */
  async backward(dLogprobs: Float32Array, dEntropy?: Float32Array): Promise<void> {
    if (!this.saved || !this.savedDims) throw new Error('tabular policy: backward() needs a preceding logprobs(..., { grad: true })');
    const { B, R } = this.savedDims;
    if (dLogprobs.length !== B * R) throw new Error(`tabular policy: dLogprobs has ${dLogprobs.length} values, expected ${B * R}`);
    this.saved.forEach((row, i) => {
      for (const t of row.targets) {
        const dl = dLogprobs[i * R + t.slot];
        const de = dEntropy ? dEntropy[i * R + t.slot] : 0;
        if (dl === 0 && de === 0) continue;
        const inv = t.temperature > 0 ? 1 / t.temperature : 1;
        const lp = this.logSoftmax(t.key, t.temperature);
        let g = this.grads.get(t.key);
        if (!g) this.grads.set(t.key, (g = new Float64Array(this.vocabSize)));
        const H = softmaxEntropy(lp, 0, lp.length, 0);
        for (let j = 0; j < this.vocabSize; j++) {
          const p = Math.exp(lp[j]);
          g[j] += dl * ((j === t.token ? 1 : 0) - p) * inv + de * -p * (lp[j] + H) * inv;
        }
      }
    });
    this.saved = null;
  }

  zeroGrad(): void {
    this.grads.clear();
  }

  /** Adam (β1 0.9, β2 0.999, ε 1e-8) on the rows that have gradients, after global-norm clipping. */
  async optimizerStep(options: { gradClip: number }): Promise<OptimizerStepResult> {
    let sq = 0;
    for (const g of this.grads.values()) for (const x of g) sq += x * x;
    const gradNorm = Math.sqrt(sq);
    if (!Number.isFinite(gradNorm)) return { gradNorm, skipped: true };
    const scale = options.gradClip > 0 && gradNorm > options.gradClip ? options.gradClip / gradNorm : 1;
    this.step++;
    const b1 = 0.9;
    const b2 = 0.999;
    const c1 = 1 - b1 ** this.step;
    const c2 = 1 - b2 ** this.step;
    for (const [key, g] of this.grads) {
      const w = this.logitsOf(key);
      let m = this.m.get(key);
      if (!m) this.m.set(key, (m = new Float64Array(this.vocabSize)));
      let v = this.v.get(key);
      if (!v) this.v.set(key, (v = new Float64Array(this.vocabSize)));
      for (let j = 0; j < this.vocabSize; j++) {
        const gj = g[j] * scale;
        m[j] = b1 * m[j] + (1 - b1) * gj;
        v[j] = b2 * v[j] + (1 - b2) * gj * gj;
        w[j] -= (this.lr * (m[j] / c1)) / (Math.sqrt(v[j] / c2) + 1e-8);
      }
    }
    return { gradNorm, skipped: false };
  }

  async syncToInference(): Promise<void> {
    this.syncs++;
  }

  async saveCheckpoint(dir: string): Promise<void> {
    await mkdir(dir, { recursive: true });
    const dump = (m: Map<string, Float64Array>) => Object.fromEntries([...m].map(([k, v]) => [k, [...v]]));
    const state = { format: 'longrun-tabular-policy-v1', vocabSize: this.vocabSize, step: this.step, lr: this.lr, table: dump(this.table), reference: dump(this.reference), m: dump(this.m), v: dump(this.v) };
    await writeFile(join(dir, 'policy.json'), JSON.stringify(state));
  }

  async loadCheckpoint(dir: string): Promise<void> {
    const state = JSON.parse(await readFile(join(dir, 'policy.json'), 'utf8')) as Record<string, unknown>;
    if (state.format !== 'longrun-tabular-policy-v1' || state.vocabSize !== this.vocabSize) throw new Error(`${join(dir, 'policy.json')} is not a tabular policy checkpoint for vocabulary size ${this.vocabSize}`);
    const load = (target: Map<string, Float64Array>, src: unknown) => {
      target.clear();
      for (const [k, v] of Object.entries(src as Record<string, number[]>)) target.set(k, Float64Array.from(v));
    };
    load(this.table, state.table);
    load(this.reference, state.reference);
    load(this.m, state.m);
    load(this.v, state.v);
    this.step = state.step as number;
    this.lr = state.lr as number;
    this.grads.clear();
  }
}

/** Samples from a `TabularPolicy` token by token (temperature, top-k, top-p; log-probs of the full tempered distribution). */
export class TabularEngine implements InferenceEngine {
  constructor(private readonly policy: TabularPolicy) {}

  async generate(requests: readonly GenerationRequest[]): Promise<GenerationResult[]> {
    return requests.map((r) => {
      validateRequest(r);
      const rng = new XoshiroRng(r.seed ?? 0);
      const ctx = [...r.tokens];
      const tokens: number[] = [];
      const logprobs: number[] = [];
      for (let n = 0; n < r.maxNewTokens; n++) {
        const lp = this.policy.logSoftmax(this.policy.contextKey(ctx), r.temperature);
        const token = sample(lp, r, rng);
        tokens.push(token);
        logprobs.push(lp[token]);
        ctx.push(token);
        if (r.stop.includes(token)) return { tokens, logprobs, finishReason: 'stop' as const };
      }
      return { tokens, logprobs, finishReason: 'length' as const };
    });
  }
}

function sample(lp: Float64Array, r: GenerationRequest, rng: XoshiroRng): number {
  const order = Array.from(lp.keys()).sort((a, b) => lp[b] - lp[a] || a - b);
  if (r.temperature === 0) return order[0];
  let cand = order;
  if (r.topK !== undefined && r.topK > 0) cand = cand.slice(0, r.topK);
  if (r.topP !== undefined && r.topP < 1) {
    let mass = 0;
    const keep: number[] = [];
    for (const j of cand) {
      keep.push(j);
      mass += Math.exp(lp[j]);
      if (mass >= r.topP) break;
    }
    cand = keep;
  }
  const total = cand.reduce((a, j) => a + Math.exp(lp[j]), 0);
  let u = rng.random() * total;
  for (const j of cand) {
    u -= Math.exp(lp[j]);
    if (u <= 0) return j;
  }
  return cand[cand.length - 1];
}
