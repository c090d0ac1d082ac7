/**
 * Per-sequence KV cache. Full-attention layers keep every position ([Hkv, capacity, d], capacity = prompt +
 * max new tokens). Sliding-window layers keep only the last W keys in a ring buffer ([Hkv, W, d], slot p mod W).
 * Keys are stored after RoPE. Storage is engine tensors (JS memory) under the tag 'model.kvcache'.
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

  /**
   * Keys and values in position order. A full layer returns its whole buffer (unwritten slots lie in the future,
   * so the causal mask never admits them); a ring is unrolled into fresh arrays of `held` keys.
   */
  ordered(): { k: Float32Array; v: Float32Array; len: number; firstPos: number } {
    if (!this.ring) return { k: this.k.data(), v: this.v.data(), len: this.capacity, firstPos: 0 };
    const L = this.held, W = this.capacity, d = this.d, first = this.length - L;
    const k = new Float32Array(this.hkv * L * d), v = new Float32Array(this.hkv * L * d);
    const K = this.k.data(), Vd = this.v.data();
    for (let g = 0; g < this.hkv; g++) {
      for (let j = 0; j < L; j++) {
        const src = (g * W + ((first + j) % W)) * d, dst = (g * L + j) * d;
        k.set(K.subarray(src, src + d), dst);
        v.set(Vd.subarray(src, src + d), dst);
      }
    }
    return { k, v, len: L, firstPos: first };
  }

  dispose(): void {
    this.k.dispose();
    this.v.dispose();
  }
}
