/** Element-wise mask evaluation in LOCAL indices (query i, key j) of a block mask, with the band fast path. */
import type { BlockMask } from './block-mask.ts';

export type LocalMask = (i: number, j: number) => boolean;

export function localMask(bm: BlockMask): LocalMask {
  const { qOffset, kvOffset } = bm;
  const band = bm.mask.band;
  if (band) {
    const { lo, hi } = band;
    return (i, j) => {
      const d = qOffset + i - (kvOffset + j);
      return d >= lo && d <= hi;
    };
  }
  const mod = bm.mask.mod;
  return (i, j) => mod(0, 0, qOffset + i, kvOffset + j);
}
