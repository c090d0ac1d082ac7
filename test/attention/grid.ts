/** A deterministic grid of attention cases spanning sinks.md §7.1 (shapes, windows, GQA, tiles, offsets). */
import type { Case } from './oracle.ts';

const T = [1, 2, 3, 7, 63, 64, 65, 127, 128, 129, 257, 300];
const W = [0, 1, 2, 64, 127, 128, 129, 1000];
const HKV_G: [number, number][] = [[1, 1], [2, 2], [1, 8], [2, 1], [8, 1], [1, 2]];
const D = [8, 64];
const TILES = [16, 32, 64, 128];
const PREFIX = [0, 5, 0, 17];

/** n cases cycling the lists with co-prime strides; large T gets few heads / small d to stay fast. */
export function grid(n: number, seed0 = 100): Case[] {
  const out: Case[] = [];
  for (let i = 0; i < n; i++) {
    const t = T[(i * 5) % T.length];
    let [hkv, group] = HKV_G[(i * 7) % HKV_G.length];
    let d = D[(i * 3) % D.length];
    if (t >= 127 && hkv * group * d > 128) { hkv = 1; group = Math.min(group, 2); d = 8 + 24 * (i % 2); }
    const tile = TILES[(i * 3) % TILES.length];
    out.push({
      hkv, group, t, d, window: W[(i * 3) % W.length],
      block: i % 4 === 3 ? { q: tile, kv: TILES[(i + 1) % TILES.length] } : tile,
      prefix: PREFIX[i % PREFIX.length], sinks: i % 9 !== 4, seed: seed0 + i,
    });
  }
  return out;
}
