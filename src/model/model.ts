/**
 * GptOssModel: the gpt-oss transformer with explicit forward and backward (llm.c style).
 *
 *   x = embed(tokens)
 *   per layer i:  x = x + Attn_i(RMSNorm(x))        (sliding window or full, per layer_types; sinks; YaRN RoPE)
 *                 x = x + MoE_i(RMSNorm(x))         (or the dense MLP)
 *   logits = RMSNorm(x) Whᵀ;  logprob_n = log softmax(logits_n)[target_n]
 *   loss = −Σ m_n logprob_n / Σ m_n
 *
 * The trainer seam: `forward(input) → { loss, logprobs }`, `backward(dlogprobs?)` (default: the gradient of
 * `loss`), then an optimizer over `trainable()`. Gradients accumulate until `zeroGrad()`.
 * Gradient checkpointing keeps only each layer's input and recomputes the layer's forward in the backward.
 */
import { AdamW, beginMemoryScope, getBackend, Mulberry32Rng, Tensor, type MemoryScope, type ParamWithGrad, type ScopeReport } from '../engine/index.ts';
import { createBlockMask, type BlockMask } from '../attention/block-mask.ts';
import { layerMask, packBatch, type ModelInput, type PackedBatch } from './batch.ts';
import type { GptOssConfig } from './config.ts';
import { attentionBackward, attentionForward, disposeAttentionSaved, type AttentionDims, type AttentionParams, type AttentionSaved } from './layers/attention.ts';
import { TAG, type AttentionKind, type Impl, type LayerContext } from './layers/context.ts';
import { embeddingBackward, embeddingForward } from './layers/embedding.ts';
import { disposeHeadSaved, headBackward, headForward, headLogSoftmax, type HeadSaved } from './layers/head.ts';
import type { LinearParams } from './layers/linear.ts';
import { denseMlpBackward, denseMlpForward, disposeDenseMlpSaved, type DenseMlpParams, type DenseMlpSaved } from './layers/mlp.ts';
import { disposeMoeSaved, moeBackward, moeForward, type MoeParams, type MoeSaved } from './layers/moe.ts';
import { rmsnormBackward, rmsnormForward, type NormParams } from './layers/rmsnorm.ts';
import { RopeTable, yarnParams } from './layers/rope.ts';
import { layerPrefix, paramSpecs, type ParamSpec } from './params.ts';

export interface ModelOptions {
  /** 'wasm' (default): engine Wasm kernels + flexAttention. 'reference': float64-accumulating TS ops (tests). */
  impl?: Impl;
  /** Seed of the normal(0, initializer_range) initialisation. Default 0. */
  seed?: number;
  /** Recompute each layer's forward during the backward instead of keeping its activations. */
  checkpointing?: boolean;
  /** 'flex' (default) or 'eager' (materialised scores; ablations only, no packed documents). */
  attention?: AttentionKind;
  /** Attention tile size. Default 64. */
  attnBlock?: number;
  /** Allocate gradient buffers (default true; false for inference-only models). */
  grads?: boolean;
  /**
   * Start lm_head as a copy of the token embedding (the two stay separate parameters, as in gpt-oss). For models
   * trained from scratch: the unembedding of a token then starts aligned with its embedding, which helps a small
   * model learn to copy tokens from its context. Default false.
   */
  tiedInit?: boolean;
  /**
   * 'exact' (default): each attention layer's learned sink logits join the softmax's normaliser, as gpt-oss trains
   * and serves them. 'ignore': the sinks are treated as −∞ (they add nothing to the normaliser, and get no gradient),
   * which is what an engine that drops them serves, e.g. FlexAttention without the log-sum-exp correction. The sink
   * parameters are still loaded and saved unchanged; only attention stops reading them. For the sinks ablation.
   */
  sinks?: 'exact' | 'ignore';
}

export interface ForwardOptions {
  /** Keep what the backward needs (default: true when the model has gradient buffers). */
  grad?: boolean;
  /** Run the LoRA adapters (default true; false = the frozen base, e.g. the KL reference policy). */
  adapters?: boolean;
  /** Also return the full-vocabulary log-softmax [N, V] (caller disposes it). */
  fullLogprobs?: boolean;
  /** Also return a copy of the raw logits [N, V] (caller disposes it). */
  logits?: boolean;
  /**
   * Only these token rows reach the unembedding (no targets, no backward): `fullLogprobs` is then [rows, V].
   * Generation's prefill uses it for the last prompt token of each sequence.
   */
  rows?: Int32Array;
  /** Called per layer with the rotated keys and the values [Hkv, N, d] (KV-cache prefill). */
  captureKv?: (layer: number, k: Tensor, v: Tensor) => void;
  /**
   * Also return the final hidden state h = RMSNorm(x) [N, C] (the unembedding's input) as `hidden`: what a value head
   * reads (src/rl/critic.ts). Its gradient comes back through `backward`'s `dHidden`.
   */
  hidden?: boolean;
  /**
   * false: stop at the final norm (no unembedding, no logits; `logprobs` all 0): a trunk read only through `hidden`,
   * e.g. a separate critic model. Its backward then starts from `dHidden` alone. Default true.
   */
  head?: boolean;
}

export interface ForwardResult {
  /** −Σ m·logprob / Σ m (0 when no token carries weight). */
  loss: number;
  /** log p(target_n) per token, 0 where the target is −1. */
  logprobs: Float32Array;
  /** Σ of the loss weights. */
  tokenWeight: number;
  fullLogprobs?: Tensor;
  logits?: Tensor;
  /** With `hidden`: RMSNorm(x_final), [N, C] row-major. */
  hidden?: Float32Array;
}

export interface LayerParams {
  index: number;
  kind: 'sliding_attention' | 'full_attention';
  ln1: NormParams;
  attn: AttentionParams;
  ln2: NormParams;
  moe?: MoeParams;
  dense?: DenseMlpParams;
}

interface LayerSaved {
  x: Tensor;
  xn1?: Tensor;
  rstd1?: Tensor;
  attn?: AttentionSaved;
  x2?: Tensor;
  xn2?: Tensor;
  rstd2?: Tensor;
  moe?: MoeSaved;
  dense?: DenseMlpSaved;
}

interface StepState {
  batch: PackedBatch;
  masks: Map<string, BlockMask>;
  layers: LayerSaved[];
  xFinal: Tensor;
  rstdFinal: Tensor;
  /** null for a forward with `head: false`. */
  head: HeadSaved | null;
  useLora: boolean;
  checkpointed: boolean;
  scope: MemoryScope;
}

export class GptOssModel {
  readonly config: GptOssConfig;
  readonly ctx: LayerContext;
  readonly rope: RopeTable;
  /** Recompute each layer in the backward (may be switched between steps). */
  checkpointing: boolean;
  readonly specs: ParamSpec[];
  readonly layers: LayerParams[] = [];
  /** Last step's memory: peak bytes by tag over forward + backward. */
  lastMemory: ScopeReport | null = null;
  private readonly params = new Map<string, Tensor>();
  private readonly grads = new Map<string, Tensor>();
  private readonly extra = new Map<string, { param: Tensor; grad?: Tensor; decay: boolean }>();
  private baseTrainable = true;
  /** ModelOptions.sinks: 'ignore' gives every layer's attention no sink term (null sinks: the kernels' −∞ sink). */
  private readonly ignoreSinks: boolean;
  private state: StepState | null = null;
  private disposed = false;

  constructor(config: GptOssConfig, options: ModelOptions = {}) {
    this.config = config;
    const impl = options.impl ?? 'wasm';
    this.ctx = { backend: getBackend(impl), impl, attention: options.attention ?? 'flex', attnBlock: options.attnBlock ?? 64 };
    this.checkpointing = options.checkpointing ?? false;
    this.rope = new RopeTable(yarnParams(config));
    this.specs = paramSpecs(config);
    const rng = new Mulberry32Rng(options.seed ?? 0);
    const std = config.initializer_range;
    for (const s of this.specs) {
      let t: Tensor;
      if (s.kind === 'bias') t = Tensor.zeros(s.shape, { tag: TAG.params });
      else if (s.kind === 'norm') t = Tensor.full(s.shape, 1, { tag: TAG.params });
      else t = Tensor.randn(s.shape, rng, { std, tag: TAG.params });
      this.params.set(s.name, t);
      if (options.grads ?? true) this.grads.set(s.name, Tensor.zeros(s.shape, { tag: TAG.grads }));
    }
    if (options.tiedInit) this.params.get('lm_head.weight')!.data().set(this.params.get('model.embed_tokens.weight')!.data());
    const sinks = options.sinks ?? 'exact';
    if (sinks !== 'exact' && sinks !== 'ignore') throw new Error(`GptOssModel: sinks must be 'exact' or 'ignore', got ${JSON.stringify(sinks)}`);
    this.ignoreSinks = sinks === 'ignore';
    for (let i = 0; i < config.num_hidden_layers; i++) this.layers.push(this.buildLayer(i));
  }

  /** 'ignore' when attention treats the sink logits as −∞ (ModelOptions.sinks). */
  get sinks(): 'exact' | 'ignore' {
    return this.ignoreSinks ? 'ignore' : 'exact';
  }

  get dims(): AttentionDims {
    return { hq: this.config.num_attention_heads, hkv: this.config.num_key_value_heads, d: this.config.head_dim };
  }

  /** Every base parameter by its HF name (the tensors themselves; write into them to load weights). */
  parameters(): Map<string, Tensor> {
    return new Map(this.params);
  }

  /** Gradients of the trainable parameters (base ones while the base is trainable, plus adapters). */
  gradients(): Map<string, Tensor> {
    const out = new Map<string, Tensor>();
    if (this.baseTrainable) for (const [k, g] of this.grads) out.set(k, g);
    for (const [k, e] of this.extra) if (e.grad) out.set(k, e.grad);
    return out;
  }

  /** Parameter/gradient pairs for an optimizer; no weight decay on norms, biases and sinks. */
  trainable(): ParamWithGrad[] {
    const out: ParamWithGrad[] = [];
    if (this.baseTrainable) {
      for (const s of this.specs) {
        const grad = this.grads.get(s.name);
        if (!grad) continue;
        out.push({ param: this.params.get(s.name)!, grad, ...(s.kind === 'weight' || s.kind === 'embedding' ? {} : { weightDecay: 0 }) });
      }
    }
    for (const e of this.extra.values()) if (e.grad) out.push({ param: e.param, grad: e.grad, ...(e.decay ? {} : { weightDecay: 0 }) });
    return out;
  }

  /** An AdamW over `trainable()`. */
  optimizer(options: ConstructorParameters<typeof AdamW>[1]): AdamW {
    return new AdamW(this.trainable(), options);
  }

  zeroGrad(): void {
    for (const g of this.gradients().values()) g.fill(0);
  }

  param(name: string): Tensor {
    const t = this.params.get(name) ?? this.extra.get(name)?.param;
    if (!t) throw new Error(`unknown parameter '${name}'`);
    return t;
  }

  grad(name: string): Tensor | undefined {
    return this.grads.get(name) ?? this.extra.get(name)?.grad;
  }

  /** Freezes (false) or unfreezes the base parameters; frozen tensors get no gradient. */
  setBaseTrainable(trainable: boolean): void {
    this.baseTrainable = trainable;
    for (let i = 0; i < this.layers.length; i++) {
      const old = this.layers[i];
      const fresh = this.buildLayer(i);
      for (const key of ['q', 'k', 'v', 'o'] as const) fresh.attn[key].lora = old.attn[key].lora;
      if (old.moe && fresh.moe) fresh.moe.lora = old.moe.lora;
      if (old.dense && fresh.dense) fresh.dense.lora = old.dense.lora;
      this.layers[i] = fresh;
    }
  }

  get isBaseTrainable(): boolean {
    return this.baseTrainable;
  }

  /** Registers an extra trainable tensor (LoRA adapters) under a name. */
  registerExtra(name: string, param: Tensor, grad: Tensor | undefined, decay: boolean): void {
    if (this.params.has(name) || this.extra.has(name)) throw new Error(`parameter '${name}' already exists`);
    this.extra.set(name, { param, grad, decay });
  }

  /** Extra (adapter) parameters by name. */
  extraParameters(): Map<string, Tensor> {
    return new Map([...this.extra].map(([k, e]) => [k, e.param]));
  }

  private buildLayer(i: number): LayerParams {
    const pre = layerPrefix(i);
    const P = (n: string) => this.params.get(`${pre}.${n}`)!;
    const G = (n: string) => (this.baseTrainable ? this.grads.get(`${pre}.${n}`) : undefined);
    const lin = (n: string): LinearParams => ({
      weight: P(`${n}.weight`), bias: this.config.attention_bias ? P(`${n}.bias`) : undefined,
      gradWeight: G(`${n}.weight`), gradBias: this.config.attention_bias ? G(`${n}.bias`) : undefined,
    });
    const layer: LayerParams = {
      index: i,
      kind: this.config.layer_types[i],
      ln1: { weight: P('input_layernorm.weight'), gradWeight: G('input_layernorm.weight') },
      attn: {
        q: lin('self_attn.q_proj'), k: lin('self_attn.k_proj'), v: lin('self_attn.v_proj'), o: lin('self_attn.o_proj'),
        sinks: this.ignoreSinks ? null : P('self_attn.sinks'), gradSinks: this.ignoreSinks ? undefined : G('self_attn.sinks'),
      },
      ln2: { weight: P('post_attention_layernorm.weight'), gradWeight: G('post_attention_layernorm.weight') },
    };
    if (this.config.mlp === 'moe') {
      const e = 'mlp.experts';
      layer.moe = {
        router: { weight: P('mlp.router.weight'), bias: P('mlp.router.bias'), gradWeight: G('mlp.router.weight'), gradBias: G('mlp.router.bias') },
        experts: { w1: P(`${e}.gate_up_proj`), b1: P(`${e}.gate_up_proj_bias`), w2: P(`${e}.down_proj`), b2: P(`${e}.down_proj_bias`) },
        grad: { w1: G(`${e}.gate_up_proj`), b1: G(`${e}.gate_up_proj_bias`), w2: G(`${e}.down_proj`), b2: G(`${e}.down_proj_bias`) },
      };
    } else {
      layer.dense = {
        w: { w1: P('mlp.gate_up_proj'), b1: P('mlp.gate_up_proj_bias'), w2: P('mlp.down_proj'), b2: P('mlp.down_proj_bias') },
        grad: { w1: G('mlp.gate_up_proj'), b1: G('mlp.gate_up_proj_bias'), w2: G('mlp.down_proj'), b2: G('mlp.down_proj_bias') },
      };
    }
    return layer;
  }

  private blockMaskFor(kind: LayerParams['kind'], b: PackedBatch, cache: Map<string, BlockMask>): BlockMask {
    let bm = cache.get(kind);
    if (!bm) {
      bm = createBlockMask(layerMask(kind, this.config.sliding_window, b), b.n, b.n, this.ctx.attnBlock);
      cache.set(kind, bm);
    }
    return bm;
  }

  /** One layer forward; fills `s` with everything its backward needs (x is the input, not owned). */
  private layerForward(L: LayerParams, x: Tensor, b: PackedBatch, masks: Map<string, BlockMask>, useLora: boolean, capture?: ForwardOptions['captureKv']): { out: Tensor; saved: LayerSaved } {
    const be = this.ctx.backend, eps = this.config.rms_norm_eps, limit = this.config.swiglu_limit;
    const n1 = rmsnormForward(this.ctx, L.ln1, x, eps);
    const a = attentionForward(this.ctx, L.attn, this.dims, n1.y, b.positions, this.rope, this.blockMaskFor(L.kind, b, masks), useLora);
    capture?.(L.index, a.saved.kh, a.saved.vh);
    const x2 = be.add(x, a.y, { tag: TAG.act });
    a.y.dispose();
    const n2 = rmsnormForward(this.ctx, L.ln2, x2, eps);
    const saved: LayerSaved = { x, xn1: n1.y, rstd1: n1.rstd, attn: a.saved, x2, xn2: n2.y, rstd2: n2.rstd };
    let m: Tensor;
    if (L.moe) {
      const r = moeForward(this.ctx, L.moe, n2.y, this.config.num_experts_per_tok, limit, useLora);
      m = r.y; saved.moe = r.saved;
    } else {
      const r = denseMlpForward(this.ctx, L.dense!, n2.y, limit, useLora);
      m = r.y; saved.dense = r.saved;
    }
    const out = be.add(x2, m, { tag: TAG.act });
    m.dispose();
    return { out, saved };
  }

  private disposeLayerSaved(s: LayerSaved): void {
    if (s.attn) disposeAttentionSaved(s.attn);
    if (s.moe) disposeMoeSaved(s.moe);
    if (s.dense) disposeDenseMlpSaved(s.dense);
    for (const t of [s.xn1, s.rstd1, s.x2, s.xn2, s.rstd2]) t?.dispose();
  }

  /** dOut → dx of one layer; disposes dOut and the layer's activations. */
  private layerBackward(L: LayerParams, s: LayerSaved, dOut: Tensor): Tensor {
    const be = this.ctx.backend, limit = this.config.swiglu_limit;
    const dxn2 = L.moe ? moeBackward(this.ctx, L.moe, s.moe!, dOut, limit) : denseMlpBackward(this.ctx, L.dense!, s.dense!, dOut, limit);
    const dx2 = rmsnormBackward(this.ctx, L.ln2, s.x2!, s.rstd2!, dxn2);
    dxn2.dispose();
    be.axpy(dx2, 1, dOut);
    dOut.dispose();
    const dxn1 = attentionBackward(this.ctx, L.attn, this.dims, s.attn!, this.rope, dx2);
    const dx = rmsnormBackward(this.ctx, L.ln1, s.x, s.rstd1!, dxn1);
    dxn1.dispose();
    be.axpy(dx, 1, dx2);
    dx2.dispose();
    this.disposeLayerSaved(s);
    return dx;
  }

  private checkBatch(b: PackedBatch): void {
    const V = this.config.vocab_size, P = this.config.max_position_embeddings;
    for (let i = 0; i < b.n; i++) {
      if (!(b.tokens[i] >= 0 && b.tokens[i] < V)) throw new RangeError(`forward: token id ${b.tokens[i]} at position ${i} is outside the vocabulary [0, ${V})`);
      if (!(b.targets[i] >= -1 && b.targets[i] < V)) throw new RangeError(`forward: targets[${i}] = ${b.targets[i]} is outside the vocabulary [0, ${V}) (use −1 for none)`);
      if (b.positions[i] >= P) throw new RangeError(`forward: position ${b.positions[i]} is beyond max_position_embeddings (${P})`);
    }
  }

  forward(input: ModelInput, options: ForwardOptions = {}): ForwardResult {
    if (this.disposed) throw new Error('GptOssModel: used after dispose()');
    this.releaseState();
    const grad = options.grad ?? this.gradients().size > 0;
    const useLora = options.adapters ?? true;
    if (options.rows && grad) throw new Error('forward: `rows` is for inference; pass grad: false');
    const b = packBatch(input);
    this.checkBatch(b);
    const scope = beginMemoryScope();
    const masks = new Map<string, BlockMask>();
    const checkpointed = this.checkpointing;
    let x = embeddingForward(this.ctx, this.params.get('model.embed_tokens.weight')!, b.tokens);
    const saved: LayerSaved[] = [];
    for (const L of this.layers) {
      const { out, saved: s } = this.layerForward(L, x, b, masks, useLora, options.captureKv);
      if (grad && !checkpointed) saved.push(s);
      else {
        this.disposeLayerSaved(s);
        if (grad) saved.push({ x });
        else x.dispose();
      }
      x = out;
    }
    if (options.rows) {
      const h = this.ctx.backend.gatherRows(x, options.rows, { tag: TAG.act });
      x.dispose();
      x = h;
    }
    const fn = rmsnormForward(this.ctx, { weight: this.params.get('model.norm.weight')! }, x, this.config.rms_norm_eps);
    const hidden = options.hidden ? Float32Array.from(fn.y.data()) : undefined;
    if (options.head === false) {
      if (options.rows || options.fullLogprobs || options.logits) throw new Error('forward: head: false computes no logits (rows, fullLogprobs and logits need the unembedding)');
      fn.y.dispose();
      const result: ForwardResult = { loss: 0, logprobs: new Float32Array(b.n), tokenWeight: 0, hidden };
      if (grad) this.state = { batch: b, masks, layers: saved, xFinal: x, rstdFinal: fn.rstd, head: null, useLora, checkpointed, scope };
      else {
        fn.rstd.dispose(); x.dispose();
        this.lastMemory = scope.end();
      }
      return result;
    }
    const head = headForward(this.ctx, this.params.get('lm_head.weight')!, fn.y, options.rows ? new Int32Array(x.shape[0]).fill(-1) : b.targets);
    let tokenWeight = 0, lossSum = 0;
    if (!options.rows) for (let i = 0; i < b.n; i++) { tokenWeight += b.weights[i]; lossSum -= b.weights[i] * head.logprobs[i]; }
    const result: ForwardResult = { loss: tokenWeight > 0 ? lossSum / tokenWeight : 0, logprobs: head.logprobs, tokenWeight, hidden };
    if (options.fullLogprobs) result.fullLogprobs = headLogSoftmax(this.ctx, head.saved);
    if (options.logits) result.logits = head.saved.logits.clone({ tag: TAG.logits });
    if (grad) {
      this.state = { batch: b, masks, layers: saved, xFinal: x, rstdFinal: fn.rstd, head: head.saved, useLora, checkpointed, scope };
    } else {
      disposeHeadSaved(head.saved);
      fn.y.dispose(); fn.rstd.dispose(); x.dispose();
      this.lastMemory = scope.end();
    }
    return result;
  }

  /**
   * Backpropagates from d(objective)/d(logprob_n) per token (default: the gradient of `loss`, i.e.
   * −m_n / Σ m) and accumulates into the parameter gradients. `dHidden` [N, C]: d(objective)/d(hidden), added at the
   * unembedding's input (a value head's gradient); after a forward with `head: false` it is the only input.
   */
  backward(dlogprobs?: Float32Array, options: { dEntropy?: Float32Array; dHidden?: Float32Array } = {}): void {
    const st = this.state;
    if (!st) throw new Error('backward: call forward() with grad enabled first (each forward allows one backward)');
    this.state = null;
    const b = st.batch;
    const C = this.config.hidden_size;
    if (options.dHidden && options.dHidden.length !== b.n * C) throw new RangeError(`backward: dHidden has ${options.dHidden.length} entries, expected ${b.n} tokens × ${C}`);
    const G = (n: string) => (this.baseTrainable ? this.grads.get(n) : undefined);
    const normParams = { weight: this.params.get('model.norm.weight')!, gradWeight: G('model.norm.weight') };
    if (!st.head) {
      if (!options.dHidden) throw new Error('backward: a forward with head: false needs dHidden');
      const dh = Tensor.from(options.dHidden, [b.n, C], { tag: TAG.act });
      const dx = rmsnormBackward(this.ctx, normParams, st.xFinal, st.rstdFinal, dh);
      dh.dispose(); st.rstdFinal.dispose(); st.xFinal.dispose();
      this.trunkBackward(st, dx);
      return;
    }
    let dl = dlogprobs;
    if (!dl) {
      let w = 0;
      for (let i = 0; i < b.n; i++) w += b.weights[i];
      dl = new Float32Array(b.n);
      if (w > 0) for (let i = 0; i < b.n; i++) dl[i] = -b.weights[i] / w;
    } else if (dl.length !== b.n) throw new RangeError(`backward: dlogprobs has ${dl.length} entries, the forward had ${b.n} tokens`);
    const dh = headBackward(this.ctx, this.params.get('lm_head.weight')!, G('lm_head.weight'), st.head, dl, options.dEntropy);
    disposeHeadSaved(st.head);
    if (options.dHidden) {
      const extra = Tensor.from(options.dHidden, [b.n, C], { tag: TAG.temp });
      this.ctx.backend.axpy(dh, 1, extra);
      extra.dispose();
    }
    const dx = rmsnormBackward(this.ctx, normParams, st.xFinal, st.rstdFinal, dh);
    dh.dispose(); st.head.h.dispose(); st.rstdFinal.dispose(); st.xFinal.dispose();
    this.trunkBackward(st, dx);
  }

  /** The layers' and the embedding's backward from d(objective)/d(x_final); ends the step's memory scope. */
  private trunkBackward(st: StepState, dxFinal: Tensor): void {
    const b = st.batch;
    const G = (n: string) => (this.baseTrainable ? this.grads.get(n) : undefined);
    let dx = dxFinal;
    for (let i = this.layers.length - 1; i >= 0; i--) {
      const L = this.layers[i];
      let s = st.layers[i];
      if (st.checkpointed) {
        const re = this.layerForward(L, s.x, b, st.masks, st.useLora);
        re.out.dispose();
        s = re.saved;
      }
      const x = s.x;
      dx = this.layerBackward(L, s, dx);
      x.dispose();
    }
    embeddingBackward(this.ctx, G('model.embed_tokens.weight'), b.tokens, dx);
    dx.dispose();
    this.lastMemory = st.scope.end();
  }

  /** Per-token target log-probs (and optionally the full log-softmax) without keeping activations. */
  logprobs(input: ModelInput, options: Omit<ForwardOptions, 'grad'> = {}): ForwardResult {
    return this.forward(input, { ...options, grad: false });
  }

  /** Drops a pending forward's activations (a forward without a backward). */
  releaseState(): void {
    const st = this.state;
    if (!st) return;
    this.state = null;
    for (const s of st.layers) { this.disposeLayerSaved(s); s.x.dispose(); }
    if (st.head) {
      disposeHeadSaved(st.head);
      st.head.h.dispose();
    }
    st.rstdFinal.dispose(); st.xFinal.dispose();
    this.lastMemory = st.scope.end();
  }

  dispose(): void {
    if (this.disposed) return;
    this.releaseState();
    this.disposed = true;
    for (const t of this.params.values()) t.dispose();
    for (const t of this.grads.values()) t.dispose();
    for (const e of this.extra.values()) { e.param.dispose(); e.grad?.dispose(); }
  }
}
