/**
 * Per-sequence KV cache. Full-attention layers keep every position ([Hkv, capacity, d], capacity = prompt + max new
 * tokens). Sliding-window layers keep a ring ([Hkv, R, d], position p in slot p mod R) of R = W + slack slots: the
 * slack lets a decode step append several tokens of one sequence before attending (token i of a chunk of c still
 * finds its whole window when R ≥ W + c − 1). Keys are stored after RoPE. Storage is engine tensors under the tag
 * 'model.kvcache', in Wasm memory for the Wasm kernels (ops/decode-attention-wasm.ts), JS memory otherwise.
 */
import { Tensor } from '../engine/index.ts';
import type { StorageKind } from '../engine/index.ts';
import { TAG } from './layers/context.ts';

export class LayerKvCache {
  readonly k: Tensor;
  readonly v: Tensor;
  /** Slots: positions p live at p mod slots. */
  readonly slots: number;
  /** Positions written so far (the next position to write). */
  length = 0;

  /**
   * `capacity`: the window W for a ring (it may append up to `slack` + 1 tokens before attending), else the most
   * positions the cache takes.
   */
  constructor(readonly hkv: number, readonly d: number, readonly capacity: number, readonly ring: boolean, readonly slack = 0,
    storage: StorageKind = 'js') {
    this.slots = ring ? capacity + slack : capacity;
    this.k = Tensor.zeros([hkv, this.slots, d], { tag: TAG.kv, storage });
    this.v = Tensor.zeros([hkv, this.slots, d], { tag: TAG.kv, storage });
  }

  /** Appends token `col` of head-major k, v [Hkv, n, d] as the next position. */
  append(k: Float32Array, v: Float32Array, n: number, col: number): void {
    if (!this.ring && this.length >= this.capacity) throw new RangeError(`KV cache full (${this.capacity} positions)`);
    const slot = this.length % this.slots;
    const K = this.k.data(), Vd = this.v.data(), d = this.d;
    for (let g = 0; g < this.hkv; g++) {
      const src = (g * n + col) * d, dst = (g * this.slots + slot) * d;
      K.set(k.subarray(src, src + d), dst);
      Vd.set(v.subarray(src, src + d), dst);
    }
    this.length++;
  }

  /** First position that the token at `pos` sees (its window; 0 for a full layer). */
  lowest(pos: number): number {
    return this.ring ? Math.max(0, pos - this.capacity + 1) : 0;
  }

  /** Keys the next query sees: min(length, W) for a ring, else length. */
  get held(): number {
    return this.ring ? Math.min(this.length, this.capacity) : this.length;
  }

  dispose(): void {
    this.k.dispose();
    this.v.dispose();
  }
}
