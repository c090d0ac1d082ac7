/**
 * Per-sequence KV cache. Full-attention layers keep every position ([Hkv, capacity, d], capacity = prompt +
 * max new tokens). Sliding-window layers keep only the last W keys in a ring buffer ([Hkv, W, d], slot p mod W).
 * Keys are stored after RoPE. Storage is engine tensors (JS memory) under the tag 'model.kvcache'. In both cases
 * the held keys occupy slots 0 … held−1, which is all single-query decode attention needs (ops/decodeAttention.ts).
 */
import { Tensor } from '../engine/index.ts';
import { TAG } from './layers/context.ts';

export class LayerKvCache {
  readonly k: Tensor;
  readonly v: Tensor;
  /** Positions written so far (the next position to write). */
  length = 0;

  constructor(readonly hkv: number, readonly d: number, readonly capacity: number, readonly ring: boolean) {
    this.k = Tensor.zeros([hkv, capacity, d], { tag: TAG.kv, storage: 'js' });
    this.v = Tensor.zeros([hkv, capacity, d], { tag: TAG.kv, storage: 'js' });
  }

  /** Appends token `col` of head-major k, v [Hkv, n, d] as the next position. */
  append(k: Float32Array, v: Float32Array, n: number, col: number): void {
    if (!this.ring && this.length >= this.capacity) throw new RangeError(`KV cache full (${this.capacity} positions)`);
    const slot = this.ring ? this.length % this.capacity : this.length;
    const K = this.k.data(), Vd = this.v.data(), d = this.d;
    for (let g = 0; g < this.hkv; g++) {
      const src = (g * n + col) * d, dst = (g * this.capacity + slot) * d;
      K.set(k.subarray(src, src + d), dst);
      Vd.set(v.subarray(src, src + d), dst);
    }
    this.length++;
  }

  /** Number of keys the cache holds (≤ W for a ring). */
  get held(): number {
    return this.ring ? Math.min(this.length, this.capacity) : this.length;
  }

  dispose(): void {
    this.k.dispose();
    this.v.dispose();
  }
}
