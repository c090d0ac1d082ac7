/**
 * AdamW with decoupled weight decay and bias correction, matching torch.optim.AdamW:
 *   p ← p·(1 − lr·wd);  m ← β1·m + (1−β1)·g;  v ← β2·v + (1−β2)·g²;
 *   p ← p − (lr / (1 − β1ᵗ)) · m / (sqrt(v) / sqrt(1 − β2ᵗ) + eps)
 * The moment tensors are allocated under the tag 'optimizer.state' and freed by `dispose()`.
 * Parameters in Wasm memory are updated by the SIMD kernel; parameters in JS memory by the plain loop.
 */
import { getRuntime } from './runtime.ts';
import { formatShape, sameShape } from './shape.ts';
import { Tensor } from './tensor.ts';

export interface AdamWOptions {
  lr: number;
  beta1?: number;
  beta2?: number;
  eps?: number;
  weightDecay?: number;
}

export interface ParamWithGrad {
  param: Tensor;
  grad: Tensor;
  /** Per-parameter weight decay (e.g. 0 for norms and biases); defaults to the optimizer's. */
  weightDecay?: number;
}

const PARALLEL_MIN = 65_536;

export class AdamW {
  lr: number;
  beta1: number;
  beta2: number;
  eps: number;
  weightDecay: number;
  /** Completed steps. */
  step = 0;
  private readonly m: Tensor[];
  private readonly v: Tensor[];
  private disposed = false;

  constructor(readonly params: readonly ParamWithGrad[], options: AdamWOptions) {
    this.lr = options.lr;
    this.beta1 = options.beta1 ?? 0.9;
    this.beta2 = options.beta2 ?? 0.999;
    this.eps = options.eps ?? 1e-8;
    this.weightDecay = options.weightDecay ?? 0.01;
    if (!(this.lr >= 0)) throw new RangeError(`AdamW: lr must be ≥ 0, got ${this.lr}`);
    for (const [name, b] of [['beta1', this.beta1], ['beta2', this.beta2]] as const) {
      if (!(b >= 0 && b < 1)) throw new RangeError(`AdamW: ${name} must be in [0, 1), got ${b}`);
    }
    if (!(this.eps > 0)) throw new RangeError(`AdamW: eps must be > 0, got ${this.eps}`);
    params.forEach(({ param, grad }, i) => {
      if (!sameShape(param.shape, grad.shape)) {
        throw new Error(`AdamW: parameter ${i} is ${formatShape(param.shape)} but its gradient is ${formatShape(grad.shape)}`);
      }
      if (param.storageKind !== grad.storageKind) throw new Error(`AdamW: parameter ${i} and its gradient live in different storage`);
    });
    const opts = (t: Tensor) => ({ tag: 'optimizer.state', storage: t.storageKind });
    this.m = params.map(({ param }) => Tensor.zeros(param.shape, opts(param)));
    this.v = params.map(({ param }) => Tensor.zeros(param.shape, opts(param)));
  }

  /** One update of every parameter from its current gradient. */
  update(): void {
    if (this.disposed) throw new Error('AdamW: optimizer was disposed');
    this.step += 1;
    const bc1 = 1 - this.beta1 ** this.step;
    const bc2 = 1 - this.beta2 ** this.step;
    const stepSize = this.lr / bc1;
    const invSqrtBc2 = 1 / Math.sqrt(bc2);
    this.params.forEach(({ param, grad, weightDecay }, i) => {
      const decay = 1 - this.lr * (weightDecay ?? this.weightDecay);
      if (param.storageKind === 'wasm') {
        const rt = getRuntime();
        const args = [param.ptr, grad.ptr, this.m[i].ptr, this.v[i].ptr, param.size, this.beta1, this.beta2, this.eps, decay, stepSize,
          invSqrtBc2, rt.smallScratch, rt.workCounter];
        rt.run('adamw', args, param.size, PARALLEL_MIN);
      } else {
        const p = param.data(), g = grad.data(), m = this.m[i].data(), v = this.v[i].data();
        for (let j = 0; j < p.length; j++) {
          m[j] = this.beta1 * m[j] + (1 - this.beta1) * g[j];
          v[j] = this.beta2 * v[j] + (1 - this.beta2) * g[j] * g[j];
          p[j] = p[j] * decay - (stepSize * m[j]) / (Math.sqrt(v[j]) * invSqrtBc2 + this.eps);
        }
      }
    });
  }

  /**
   * Changes the hyperparameters between steps (a training service takes them with every step request); the moments
   * and the step count stay. Validated as in the constructor.
   */
  configure(options: AdamWOptions): void {
    const next = { lr: options.lr, beta1: options.beta1 ?? this.beta1, beta2: options.beta2 ?? this.beta2, eps: options.eps ?? this.eps, weightDecay: options.weightDecay ?? this.weightDecay };
    if (!(next.lr >= 0)) throw new RangeError(`AdamW: lr must be ≥ 0, got ${next.lr}`);
    for (const [name, b] of [['beta1', next.beta1], ['beta2', next.beta2]] as const) {
      if (!(b >= 0 && b < 1)) throw new RangeError(`AdamW: ${name} must be in [0, 1), got ${b}`);
    }
    if (!(next.eps > 0)) throw new RangeError(`AdamW: eps must be > 0, got ${next.eps}`);
    if (!Number.isFinite(next.weightDecay)) throw new RangeError(`AdamW: weightDecay must be finite, got ${next.weightDecay}`);
    Object.assign(this, next);
  }

  /** Sets every gradient to zero. */
  zeroGrad(): void {
    for (const { grad } of this.params) grad.fill(0);
  }

  /** First and second moments of parameter i (views owned by the optimizer; do not dispose). */
  moments(i: number): { m: Tensor; v: Tensor } {
    return { m: this.m[i], v: this.v[i] };
  }

  /** Frees the optimizer state. */
  dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    for (const t of [...this.m, ...this.v]) t.dispose();
  }
}
