/**
 * Block masks (FlexAttention's BlockMask, CSR style): for every query tile the kv tiles that are FULL (no mask
 * evaluation needed) and PARTIAL (mask applied per element); empty tiles are not listed. The transposed lists
 * (per kv tile, the query tiles touching it) drive the dK/dV loop of the backward pass.
 *
 * Tiles are clipped to the real lengths, so a ragged last tile is classified by its real extent.
 */
import { TILE_EMPTY, TILE_FULL, TILE_PARTIAL } from './masks.ts';
import type { AttentionMask, MaskMod, TileKind } from './masks.ts';

export interface BlockMaskOptions {
  /** Query i sits at absolute position qOffset + i (chunked prefill, decode). Default 0. */
  qOffset?: number;
  /** Key j sits at absolute position kvOffset + j (e.g. a rolling window cache). Default 0. */
  kvOffset?: number;
}

export interface BlockMask {
  readonly mask: AttentionMask;
  readonly qLen: number;
  readonly kvLen: number;
  readonly qBlock: number;
  readonly kvBlock: number;
  readonly qOffset: number;
  readonly kvOffset: number;
  readonly numQTiles: number;
  readonly numKvTiles: number;
  /** Per query tile r: full kv tiles are fullIdx[fullStart[r] .. fullStart[r+1]). */
  readonly fullStart: Int32Array;
  readonly fullIdx: Int32Array;
  readonly partialStart: Int32Array;
  readonly partialIdx: Int32Array;
  /** Per kv tile c (transposed lists): query tiles with a full / partial tile in column c. */
  readonly tFullStart: Int32Array;
  readonly tFullIdx: Int32Array;
  readonly tPartialStart: Int32Array;
  readonly tPartialIdx: Int32Array;
  readonly numFull: number;
  readonly numPartial: number;
}

function checkLength(what: string, n: number, allowZero: boolean): void {
  if (!Number.isInteger(n) || n < (allowZero ? 0 : 1)) throw new RangeError(`createBlockMask: ${what} must be a ${allowZero ? 'non-negative' : 'positive'} integer, got ${n}`);
}

/** Exact classification by evaluating elements (early exit once both kinds are seen). */
function classifyByElements(mod: MaskMod, q0: number, q1: number, k0: number, k1: number): TileKind {
  let seenTrue = false;
  let seenFalse = false;
  for (let q = q0; q < q1; q++) {
    for (let k = k0; k < k1; k++) {
      if (mod(0, 0, q, k)) seenTrue = true;
      else seenFalse = true;
      if (seenTrue && seenFalse) return TILE_PARTIAL;
    }
  }
  return seenTrue ? TILE_FULL : TILE_EMPTY;
}

function toCsr(lists: number[][]): { start: Int32Array; idx: Int32Array } {
  const start = new Int32Array(lists.length + 1);
  for (let r = 0; r < lists.length; r++) start[r + 1] = start[r] + lists[r].length;
  const idx = new Int32Array(start[lists.length]);
  lists.forEach((l, r) => idx.set(l, start[r]));
  return { start, idx };
}

/**
 * Builds the block mask of `mask` for qLen queries × kvLen keys with tiles of `blockSize` (one number, or
 * separate q / kv sizes). Masks are batch- and head-independent here (called with b = h = 0).
 */
export function createBlockMask(
  mask: AttentionMask | MaskMod,
  qLen: number,
  kvLen: number,
  blockSize: number | { q: number; kv: number } = 128,
  options: BlockMaskOptions = {},
): BlockMask {
  const m: AttentionMask = typeof mask === 'function' ? { name: 'custom', mod: mask } : mask;
  const qBlock = typeof blockSize === 'number' ? blockSize : blockSize.q;
  const kvBlock = typeof blockSize === 'number' ? blockSize : blockSize.kv;
  checkLength('qLen', qLen, true);
  checkLength('kvLen', kvLen, true);
  checkLength('q block size', qBlock, false);
  checkLength('kv block size', kvBlock, false);
  const qOffset = options.qOffset ?? 0;
  const kvOffset = options.kvOffset ?? 0;
  if (!Number.isInteger(qOffset) || !Number.isInteger(kvOffset)) throw new RangeError('createBlockMask: qOffset and kvOffset must be integers');
  const numQTiles = Math.ceil(qLen / qBlock);
  const numKvTiles = Math.ceil(kvLen / kvBlock);
  const full: number[][] = [];
  const partial: number[][] = [];
  const tFull: number[][] = Array.from({ length: numKvTiles }, () => []);
  const tPartial: number[][] = Array.from({ length: numKvTiles }, () => []);
  for (let r = 0; r < numQTiles; r++) {
    const q0 = qOffset + r * qBlock;
    const q1 = qOffset + Math.min(qLen, (r + 1) * qBlock);
    const fr: number[] = [];
    const pr: number[] = [];
    for (let c = 0; c < numKvTiles; c++) {
      const k0 = kvOffset + c * kvBlock;
      const k1 = kvOffset + Math.min(kvLen, (c + 1) * kvBlock);
      const kind = m.classify ? m.classify(q0, q1, k0, k1) : classifyByElements(m.mod, q0, q1, k0, k1);
      if (kind === TILE_FULL) { fr.push(c); tFull[c].push(r); }
      else if (kind === TILE_PARTIAL) { pr.push(c); tPartial[c].push(r); }
    }
    full.push(fr);
    partial.push(pr);
  }
  const f = toCsr(full), p = toCsr(partial), tf = toCsr(tFull), tp = toCsr(tPartial);
  return {
    mask: m, qLen, kvLen, qBlock, kvBlock, qOffset, kvOffset, numQTiles, numKvTiles,
    fullStart: f.start, fullIdx: f.idx, partialStart: p.start, partialIdx: p.idx,
    tFullStart: tf.start, tFullIdx: tf.idx, tPartialStart: tp.start, tPartialIdx: tp.idx,
    numFull: f.idx.length, numPartial: p.idx.length,
  };
}

/** Number of allowed (query, key) pairs, by counting full tiles wholesale and evaluating partial tiles. */
export function countAllowedPairs(bm: BlockMask): number {
  let n = 0;
  for (let r = 0; r < bm.numQTiles; r++) {
    const q0 = r * bm.qBlock, q1 = Math.min(bm.qLen, q0 + bm.qBlock);
    for (let t = bm.fullStart[r]; t < bm.fullStart[r + 1]; t++) {
      const c = bm.fullIdx[t];
      n += (q1 - q0) * (Math.min(bm.kvLen, (c + 1) * bm.kvBlock) - c * bm.kvBlock);
    }
    for (let t = bm.partialStart[r]; t < bm.partialStart[r + 1]; t++) {
      const c = bm.partialIdx[t];
      const k0 = c * bm.kvBlock, k1 = Math.min(bm.kvLen, k0 + bm.kvBlock);
      n += countTileAllowed(bm, q0, q1, k0, k1);
    }
  }
  return n;
}

function countTileAllowed(bm: BlockMask, q0: number, q1: number, k0: number, k1: number): number {
  const band = bm.mask.band;
  let n = 0;
  for (let i = q0; i < q1; i++) {
    const p = bm.qOffset + i;
    if (band) {
      // keys with lo ≤ p − (kvOffset + j) ≤ hi
      const jLo = Math.max(k0, p - bm.kvOffset - band.hi);
      const jHi = Math.min(k1 - 1, p - bm.kvOffset - band.lo);
      if (jHi >= jLo) n += jHi - jLo + 1;
    } else {
      for (let j = k0; j < k1; j++) if (bm.mask.mod(0, 0, p, bm.kvOffset + j)) n++;
    }
  }
  return n;
}
