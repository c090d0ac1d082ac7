/**
 * Applying learned merges to one word's bytes: repeatedly merge the pair with the lowest merged id, every
 * occurrence left to right, which reproduces exactly what training did to that word.
 * Short words use a plain rescan loop; long ones (a huge run of letters or spaces) use a linked list and a heap,
 * so the cost is O(n log n) instead of O(n²).
 */

export type MergeLookup = (a: number, b: number) => number | undefined;

const LONG_WORD = 64;
const POS_BASE = 2 ** 32;

export function applyMerges(bytes: readonly number[], mergeOf: MergeLookup): number[] {
  return bytes.length > LONG_WORD ? applyMergesLong(bytes, mergeOf) : applyMergesShort(bytes, mergeOf);
}

function applyMergesShort(bytes: readonly number[], mergeOf: MergeLookup): number[] {
  let symbols = [...bytes];
  while (symbols.length > 1) {
    let best = Infinity;
    for (let i = 0; i + 1 < symbols.length; i++) {
      const merged = mergeOf(symbols[i], symbols[i + 1]);
      if (merged !== undefined && merged < best) best = merged;
    }
    if (best === Infinity) break;
    const next: number[] = [];
    for (let i = 0; i < symbols.length; i++) {
      if (i + 1 < symbols.length && mergeOf(symbols[i], symbols[i + 1]) === best) {
        next.push(best);
        i++;
      } else {
        next.push(symbols[i]);
      }
    }
    symbols = next;
  }
  return symbols;
}

/** Min-heap of numbers (candidate = mergedId · 2^32 + left position: lowest id first, then leftmost). */
class NumberHeap {
  private items: number[] = [];

  get size(): number {
    return this.items.length;
  }

  push(value: number): void {
    const items = this.items;
    items.push(value);
    let i = items.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (items[parent] <= value) break;
      items[i] = items[parent];
      i = parent;
    }
    items[i] = value;
  }

  pop(): number {
    const items = this.items;
    const top = items[0];
    const last = items.pop()!;
    if (items.length > 0) {
      let i = 0;
      while (true) {
        const left = 2 * i + 1;
        if (left >= items.length) break;
        const child = left + 1 < items.length && items[left + 1] < items[left] ? left + 1 : left;
        if (items[child] >= last) break;
        items[i] = items[child];
        i = child;
      }
      items[i] = last;
    }
    return top;
  }
}

function applyMergesLong(bytes: readonly number[], mergeOf: MergeLookup): number[] {
  const n = bytes.length;
  const value = Int32Array.from(bytes);
  const next = new Int32Array(n);
  const prev = new Int32Array(n);
  const alive = new Uint8Array(n).fill(1);
  for (let i = 0; i < n; i++) {
    next[i] = i + 1 < n ? i + 1 : -1;
    prev[i] = i - 1;
  }
  const heap = new NumberHeap();
  const consider = (left: number) => {
    if (left < 0 || next[left] < 0) return;
    const merged = mergeOf(value[left], value[next[left]]);
    if (merged !== undefined) heap.push(merged * POS_BASE + left);
  };
  for (let i = 0; i + 1 < n; i++) consider(i);
  while (heap.size > 0) {
    const top = heap.pop();
    const merged = Math.floor(top / POS_BASE);
    const left = top % POS_BASE;
    const right = next[left];
    // Stale candidates: a side was merged away, or the pair at this position changed.
    if (!alive[left] || right < 0 || mergeOf(value[left], value[right]) !== merged) continue;
    value[left] = merged;
    alive[right] = 0;
    next[left] = next[right];
    if (next[right] >= 0) prev[next[right]] = left;
    consider(prev[left]);
    consider(left);
  }
  const out: number[] = [];
  for (let i = 0; i >= 0; i = next[i]) out.push(value[i]);
  return out;
}
