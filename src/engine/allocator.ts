/**
 * A free-list allocator over a linear address range [base, limit): size-segregated bins (one per power of two),
 * first fit within a bin, immediate coalescing of neighbouring free blocks, and a bump pointer (`top`) for fresh
 * space. The range grows on demand through `grow(end)`, which must make addresses below `end` usable or return
 * false. Blocks are multiples of 16 bytes; alignments are powers of two.
 */
export interface AllocatorStats {
  /** Bytes in allocated blocks (after rounding to 16). */
  usedBytes: number;
  /** Bytes in free blocks below `top`. */
  freeBytes: number;
  freeBlocks: number;
  /** One past the highest byte ever handed out and not given back to the bump region. */
  top: number;
  liveBlocks: number;
}

const GRANULE = 16;
const BINS = 40;

function binOf(size: number): number {
  return Math.min(BINS - 1, Math.floor(Math.log2(size)));
}

function alignUp(x: number, a: number): number {
  return Math.ceil(x / a) * a;
}

export class FreeListAllocator {
  private topAddr: number;
  private readonly used = new Map<number, number>();
  private readonly freeByStart = new Map<number, number>();
  private readonly freeByEnd = new Map<number, number>();
  private readonly bins: Set<number>[] = Array.from({ length: BINS }, () => new Set<number>());
  private usedBytes = 0;
  private freeBytes = 0;

  constructor(
    readonly base: number,
    private readonly grow: (end: number) => boolean,
    private readonly describeLimit = 'the address space',
  ) {
    if (base % GRANULE !== 0) throw new Error(`allocator base ${base} must be a multiple of ${GRANULE}`);
    this.topAddr = base;
  }

  /** Returns the address of a block of at least `bytes` bytes aligned to `align`. */
  alloc(bytes: number, align = GRANULE): number {
    if (!Number.isInteger(bytes) || bytes < 0) throw new RangeError(`alloc: byte count must be a non-negative integer, got ${bytes}`);
    if (!Number.isInteger(align) || align <= 0 || (align & (align - 1)) !== 0) {
      throw new RangeError(`alloc: alignment must be a power of two, got ${align}`);
    }
    const a = Math.max(align, GRANULE);
    const size = alignUp(Math.max(bytes, 1), GRANULE);
    const fromBins = this.takeFree(size, a);
    if (fromBins !== undefined) return fromBins;
    const start = alignUp(this.topAddr, a);
    const end = start + size;
    if (!this.grow(end)) {
      throw new RangeError(
        `out of memory: cannot allocate ${bytes} bytes (${this.usedBytes} bytes live, ${this.freeBytes} free in ` +
          `fragments) within ${this.describeLimit}; free unused tensors or use smaller shapes`,
      );
    }
    if (start > this.topAddr) this.insertFree(this.topAddr, start - this.topAddr);
    this.topAddr = end;
    this.markUsed(start, size);
    return start;
  }

  /** Releases a block from `alloc`; returns its (rounded) size. */
  free(ptr: number): number {
    const size = this.used.get(ptr);
    if (size === undefined) throw new Error(`free: ${ptr} is not a live allocation (double free or foreign pointer)`);
    this.used.delete(ptr);
    this.usedBytes -= size;
    let start = ptr;
    let end = ptr + size;
    const before = this.freeByEnd.get(start);
    if (before !== undefined) {
      this.removeFree(before);
      start = before;
    }
    const afterSize = this.freeByStart.get(end);
    if (afterSize !== undefined) {
      this.removeFree(end);
      end += afterSize;
    }
    if (end === this.topAddr) this.topAddr = start;
    else this.insertFree(start, end - start);
    return size;
  }

  /** Rounded size of a live block, or undefined. */
  sizeOf(ptr: number): number | undefined {
    return this.used.get(ptr);
  }

  stats(): AllocatorStats {
    return { usedBytes: this.usedBytes, freeBytes: this.freeBytes, freeBlocks: this.freeByStart.size, top: this.topAddr, liveBlocks: this.used.size };
  }

  private takeFree(size: number, align: number): number | undefined {
    for (let b = binOf(size); b < BINS; b++) {
      for (const start of this.bins[b]) {
        const blockSize = this.freeByStart.get(start)!;
        const aligned = alignUp(start, align);
        if (aligned + size > start + blockSize) continue;
        this.removeFree(start);
        if (aligned > start) this.insertFree(start, aligned - start);
        const rest = start + blockSize - (aligned + size);
        if (rest > 0) this.insertFree(aligned + size, rest);
        this.markUsed(aligned, size);
        return aligned;
      }
    }
    return undefined;
  }

  private markUsed(start: number, size: number): void {
    this.used.set(start, size);
    this.usedBytes += size;
  }

  private insertFree(start: number, size: number): void {
    this.freeByStart.set(start, size);
    this.freeByEnd.set(start + size, start);
    this.bins[binOf(size)].add(start);
    this.freeBytes += size;
  }

  private removeFree(start: number): void {
    const size = this.freeByStart.get(start)!;
    this.freeByStart.delete(start);
    this.freeByEnd.delete(start + size);
    this.bins[binOf(size)].delete(start);
    this.freeBytes -= size;
  }
}
