import { test } from 'node:test';
import assert from 'node:assert/strict';
import { andMasks, causalMask, customMask, documentMask, orMasks, slidingWindowMask, TILE_EMPTY, TILE_FULL, TILE_PARTIAL } from '../../src/attention/masks.ts';

function allowedCount(mod: (b: number, h: number, q: number, k: number) => boolean, p: number): number {
  let n = 0;
  for (let j = 0; j <= p + 5; j++) if (mod(0, 0, p, j)) n++;
  return n;
}

test('causal allows exactly kv ≤ q', () => {
  const m = causalMask();
  assert.equal(m.mod(0, 0, 5, 5), true);
  assert.equal(m.mod(0, 0, 5, 6), false);
  assert.equal(m.mod(0, 0, 5, 0), true);
  for (const p of [0, 1, 17, 500]) assert.equal(allowedCount(m.mod, p), p + 1);
});

test('window W admits W keys including the query itself (gpt-oss semantics)', () => {
  const m = slidingWindowMask(128);
  for (const p of [0, 1, 126, 127, 128, 129, 500]) assert.equal(allowedCount(m.mod, p), Math.min(p + 1, 128), `p=${p}`);
  assert.equal(m.mod(0, 0, 500, 373), true); // 500 − 373 = 127
  assert.equal(m.mod(0, 0, 500, 372), false); // 128 back is outside
  // the FlexAttention-example variant q − kv <= W lets in 129 keys and must not pass the same check
  const offByOne = customMask((_b, _h, q, kv) => kv <= q && q - kv <= 128);
  assert.notEqual(allowedCount(offByOne.mod, 500), 128);
  const w1 = slidingWindowMask(1);
  assert.equal(allowedCount(w1.mod, 9), 1);
  assert.equal(w1.mod(0, 0, 9, 9), true);
});

test('window rejects non-positive or fractional sizes', () => {
  assert.throws(() => slidingWindowMask(0), /positive integer/);
  assert.throws(() => slidingWindowMask(-3), /positive integer/);
  assert.throws(() => slidingWindowMask(2.5), /positive integer/);
});

test('document mask and combinators', () => {
  const ids = [0, 0, 0, 1, 1, 2, 2, 2];
  const doc = andMasks(causalMask(), documentMask(ids));
  assert.equal(doc.mod(0, 0, 4, 3), true);
  assert.equal(doc.mod(0, 0, 4, 2), false); // other document
  assert.equal(doc.mod(0, 0, 3, 4), false); // future
  const either = orMasks(slidingWindowMask(1), customMask((_b, _h, _q, kv) => kv === 0));
  assert.equal(either.mod(0, 0, 6, 0), true);
  assert.equal(either.mod(0, 0, 6, 6), true);
  assert.equal(either.mod(0, 0, 6, 3), false);
  assert.throws(() => documentMask(ids).mod(0, 0, 8, 0), /outside seqIds/);
  assert.throws(() => andMasks(), /at least one/);
});

test('tile classifiers agree with element evaluation', () => {
  const masks = [causalMask(), slidingWindowMask(5), andMasks(causalMask(), slidingWindowMask(3)), andMasks(causalMask(), documentMask([0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3, 3])),
    orMasks(slidingWindowMask(2), documentMask([0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 3, 3, 3, 3, 3, 3]))];
  for (const m of masks) {
    for (let q0 = 0; q0 < 16; q0 += 3) for (let q1 = q0 + 1; q1 <= 16; q1 += 4) for (let k0 = 0; k0 < 16; k0 += 2) for (let k1 = k0 + 1; k1 <= 16; k1 += 5) {
      let t = 0, f = 0;
      for (let q = q0; q < q1; q++) for (let k = k0; k < k1; k++) { if (m.mod(0, 0, q, k)) t++; else f++; }
      const c = m.classify!(q0, q1, k0, k1);
      if (c === TILE_FULL) assert.equal(f, 0, `${m.name} claimed full`);
      if (c === TILE_EMPTY) assert.equal(t, 0, `${m.name} claimed empty`);
      if (!m.name.startsWith('and(causal, doc') && !m.name.startsWith('or(')) assert.equal(c, t === 0 ? TILE_EMPTY : f === 0 ? TILE_FULL : TILE_PARTIAL, m.name);
    }
  }
});
