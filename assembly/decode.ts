// Single-query sink attention for decode steps, against per-sequence KV caches (src/model/ops/decode-attention-wasm.ts).
//
// Work items (query token t, kv head g) are claimed dynamically. Token t's descriptor, 5 i32 at table + 20·t:
//   kPtr, vPtr — that sequence's cache [Hkv, R, d]; R — its slots (a position p lives in slot p mod R: a full
//   layer's cache has R ≥ every position, a sliding layer's ring R ≥ the window); lo, hi — the inclusive range of
//   positions the token sees (its window, itself included). q [Hq, N, d] head-major, out [N, Hq·d], sinks [Hq]
//   (0 = none). scratch: `scratchPer` bytes per thread, at least 4·(hi − lo + 1) for every token. d % 4 == 0.
//   o_h = Σ_j e^{s_j − m} v_j / (e^{σ_h − m} + Σ_j e^{s_j − m}),  s_j = scale · q_h · k_j,  m = max(σ_h, max_j s_j).
import { claim, expv, exps, fma, hsum } from './simd';

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
    // the positions lo … hi as at most two runs of consecutive slots
    const start = lo % R;
    const run1 = min(span, R - start);
    const kHead = kBase + <usize>g * <usize>R * rowBytes, vHead = vBase + <usize>g * <usize>R * rowBytes;
    for (let hh = 0; hh < group; hh++) {
      const h = g * group + hh;
      const qRow = q + (<usize>h * <usize>n + <usize>t) * rowBytes;
      const oRow = out + (<usize>t * <usize>hq + <usize>h) * rowBytes;
      const sink: f32 = sinks ? load<f32>(sinks + <usize>h * 4) : -Infinity;
      let m = sink;
      for (let j = 0; j < span; j++) {
        const slot = j < run1 ? start + j : j - run1;
        const kRow = kHead + <usize>slot * rowBytes;
        let acc = f32x4.splat(0);
        for (let e = 0; e < d; e += 4) acc = fma(v128.load(qRow + <usize>e * 4), v128.load(kRow + <usize>e * 4), acc);
        const s = hsum(acc) * scale;
        store<f32>(sc + <usize>j * 4, s);
        if (s > m) m = s;
      }
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
      for (let e = 0; e < d; e += 4) {
        let acc = f32x4.splat(0);
        for (let jj = 0; jj < span; jj++) {
          const slot = jj < run1 ? start + jj : jj - run1;
          acc = fma(f32x4.splat(load<f32>(sc + <usize>jj * 4)), v128.load(vHead + <usize>slot * rowBytes + <usize>e * 4), acc);
        }
        v128.store(oRow + <usize>e * 4, f32x4.mul(acc, inv));
      }
    }
  }
}
