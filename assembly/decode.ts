// Single-query sink attention for decode steps, against per-sequence KV caches (src/model/ops/decode-attention-wasm.ts).
//
// Work items (query token t, kv head g) are claimed dynamically. Token t's descriptor, 5 i32 at table + 20·t:
//   kPtr, vPtr — that sequence's cache [Hkv, R, d]; R — its slots (a position p lives in slot p mod R: a full
//   layer's cache has R ≥ every position, a sliding layer's ring R ≥ the window); lo, hi — the inclusive range of
//   positions the token sees (its window, itself included). q [Hq, N, d] head-major, out [N, Hq·d], sinks [Hq]
//   (0 = none). scratch: `scratchPer` bytes per thread, at least 4·(hi − lo + 1) for every token. d % 4 == 0.
//   o_h = Σ_j e^{s_j − m} v_j / (e^{σ_h − m} + Σ_j e^{s_j − m}),  s_j = scale · q_h · k_j,  m = max(σ_h, max_j s_j).
//
// The positions lo … hi are at most two runs of consecutive slots (a ring wraps once). Scores go four keys at a time:
// four dot-product accumulators reduced together by two rounds of shuffles into one vector of four scores, instead
// of a horizontal sum per key. The weighted sum of values goes key by key into up to eight vector accumulators (32
// dimensions of the head at a time), so each value row is read once per 32 dimensions and each weight splatted once.
import { claim, expv, exps, fma, hsum } from './simd';

/** [hsum(a), hsum(b), hsum(c), hsum(e)] with two rounds of shuffles. */
// @ts-ignore: decorator
@inline function hsum4(a: v128, b: v128, c: v128, e: v128): v128 {
  const ab = f32x4.add(v128.shuffle<f32>(a, b, 0, 4, 1, 5), v128.shuffle<f32>(a, b, 2, 6, 3, 7)); // a0+a2 b0+b2 a1+a3 b1+b3
  const ce = f32x4.add(v128.shuffle<f32>(c, e, 0, 4, 1, 5), v128.shuffle<f32>(c, e, 2, 6, 3, 7));
  return f32x4.add(v128.shuffle<f32>(ab, ce, 0, 1, 4, 5), v128.shuffle<f32>(ab, ce, 2, 3, 6, 7));
}

/** Scores of `count` consecutive key rows from `kRow` into sc (scaled); returns the running max with `m`. */
// @ts-ignore: decorator
@inline function scoreRun(qRow: usize, kRow: usize, count: i32, d: i32, rowBytes: usize, scale: f32, sc: usize, m: f32): f32 {
  const sv = f32x4.splat(scale);
  let mv = f32x4.splat(m);
  let j = 0;
  for (; j + 4 <= count; j += 4) {
    const k0 = kRow + <usize>j * rowBytes, k1 = k0 + rowBytes, k2 = k1 + rowBytes, k3 = k2 + rowBytes;
    let a0 = f32x4.splat(0), a1 = f32x4.splat(0), a2 = f32x4.splat(0), a3 = f32x4.splat(0);
    for (let e = 0; e < d; e += 4) {
      const off = <usize>e * 4;
      const qv = v128.load(qRow + off);
      a0 = fma(qv, v128.load(k0 + off), a0);
      a1 = fma(qv, v128.load(k1 + off), a1);
      a2 = fma(qv, v128.load(k2 + off), a2);
      a3 = fma(qv, v128.load(k3 + off), a3);
    }
    const s = f32x4.mul(hsum4(a0, a1, a2, a3), sv);
    v128.store(sc + <usize>j * 4, s);
    mv = f32x4.max(mv, s);
  }
  let mm = max(max(f32x4.extract_lane(mv, 0), f32x4.extract_lane(mv, 1)), max(f32x4.extract_lane(mv, 2), f32x4.extract_lane(mv, 3)));
  for (; j < count; j++) {
    const kr = kRow + <usize>j * rowBytes;
    let acc = f32x4.splat(0);
    for (let e = 0; e < d; e += 4) acc = fma(v128.load(qRow + <usize>e * 4), v128.load(kr + <usize>e * 4), acc);
    const s = hsum(acc) * scale;
    store<f32>(sc + <usize>j * 4, s);
    if (s > mm) mm = s;
  }
  return mm;
}

/**
 * acc[0 … nv) += Σ_j p_j · v_j[e0 … e0 + 4·nv) over `count` consecutive value rows from `vRow` (nv ≤ 8), the
 * weights p_j at sc. The accumulators live in `acc` (8 vectors) between the ring's two runs.
 */
// @ts-ignore: decorator
@inline function weighRun(vRow: usize, count: i32, rowBytes: usize, sc: usize, nv: i32, acc: usize): void {
  let a0 = v128.load(acc), a1 = v128.load(acc, 16), a2 = v128.load(acc, 32), a3 = v128.load(acc, 48);
  let a4 = v128.load(acc, 64), a5 = v128.load(acc, 80), a6 = v128.load(acc, 96), a7 = v128.load(acc, 112);
  for (let j = 0; j < count; j++) {
    const p = f32x4.splat(load<f32>(sc + <usize>j * 4));
    const r = vRow + <usize>j * rowBytes;
    a0 = fma(p, v128.load(r), a0);
    if (nv > 1) a1 = fma(p, v128.load(r, 16), a1);
    if (nv > 2) a2 = fma(p, v128.load(r, 32), a2);
    if (nv > 3) a3 = fma(p, v128.load(r, 48), a3);
    if (nv > 4) a4 = fma(p, v128.load(r, 64), a4);
    if (nv > 5) a5 = fma(p, v128.load(r, 80), a5);
    if (nv > 6) a6 = fma(p, v128.load(r, 96), a6);
    if (nv > 7) a7 = fma(p, v128.load(r, 112), a7);
  }
  v128.store(acc, a0); v128.store(acc, a1, 16); v128.store(acc, a2, 32); v128.store(acc, a3, 48);
  v128.store(acc, a4, 64); v128.store(acc, a5, 80); v128.store(acc, a6, 96); v128.store(acc, a7, 112);
}

/** Scratch bytes per thread for a token that sees `span` positions: its scores plus 8 accumulator vectors. */
export function decodeScratchBytes(span: i32): i32 {
  return ((span * 4 + 15) & ~15) + 128;
}

export function decodeAttention(tid: i32, nthreads: i32, counter: usize, n: i32, table: usize, q: usize, hq: i32, hkv: i32,
  d: i32, sinks: usize, scale: f32, out: usize, scratch: usize, scratchPer: i32): void {
  const group = hq / hkv;
  const items = n * hkv;
  const sc = scratch + <usize>tid * <usize>scratchPer;
  const rowBytes = <usize>d * 4;
  while (true) {
    const item = claim(counter, 1, items);
    if (item >= items) break;
    const t = item / hkv, g = item - t * hkv;
    const desc = table + <usize>t * 20;
    const kBase = <usize>load<i32>(desc), vBase = <usize>load<i32>(desc, 4), R = load<i32>(desc, 8);
    const lo = load<i32>(desc, 12), hi = load<i32>(desc, 16);
    const span = hi - lo + 1;
    // the positions lo … hi as at most two runs of consecutive slots: [start, start + run1) and [0, span − run1)
    const start = lo % R;
    const run1 = min(span, R - start), run2 = span - run1;
    const acc = sc + ((<usize>span * 4 + 15) & ~15);
    const kHead = kBase + <usize>g * <usize>R * rowBytes, vHead = vBase + <usize>g * <usize>R * rowBytes;
    for (let hh = 0; hh < group; hh++) {
      const h = g * group + hh;
      const qRow = q + (<usize>h * <usize>n + <usize>t) * rowBytes;
      const oRow = out + (<usize>t * <usize>hq + <usize>h) * rowBytes;
      const sink: f32 = sinks ? load<f32>(sinks + <usize>h * 4) : -Infinity;
      let m = scoreRun(qRow, kHead + <usize>start * rowBytes, run1, d, rowBytes, scale, sc, sink);
      if (run2 > 0) m = scoreRun(qRow, kHead, run2, d, rowBytes, scale, sc + <usize>run1 * 4, m);
      // p_j = e^{s_j − m} in place, four at a time; z = e^{σ − m} + Σ p_j
      const mv = f32x4.splat(m);
      let zv = f32x4.splat(0);
      let j = 0;
      for (; j + 4 <= span; j += 4) {
        const p = expv(f32x4.sub(v128.load(sc + <usize>j * 4), mv));
        v128.store(sc + <usize>j * 4, p);
        zv = f32x4.add(zv, p);
      }
      let z = hsum(zv);
      for (; j < span; j++) {
        const p = exps(load<f32>(sc + <usize>j * 4) - m);
        store<f32>(sc + <usize>j * 4, p);
        z += p;
      }
      if (sinks) z += exps(sink - m);
      const inv = f32x4.splat(1.0 / z);
      for (let e0 = 0; e0 < d; e0 += 32) {
        const nv = min(8, (d - e0) >> 2);
        memory.fill(acc, 0, 128);
        weighRun(vHead + <usize>start * rowBytes + <usize>e0 * 4, run1, rowBytes, sc, nv, acc);
        if (run2 > 0) weighRun(vHead + <usize>e0 * 4, run2, rowBytes, sc + <usize>run1 * 4, nv, acc);
        for (let k = 0; k < nv; k++) {
          v128.store(oRow + <usize>(e0 + 4 * k) * 4, f32x4.mul(v128.load(acc + <usize>k * 16), inv));
        }
      }
    }
  }
}
