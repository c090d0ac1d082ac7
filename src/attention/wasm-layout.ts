/**
 * Descriptor layout shared with assembly/attention.ts (one i32/f32 slot per field; keep both in sync) and the
 * upload of a block mask into Wasm memory.
 */
import type { BlockMask } from './block-mask.ts';
import type { WasmRuntime } from '../engine/runtime.ts';

export const F = {
  Q: 0, K: 1, V: 2, O: 3, LSE: 4, SINKS: 5,
  HQ: 6, HKV: 7, T: 8, S: 9, D: 10, SCALE: 11,
  BQ: 12, BK: 13, NQT: 14, NKT: 15,
  FULL_START: 16, FULL_IDX: 17, PART_START: 18, PART_IDX: 19,
  TFULL_START: 20, TFULL_IDX: 21, TPART_START: 22, TPART_IDX: 23, TPART_POS: 24,
  MASK_KIND: 25, BAND_LO: 26, BAND_HI: 27, DELTA: 28, BITMAP: 29,
  SCRATCH: 30, SCRATCH_PER: 31,
  DO: 32, DQ: 33, DK: 34, DV: 35, DD: 36, DSINKS: 37, KT: 38, COUNTER: 39,
  BWD_CHUNK: 40, BWD_PHASES: 41,
} as const;
export const DESC_SLOTS = 42;
export const MASK_BAND = 0;
export const MASK_BITMAP = 1;

/** Band limits are clamped to ±2^30 so they fit an i32 (any real |q − kv| is far smaller). */
const BAND_CLAMP = 2 ** 30;

/** A block mask copied into Wasm memory (tag 'attn.blockmask'); free() releases it. */
export interface UploadedBlockMask {
  /** Phases of the backward main pass (see backwardChunks). */
  readonly backwardPhases: 1 | 2;
  /** Writes the mask fields into a descriptor. */
  fill(desc: Int32Array): void;
  free(): void;
}

function transposedPositions(bm: BlockMask): Int32Array {
  const pos = new Int32Array(bm.tPartialIdx.length);
  const cursor = bm.tPartialStart.slice(0, bm.numKvTiles);
  for (let r = 0; r < bm.numQTiles; r++) {
    for (let t = bm.partialStart[r]; t < bm.partialStart[r + 1]; t++) pos[cursor[bm.partialIdx[t]]++] = t;
  }
  return pos;
}

/**
 * Work split of the backward (attnBackward): chunks of `chunk` consecutive kv tiles, run in two phases (even
 * chunks, then odd chunks) when no two chunks of the same parity share a query tile, so that concurrently claimed
 * chunks accumulate into disjoint dQ rows. The smallest power-of-two chunk with that property is taken (band
 * masks: about (window + query tile) / kv tile) if that makes at least 3 chunks; otherwise (e.g. causal) one
 * phase with a whole kv head per item.
 */
export function backwardChunks(bm: BlockMask): { chunk: number; phases: 1 | 2 } {
  const nkt = bm.numKvTiles;
  const owner = new Int32Array(bm.numQTiles);
  const claimTile = (r: number, k: number): boolean => {
    if (owner[r] !== -1 && owner[r] !== k) return false;
    owner[r] = k;
    return true;
  };
  for (let cw = 1; Math.ceil(nkt / cw) >= 3; cw *= 2) {
    let ok = true;
    for (let parity = 0; parity < 2 && ok; parity++) {
      owner.fill(-1);
      for (let k = parity; k * cw < nkt && ok; k += 2) {
        for (let c = k * cw; c < Math.min(nkt, (k + 1) * cw) && ok; c++) {
          for (let x = bm.tPartialStart[c]; x < bm.tPartialStart[c + 1] && ok; x++) ok = claimTile(bm.tPartialIdx[x], k);
          for (let x = bm.tFullStart[c]; x < bm.tFullStart[c + 1] && ok; x++) ok = claimTile(bm.tFullIdx[x], k);
        }
      }
    }
    if (ok) return { chunk: cw, phases: 2 };
  }
  return { chunk: nkt, phases: 1 };
}

function tileBitmaps(bm: BlockMask): Uint8Array {
  const tile = bm.qBlock * bm.kvBlock;
  const out = new Uint8Array(bm.numPartial * tile);
  const mod = bm.mask.mod;
  for (let r = 0; r < bm.numQTiles; r++) {
    for (let t = bm.partialStart[r]; t < bm.partialStart[r + 1]; t++) {
      const c = bm.partialIdx[t];
      for (let ii = 0; ii < bm.qBlock && r * bm.qBlock + ii < bm.qLen; ii++) {
        for (let jj = 0; jj < bm.kvBlock && c * bm.kvBlock + jj < bm.kvLen; jj++) {
          if (mod(0, 0, bm.qOffset + r * bm.qBlock + ii, bm.kvOffset + c * bm.kvBlock + jj)) out[t * tile + ii * bm.kvBlock + jj] = 1;
        }
      }
    }
  }
  return out;
}

export function uploadBlockMask(rt: WasmRuntime, bm: BlockMask): UploadedBlockMask {
  const ptrs: number[] = [];
  const putI32 = (a: Int32Array): number => {
    const p = rt.alloc(Math.max(4, a.byteLength), 16, 'attn.blockmask');
    ptrs.push(p);
    rt.i32(p, a.length).set(a);
    return p;
  };
  const lists = {
    fullStart: putI32(bm.fullStart), fullIdx: putI32(bm.fullIdx), partStart: putI32(bm.partialStart), partIdx: putI32(bm.partialIdx),
    tFullStart: putI32(bm.tFullStart), tFullIdx: putI32(bm.tFullIdx), tPartStart: putI32(bm.tPartialStart), tPartIdx: putI32(bm.tPartialIdx),
    tPartPos: putI32(transposedPositions(bm)),
  };
  const band = bm.mask.band;
  const bwd = backwardChunks(bm);
  let bitmap = 0;
  if (!band) {
    const bits = tileBitmaps(bm);
    bitmap = rt.alloc(Math.max(16, bits.byteLength), 16, 'attn.blockmask');
    ptrs.push(bitmap);
    rt.u8(bitmap, bits.length).set(bits);
  }
  return {
    backwardPhases: bwd.phases,
    fill(desc) {
      desc[F.BQ] = bm.qBlock; desc[F.BK] = bm.kvBlock; desc[F.NQT] = bm.numQTiles; desc[F.NKT] = bm.numKvTiles;
      desc[F.FULL_START] = lists.fullStart; desc[F.FULL_IDX] = lists.fullIdx;
      desc[F.PART_START] = lists.partStart; desc[F.PART_IDX] = lists.partIdx;
      desc[F.TFULL_START] = lists.tFullStart; desc[F.TFULL_IDX] = lists.tFullIdx;
      desc[F.TPART_START] = lists.tPartStart; desc[F.TPART_IDX] = lists.tPartIdx; desc[F.TPART_POS] = lists.tPartPos;
      desc[F.MASK_KIND] = band ? MASK_BAND : MASK_BITMAP;
      desc[F.BAND_LO] = band ? Math.max(-BAND_CLAMP, Math.min(BAND_CLAMP, band.lo)) : 0;
      desc[F.BAND_HI] = band ? Math.max(-BAND_CLAMP, Math.min(BAND_CLAMP, band.hi)) : 0;
      desc[F.DELTA] = bm.qOffset - bm.kvOffset;
      desc[F.BITMAP] = bitmap;
      desc[F.BWD_CHUNK] = bwd.chunk; desc[F.BWD_PHASES] = bwd.phases;
    },
    free() {
      for (const p of ptrs.splice(0)) rt.free(p);
    },
  };
}
