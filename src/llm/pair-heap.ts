/**
 * A max-heap of (count, pair key) for the BPE trainer. Entries go stale when a count changes; the trainer pushes
 * the new count and skips stale entries on pop (lazy deletion), which keeps every update O(log n).
 * Order: higher count first; equal counts → smaller key first (the deterministic tie-break).
 */
export class PairHeap {
  private counts: number[] = [];
  private keys: number[] = [];

  get size(): number {
    return this.counts.length;
  }

  push(count: number, key: number): void {
    this.counts.push(count);
    this.keys.push(key);
    this.siftUp(this.counts.length - 1);
  }

  /** Removes and returns the top entry, or undefined when empty. */
  pop(): { count: number; key: number } | undefined {
    const n = this.counts.length;
    if (n === 0) return undefined;
    const top = { count: this.counts[0], key: this.keys[0] };
    const lastCount = this.counts.pop()!;
    const lastKey = this.keys.pop()!;
    if (n > 1) {
      this.counts[0] = lastCount;
      this.keys[0] = lastKey;
      this.siftDown(0);
    }
    return top;
  }

  private before(i: number, j: number): boolean {
    return this.counts[i] > this.counts[j] || (this.counts[i] === this.counts[j] && this.keys[i] < this.keys[j]);
  }

  private swap(i: number, j: number): void {
    [this.counts[i], this.counts[j]] = [this.counts[j], this.counts[i]];
    [this.keys[i], this.keys[j]] = [this.keys[j], this.keys[i]];
  }

  private siftUp(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.before(i, parent)) return;
      this.swap(i, parent);
      i = parent;
    }
  }

  private siftDown(i: number): void {
    const n = this.counts.length;
    while (true) {
      const left = 2 * i + 1;
      const right = left + 1;
      let best = i;
      if (left < n && this.before(left, best)) best = left;
      if (right < n && this.before(right, best)) best = right;
      if (best === i) return;
      this.swap(i, best);
      i = best;
    }
  }
}
