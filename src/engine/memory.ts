/**
 * Exact accounting of engine memory. Every tensor storage (Wasm or JS) and every raw runtime allocation records
 * its logical byte count here under a tag (`activations`, `attn.scores`, ...) when it is created and releases it
 * when it is disposed. Nothing depends on the garbage collector.
 */
export interface TagReport {
  liveBytes: number;
  peakBytes: number;
  liveCount: number;
  /** Allocations made under this tag since the accounting started (or since the scope began). */
  allocations: number;
}

export interface MemoryReport {
  liveBytes: number;
  peakBytes: number;
  tags: Record<string, TagReport>;
}

export interface ScopeReport extends MemoryReport {
  /** Live bytes when the scope began. */
  startBytes: number;
  /** peakBytes − startBytes: the most the scope added on top of what was already live. */
  peakDeltaBytes: number;
  /** liveBytes − startBytes at the time of the report. */
  liveDeltaBytes: number;
}

interface TagState {
  live: number;
  peak: number;
  count: number;
  allocations: number;
}

class Scope {
  readonly startBytes: number;
  peak: number;
  readonly tagPeaks = new Map<string, number>();
  readonly tagAllocs = new Map<string, number>();

  constructor(private readonly owner: MemoryAccounting) {
    this.startBytes = owner.liveBytes;
    this.peak = owner.liveBytes;
  }

  report(): ScopeReport {
    const now = this.owner.report();
    const tags: Record<string, TagReport> = {};
    for (const [tag, t] of Object.entries(now.tags)) {
      tags[tag] = {
        liveBytes: t.liveBytes,
        peakBytes: this.tagPeaks.get(tag) ?? t.liveBytes,
        liveCount: t.liveCount,
        allocations: this.tagAllocs.get(tag) ?? 0,
      };
    }
    return {
      liveBytes: now.liveBytes,
      peakBytes: this.peak,
      tags,
      startBytes: this.startBytes,
      peakDeltaBytes: this.peak - this.startBytes,
      liveDeltaBytes: now.liveBytes - this.startBytes,
    };
  }
}

/** A measurement window: peaks observed between `beginMemoryScope()` and `end()`. */
export interface MemoryScope {
  report(): ScopeReport;
  /** Stops tracking and returns the final report. */
  end(): ScopeReport;
}

export class MemoryAccounting {
  liveBytes = 0;
  peakBytes = 0;
  private readonly tags = new Map<string, TagState>();
  private readonly scopes = new Set<Scope>();

  record(tag: string, bytes: number): void {
    if (!Number.isFinite(bytes) || bytes < 0) throw new RangeError(`memory accounting: invalid byte count ${bytes}`);
    let t = this.tags.get(tag);
    if (!t) {
      t = { live: 0, peak: 0, count: 0, allocations: 0 };
      this.tags.set(tag, t);
    }
    t.live += bytes;
    t.count += 1;
    t.allocations += 1;
    if (t.live > t.peak) t.peak = t.live;
    this.liveBytes += bytes;
    if (this.liveBytes > this.peakBytes) this.peakBytes = this.liveBytes;
    for (const s of this.scopes) {
      if (this.liveBytes > s.peak) s.peak = this.liveBytes;
      if (t.live > (s.tagPeaks.get(tag) ?? 0)) s.tagPeaks.set(tag, t.live);
      s.tagAllocs.set(tag, (s.tagAllocs.get(tag) ?? 0) + 1);
    }
  }

  release(tag: string, bytes: number): void {
    const t = this.tags.get(tag);
    if (!t || t.live < bytes || t.count === 0) {
      throw new Error(`memory accounting: releasing ${bytes} bytes under tag '${tag}' that were never recorded`);
    }
    t.live -= bytes;
    t.count -= 1;
    this.liveBytes -= bytes;
  }

  /** Sets the peak (global and per tag) to the current live bytes. */
  resetPeak(): void {
    this.peakBytes = this.liveBytes;
    for (const t of this.tags.values()) t.peak = t.live;
  }

  report(): MemoryReport {
    const tags: Record<string, TagReport> = {};
    for (const [tag, t] of [...this.tags.entries()].sort((a, b) => a[0].localeCompare(b[0]))) {
      tags[tag] = { liveBytes: t.live, peakBytes: t.peak, liveCount: t.count, allocations: t.allocations };
    }
    return { liveBytes: this.liveBytes, peakBytes: this.peakBytes, tags };
  }

  beginScope(): MemoryScope {
    const s = new Scope(this);
    for (const [tag, t] of this.tags) s.tagPeaks.set(tag, t.live);
    this.scopes.add(s);
    return {
      report: () => s.report(),
      end: () => {
        const r = s.report();
        this.scopes.delete(s);
        return r;
      },
    };
  }
}

/** The process-wide accounting that all engine allocations report to. */
export const engineMemory = new MemoryAccounting();

export function memoryReport(): MemoryReport {
  return engineMemory.report();
}

export function resetPeak(): void {
  engineMemory.resetPeak();
}

export function beginMemoryScope(): MemoryScope {
  return engineMemory.beginScope();
}

/** Runs `fn` inside a memory scope and returns its result with the scope's report. */
export function measureMemory<T>(fn: () => T): { result: T; memory: ScopeReport } {
  const scope = engineMemory.beginScope();
  try {
    const result = fn();
    return { result, memory: scope.report() };
  } finally {
    scope.end();
  }
}

/** Formats a byte count as B / KiB / MiB / GiB. */
export function formatBytes(bytes: number): string {
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = bytes;
  let u = 0;
  while (Math.abs(v) >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return u === 0 ? `${v} B` : `${v.toFixed(2)} ${units[u]}`;
}
