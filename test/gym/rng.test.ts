import assert from 'node:assert/strict';
import { test } from 'node:test';
import { deriveSeeds, makeRng, XoshiroRng } from '../../src/gym/rng.ts';

test('same seed gives the same stream; different seeds differ', () => {
  const a = new XoshiroRng(42);
  const b = new XoshiroRng(42);
  const c = new XoshiroRng(43);
  const sa = Array.from({ length: 20 }, () => a.nextUint32());
  const sb = Array.from({ length: 20 }, () => b.nextUint32());
  const sc = Array.from({ length: 20 }, () => c.nextUint32());
  assert.deepEqual(sa, sb);
  assert.notDeepEqual(sa, sc);
  // large seeds use both 32-bit halves
  assert.notDeepEqual(new XoshiroRng(2 ** 40).state(), new XoshiroRng(2 ** 40 + 2 ** 32).state());
});

test('random() is in [0, 1) with mean near 1/2', () => {
  const r = new XoshiroRng(1);
  let sum = 0;
  for (let i = 0; i < 20000; i++) {
    const x = r.random();
    assert.ok(x >= 0 && x < 1);
    sum += x;
  }
  assert.ok(Math.abs(sum / 20000 - 0.5) < 0.01);
});

test('integers follows numpy bounds and is roughly uniform', () => {
  const r = new XoshiroRng(7);
  const counts = new Array(6).fill(0);
  for (let i = 0; i < 6000; i++) {
    const x = r.integers(6);
    assert.ok(Number.isInteger(x) && x >= 0 && x < 6);
    counts[x]++;
  }
  for (const c of counts) assert.ok(c > 850 && c < 1150, `count ${c}`);
  for (let i = 0; i < 200; i++) {
    const x = r.integers(-3, 3);
    assert.ok(x >= -3 && x < 3);
    const y = r.integers(5, 7, { endpoint: true });
    assert.ok(y >= 5 && y <= 7);
  }
  const big = r.integers(2 ** 52, 2 ** 53);
  assert.ok(big >= 2 ** 52 && big < 2 ** 53);
  assert.throws(() => r.integers(3, 3), /low >= high/);
  assert.throws(() => r.integers(0.5), /integers/);
});

test('normal and exponential have the right moments', () => {
  const r = new XoshiroRng(3);
  const n = 20000;
  let s = 0;
  let s2 = 0;
  let e = 0;
  for (let i = 0; i < n; i++) {
    const x = r.normal(2, 3);
    s += x;
    s2 += x * x;
    e += r.exponential(2);
  }
  const mean = s / n;
  const std = Math.sqrt(s2 / n - mean * mean);
  assert.ok(Math.abs(mean - 2) < 0.1, `mean ${mean}`);
  assert.ok(Math.abs(std - 3) < 0.1, `std ${std}`);
  assert.ok(Math.abs(e / n - 2) < 0.08);
});

test('choice with probabilities, shuffle and permutation', () => {
  const r = new XoshiroRng(11);
  const counts = { a: 0, b: 0, c: 0 };
  for (let i = 0; i < 5000; i++) counts[r.choice(['a', 'b', 'c'] as const, { p: [0.7, 0.3, 0] })]++;
  assert.equal(counts.c, 0);
  assert.ok(counts.a > 3300 && counts.a < 3700);
  assert.throws(() => r.choice([1, 2], { p: [0.5, 0.6] }), /sum to 1/);
  assert.throws(() => r.choice([]), /empty/);
  const p = r.permutation(10);
  assert.deepEqual([...p].sort((x, y) => x - y), [0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  const g = Array.from({ length: 2000 }, () => r.geometric(0.25));
  assert.ok(g.every((x) => Number.isInteger(x) && x >= 1));
  assert.ok(Math.abs(g.reduce((a, b) => a + b) / g.length - 4) < 0.3);
});

test('state, clone and sameState', () => {
  const r = new XoshiroRng(5);
  r.random();
  const c = r.clone();
  assert.ok(c.sameState(r));
  assert.equal(c.random(), r.random());
  r.random();
  assert.ok(!c.sameState(r));
  const d = new XoshiroRng(0);
  d.setState(r.state());
  assert.equal(d.nextUint32(), r.nextUint32());
});

test('child seeds are deterministic and distinct', () => {
  assert.deepEqual(deriveSeeds(9, 4), deriveSeeds(9, 4));
  assert.equal(new Set(deriveSeeds(9, 100)).size, 100);
  const kids = new XoshiroRng(9).spawn(2);
  assert.notEqual(kids[0]!.random(), kids[1]!.random());
});

test('makeRng: explicit seed, entropy seed, invalid seeds', () => {
  const [a, seedA] = makeRng(17);
  assert.equal(seedA, 17);
  assert.ok(a.sameState(new XoshiroRng(17)));
  const [b, seedB] = makeRng();
  assert.ok(Number.isSafeInteger(seedB) && seedB >= 0);
  assert.ok(b.sameState(new XoshiroRng(seedB)), 'an entropy seed is reported so the run can be reproduced');
  assert.throws(() => makeRng(-1), /non-negative integer/);
  assert.throws(() => makeRng(1.5), /non-negative integer/);
  assert.throws(() => makeRng(2 ** 60), /non-negative integer/);
});

test('the core step is xoshiro128** (outputs hand-computed from state [1, 2, 3, 4])', () => {
  const r = new XoshiroRng(0);
  r.setState({ algorithm: 'xoshiro128**', s: [1, 2, 3, 4] });
  // out = rotl(s1 * 5, 7) * 9: s1 = 2 → 11520; then s1 = 0 → 0; then s1 = 1029 → rotl(5145, 7) * 9 = 5927040
  assert.deepEqual([r.nextUint32(), r.nextUint32(), r.nextUint32()], [11520, 0, 5927040]);
});
