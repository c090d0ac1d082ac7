/**
 * Attention masks in the FlexAttention `mask_mod` style: `(b, h, qPos, kvPos) → allowed`.
 *
 * Positions are ABSOLUTE: a block mask built with `qOffset`/`kvOffset` calls the mask with `qOffset + i` and
 * `kvOffset + j`, so one mask function serves prefill, chunked prefill and decode alike.
 *
 * Besides the element function, a mask may carry
 * - `classify`: an exact tile classifier (empty / partial / full) so block masks are cheap at long T, and
 * - `band`: "allowed iff lo ≤ qPos − kvPos ≤ hi", which the Wasm kernels evaluate inside partial tiles without
 *   calling back into JS.
 */

export type MaskMod = (b: number, h: number, qPos: number, kvPos: number) => boolean;

export const TILE_EMPTY = 0;
export const TILE_PARTIAL = 1;
export const TILE_FULL = 2;
export type TileKind = typeof TILE_EMPTY | typeof TILE_PARTIAL | typeof TILE_FULL;

/** Classifies the tile of query positions [q0, q1) × key positions [k0, k1) (half-open, absolute). */
export type TileClassifier = (q0: number, q1: number, k0: number, k1: number) => TileKind;

/** `lo ≤ qPos − kvPos ≤ hi` (hi may be Infinity). */
export interface Band {
  readonly lo: number;
  readonly hi: number;
}

export interface AttentionMask {
  readonly name: string;
  readonly mod: MaskMod;
  readonly classify?: TileClassifier;
  readonly band?: Band;
}

function bandMask(name: string, band: Band): AttentionMask {
  const { lo, hi } = band;
  return {
    name,
    band,
    mod: (_b, _h, q, kv) => q - kv >= lo && q - kv <= hi,
    classify: (q0, q1, k0, k1) => {
      const dMin = q0 - (k1 - 1);
      const dMax = q1 - 1 - k0;
      if (dMax < lo || dMin > hi) return TILE_EMPTY;
      if (dMin >= lo && dMax <= hi) return TILE_FULL;
      return TILE_PARTIAL;
    },
  };
}

/** Causal: key allowed iff kvPos ≤ qPos. */
export function causalMask(): AttentionMask {
  return bandMask('causal', { lo: 0, hi: Infinity });
}

/**
 * gpt-oss sliding window of `window` keys INCLUDING the query itself: allowed iff 0 ≤ qPos − kvPos ≤ window − 1
 * (HF `kv > q − W`). Note that the FlexAttention example `q − kv <= W` would admit W + 1 keys.
 */
export function slidingWindowMask(window: number): AttentionMask {
  if (!Number.isInteger(window) || window <= 0) {
    throw new RangeError(`slidingWindowMask: window must be a positive integer number of keys, got ${window}`);
  }
  return bandMask(`window(${window})`, { lo: 0, hi: window - 1 });
}

/** Every (query, key) pair allowed. */
export function fullMask(): AttentionMask {
  return bandMask('full', { lo: -Infinity, hi: Infinity });
}

function isNonDecreasing(ids: ArrayLike<number>): boolean {
  for (let i = 1; i < ids.length; i++) if (ids[i] < ids[i - 1]) return false;
  return true;
}

/**
 * Document / sequence-packing mask: allowed iff both positions belong to the same sequence id. `seqIds[p]` is the
 * id at absolute position p and must cover every query and key position used. Combine with `causalMask()` via
 * `andMasks`. Tile classification is analytic when ids are non-decreasing (packed sequences); otherwise block-mask
 * construction falls back to evaluating elements.
 */
export function documentMask(seqIds: ArrayLike<number>): AttentionMask {
  const ids = Int32Array.from(seqIds as ArrayLike<number>);
  const at = (p: number): number => {
    if (p < 0 || p >= ids.length) throw new RangeError(`documentMask: position ${p} outside seqIds (length ${ids.length})`);
    return ids[p];
  };
  const mod: MaskMod = (_b, _h, q, kv) => at(q) === at(kv);
  if (!isNonDecreasing(ids)) return { name: 'document', mod };
  return {
    name: 'document',
    mod,
    classify: (q0, q1, k0, k1) => {
      const qLo = at(q0), qHi = at(q1 - 1), kLo = at(k0), kHi = at(k1 - 1);
      if (qHi < kLo || kHi < qLo) return TILE_EMPTY;
      if (qLo === qHi && kLo === kHi && qLo === kLo) return TILE_FULL;
      return TILE_PARTIAL;
    },
  };
}

function intersectBands(bands: Band[]): Band {
  return { lo: Math.max(...bands.map((b) => b.lo)), hi: Math.min(...bands.map((b) => b.hi)) };
}

/** Allowed iff every mask allows. */
export function andMasks(...masks: AttentionMask[]): AttentionMask {
  if (masks.length === 0) throw new RangeError('andMasks: needs at least one mask');
  const name = `and(${masks.map((m) => m.name).join(', ')})`;
  const mod: MaskMod = (b, h, q, kv) => masks.every((m) => m.mod(b, h, q, kv));
  if (masks.every((m) => m.band)) {
    const band = intersectBands(masks.map((m) => m.band!));
    return { ...bandMask(name, band), name };
  }
  if (!masks.every((m) => m.classify)) return { name, mod };
  return {
    name,
    mod,
    // Exact for empty (one empty factor suffices) and full (all factors full); "partial" may be conservative,
    // which costs only element evaluation, never correctness.
    classify: (q0, q1, k0, k1) => {
      let allFull = true;
      for (const m of masks) {
        const c = m.classify!(q0, q1, k0, k1);
        if (c === TILE_EMPTY) return TILE_EMPTY;
        if (c !== TILE_FULL) allFull = false;
      }
      return allFull ? TILE_FULL : TILE_PARTIAL;
    },
  };
}

/** Allowed iff any mask allows. */
export function orMasks(...masks: AttentionMask[]): AttentionMask {
  if (masks.length === 0) throw new RangeError('orMasks: needs at least one mask');
  const name = `or(${masks.map((m) => m.name).join(', ')})`;
  const mod: MaskMod = (b, h, q, kv) => masks.some((m) => m.mod(b, h, q, kv));
  if (!masks.every((m) => m.classify)) return { name, mod };
  return {
    name,
    mod,
    classify: (q0, q1, k0, k1) => {
      let allEmpty = true;
      for (const m of masks) {
        const c = m.classify!(q0, q1, k0, k1);
        if (c === TILE_FULL) return TILE_FULL;
        if (c !== TILE_EMPTY) allEmpty = false;
      }
      return allEmpty ? TILE_EMPTY : TILE_PARTIAL;
    },
  };
}

/** Wraps a bare mask function (no analytic structure; block masks evaluate its elements). */
export function customMask(mod: MaskMod, name = 'custom'): AttentionMask {
  return { name, mod };
}
