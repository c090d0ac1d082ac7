import { test } from 'node:test';
import assert from 'node:assert/strict';
import { countAllowedPairs, createBlockMask } from '../../src/attention/block-mask.ts';
import { andMasks, causalMask, customMask, documentMask, slidingWindowMask } from '../../src/attention/masks.ts';
import type { AttentionMask } from '../../src/attention/masks.ts';
import type { BlockMask } from '../../src/attention/block-mask.ts';
import { rng } from './helpers.ts';

test('tile counts of the sinks.md §4.2 table', () => {
  const cases: [number, AttentionMask, number, number][] = [
    [4096, causalMask(), 496, 32],
    [4096, slidingWindowMask(128), 0, 63],
    [8192, causalMask(), 2016, 64],
    [8192, slidingWindowMask(128), 0, 127],
    [4096, slidingWindowMask(256), 31, 62],
  ];
  for (const [T, m, full, partial] of cases) {
    const bm = createBlockMask(m, T, T, 128);
    assert.equal(bm.numFull, full, `${m.name} T=${T} full`);
    assert.equal(bm.numPartial, partial, `${m.name} T=${T} partial`);
    assert.equal(bm.tFullIdx.length, full);
    assert.equal(bm.tPartialIdx.length, partial);
  }
});

test('analytic block mask is cheap at T = 32768', () => {
  const bm = createBlockMask(causalMask(), 32768, 32768, 128);
  assert.equal(bm.numPartial, 256);
  assert.equal(bm.numFull, 256 * 255 / 2);
  assert.equal(countAllowedPairs(bm), 32768 * 32769 / 2);
  const w = createBlockMask(slidingWindowMask(128), 32768, 32768, 128);
  assert.equal(countAllowedPairs(w), 128 * 129 / 2 + (32768 - 128) * 128);
});

/** Expands the block lists + in-tile mask to a dense matrix and compares with the element mask. */
function checkExpansion(bm: BlockMask, m: AttentionMask): void {
  const { qLen, kvLen, qOffset, kvOffset } = bm;
  const covered = new Uint8Array(qLen * kvLen);
  const mark = (r: number, c: number, masked: boolean): void => {
    for (let i = r * bm.qBlock; i < Math.min(qLen, (r + 1) * bm.qBlock); i++) {
      for (let j = c * bm.kvBlock; j < Math.min(kvLen, (c + 1) * bm.kvBlock); j++) {
        assert.equal(covered[i * kvLen + j], 0, 'tile listed twice');
        covered[i * kvLen + j] = masked ? (m.mod(0, 0, qOffset + i, kvOffset + j) ? 1 : 2) : 1;
      }
    }
  };
  for (let r = 0; r < bm.numQTiles; r++) {
    for (let t = bm.fullStart[r]; t < bm.fullStart[r + 1]; t++) mark(r, bm.fullIdx[t], false);
    for (let t = bm.partialStart[r]; t < bm.partialStart[r + 1]; t++) mark(r, bm.partialIdx[t], true);
  }
  let allowed = 0;
  for (let i = 0; i < qLen; i++) for (let j = 0; j < kvLen; j++) {
    const want = m.mod(0, 0, qOffset + i, kvOffset + j);
    if (want) allowed++;
    assert.equal(covered[i * kvLen + j] === 1, want, `${m.name} (${i}, ${j})`);
  }
  assert.equal(countAllowedPairs(bm), allowed);
  // transposed lists hold the same tiles
  const pairs = new Set<string>();
  for (let r = 0; r < bm.numQTiles; r++) for (let t = bm.partialStart[r]; t < bm.partialStart[r + 1]; t++) pairs.add(`${r},${bm.partialIdx[t]}`);
  let n = 0;
  for (let c = 0; c < bm.numKvTiles; c++) for (let t = bm.tPartialStart[c]; t < bm.tPartialStart[c + 1]; t++) { assert.ok(pairs.has(`${bm.tPartialIdx[t]},${c}`)); n++; }
  assert.equal(n, pairs.size);
}

test('block lists + in-tile masks reproduce the dense mask (random T, W, tiles, offsets)', () => {
  const r = rng(7);
  for (let trial = 0; trial < 40; trial++) {
    const T = 1 + Math.floor(r() * 90);
    const qOffset = trial % 3 === 0 ? Math.floor(r() * 20) : 0;
    const S = qOffset + T;
    const W = 1 + Math.floor(r() * 40);
    const bq = [1, 4, 16, 32][Math.floor(r() * 4)];
    const bk = [4, 8, 16, 64][Math.floor(r() * 4)];
    const ids = Array.from({ length: S }, (_, p) => Math.floor(p / (1 + Math.floor(S / 3))));
    const masks = [causalMask(), slidingWindowMask(W), andMasks(causalMask(), documentMask(ids)),
      customMask((_b, _h, q, kv) => kv <= q && (q - kv) % 3 !== 1, 'strided')];
    for (const m of masks) checkExpansion(createBlockMask(m, T, S, { q: bq, kv: bk }, { qOffset }), m);
  }
});

test('a custom mask (no classifier) is classified exactly by element evaluation', () => {
  const m = customMask((_b, _h, q, kv) => kv <= q && q - kv < 128);
  const bm = createBlockMask(m, 512, 512, 128);
  assert.equal(bm.numFull, 0);
  assert.equal(bm.numPartial, 7);
  const raw = createBlockMask((_b, _h, q, kv) => kv <= q, 256, 256, 64);
  assert.equal(raw.numFull, 6);
  assert.equal(raw.numPartial, 4);
});

test('query offset (decode): one row at position S − 1 sees the last W keys', () => {
  const bm = createBlockMask(slidingWindowMask(128), 1, 1000, 64, { qOffset: 999 });
  assert.equal(countAllowedPairs(bm), 128);
  const c = createBlockMask(causalMask(), 1, 1000, 64, { qOffset: 999 });
  assert.equal(countAllowedPairs(c), 1000);
});

test('bad sizes are rejected', () => {
  assert.throws(() => createBlockMask(causalMask(), 10, 10, 0), /block size/);
  assert.throws(() => createBlockMask(causalMask(), -1, 10, 16), /qLen/);
  assert.throws(() => createBlockMask(causalMask(), 10, 10, 16, { qOffset: 0.5 }), /integers/);
});
