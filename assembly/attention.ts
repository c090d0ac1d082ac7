// Sink-aware blockwise attention (FlashAttention-2 structure, FlexAttention block lists), float32.
//
// Every kernel takes (tid, nthreads, desc): `desc` points at an i32/f32 descriptor written by
// src/attention/wasm-layout.ts (field indices below; keep the two in sync). Layouts: q, o, dO, dQ [Hq, T, d];
// k, v, dK, dV [Hkv, S, d]; lse, D [Hq, T]; sinks, dSinks [Hq]. d must be a multiple of 8.
//
// Forward: work items (query head, query tile) claimed dynamically by the threads (desc.COUNTER); each row starts
// at m = σ_h, l = 1 (m = −∞, l = 0 without sinks), visits its partial tiles (mask applied) then full tiles, and
// stores O and the sink-inclusive LSE. Backward: work items (kv head, chunk of kv tiles) claimed dynamically; an
// item writes dK/dV of its kv tiles and dQ of the query tiles of that head group that read them, and items that
// run at the same time never share a query tile (see attnBackward), so no atomics or reductions. Partial tiles of
// band masks (diagonal, window edge) run in strips of MR query rows (and MR keys for dK/dV) that compute only the 8-key
// column groups (query rows) the band lets them see, so masked work stays small for any tile shape.
import { claim, expv, exps, fma, hmax, hsum } from './simd';

/**
 * 2^x for x ≤ 0, four lanes: the softmax kernels below work in base 2 (scores pre-multiplied by log2 e), which
 * needs no Cody–Waite reduction: n = round(x) through the 1.5·2^23 shifter, r = x − n ∈ [−½, ½] exactly, 2^r by a
 * degree-6 polynomial (least squares on the relative error over [−½, ½] at Chebyshev points, fitted here; evaluated
 * in float32 with separate multiply and add, at most 9.7e-8 relative, about 1 ulp, with no mean bias: degree 5 left
 * 2.2e-7 and a +5e-8 bias, which moved a chaotic GRPO check past its tolerance), and 2^n from the shifter's bit
 * pattern. Clamping at x = −127 gives n = −127, whose exponent field is 0: the result is exactly 0 there and for −∞
 * (a masked score), with no compare or select. NaN stays NaN (pmax keeps its first operand when the comparison
 * fails). Nineteen operations, against twenty-nine for a base-e exp with Cody–Waite reduction and a degree-6
 * polynomial (simd.ts's expv) plus the scaling by log2 e.
 */
// @ts-ignore: decorator
@inline function exp2Neg(x: v128): v128 {
  const shifter = f32x4.splat(12582912.0);
  const xc = f32x4.pmax(x, f32x4.splat(-127.0));
  const tn = f32x4.add(xc, shifter);
  const r = f32x4.sub(xc, f32x4.sub(tn, shifter));
  let p = f32x4.splat(1.5337581862695515e-4);
  p = fma(p, r, f32x4.splat(1.3399861054494977e-3));
  p = fma(p, r, f32x4.splat(9.618519805371761e-3));
  p = fma(p, r, f32x4.splat(5.550329014658928e-2));
  p = fma(p, r, f32x4.splat(2.4022646248340607e-1));
  p = fma(p, r, f32x4.splat(6.931471824645996e-1));
  p = fma(p, r, f32x4.splat(1.0));
  return f32x4.mul(p, i32x4.shl(i32x4.add(tn, i32x4.splat(127 - 0x4B400000)), 23));
}

/** exp2Neg of one scalar (x ≤ 0). */
// @ts-ignore: decorator
@inline function exp2NegS(x: f32): f32 {
  return f32x4.extract_lane(exp2Neg(f32x4.splat(x)), 0);
}

const LOG2E: f32 = 1.4426950408889634;
const LN2: f32 = 0.6931471805599453;

const F_Q = 0, F_K = 1, F_V = 2, F_O = 3, F_LSE = 4, F_SINKS = 5;
const F_HQ = 6, F_HKV = 7, F_T = 8, F_S = 9, F_D = 10, F_SCALE = 11;
const F_BQ = 12, F_BK = 13, F_NQT = 14, F_NKT = 15;
const F_FULL_START = 16, F_FULL_IDX = 17, F_PART_START = 18, F_PART_IDX = 19;
const F_TFULL_START = 20, F_TFULL_IDX = 21, F_TPART_START = 22, F_TPART_IDX = 23, F_TPART_POS = 24;
const F_MASK_KIND = 25, F_BAND_LO = 26, F_BAND_HI = 27, F_DELTA = 28, F_BITMAP = 29;
const F_SCRATCH = 30, F_SCRATCH_PER = 31;
const F_DO = 32, F_DQ = 33, F_DK = 34, F_DV = 35, F_DD = 36, F_DSINKS = 37, F_KT = 38, F_COUNTER = 39;
const F_BWD_CHUNK = 40, F_BWD_PHASES = 41;

const MASK_BAND = 0;

// @ts-ignore: decorator
@inline function fi(desc: usize, f: i32): i32 { return load<i32>(desc + (<usize>f << 2)); }
// @ts-ignore: decorator
@inline function fp(desc: usize, f: i32): usize { return <usize>load<u32>(desc + (<usize>f << 2)); }
// @ts-ignore: decorator
@inline function ff(desc: usize, f: i32): f32 { return load<f32>(desc + (<usize>f << 2)); }
// @ts-ignore: decorator
@inline function pad8(n: i32): i32 { return (n + 7) & ~7; }

/** Scratch bytes per thread for both kernels, given the tile sizes and head dim. */
export function attnScratchBytes(bq: i32, bk: i32, d: i32): i32 {
  const bkp = pad8(bk);
  // Kt, Vt [d × bkp]; S/P, dP/dS [bq × bkp]; acc, scaled q [bq × d]; dKacc, dVacc [bkp × d]; m, l [bq]
  return (2 * d * bkp + 2 * bq * bkp + 2 * bq * d + 2 * bkp * d + 2 * bq) * 4 + 64;
}

// C[m × n] (+)= A · B, float32. A is addressed as a + row·ars + col·acs (bytes; so Aᵀ is free), B row-major
// with row stride ldb bytes, C row stride ldc bytes. n must be a multiple of 8. Register tiles of MR×8 (MR = 6
// with fused multiply-add, else 4: without it each product needs a temporary and 6×8 spills), then 2×8, 1×8.
const MR: i32 = isDefined(RELAXED) ? 6 : 4;
function mmAcc(a: usize, ars: usize, acs: usize, b: usize, ldb: usize, c: usize, ldc: usize, m: i32, n: i32, k: i32, accumulate: bool): void {
  let i = 0;
  const zero = f32x4.splat(0);
  for (; i + MR <= m; i += MR) {
    const a0 = a + <usize>i * ars, a1 = a0 + ars, a2 = a1 + ars, a3 = a2 + ars, a4 = a3 + ars, a5 = a4 + ars;
    const c0 = c + <usize>i * ldc, c1 = c0 + ldc, c2 = c1 + ldc, c3 = c2 + ldc, c4 = c3 + ldc, c5 = c4 + ldc;
    for (let col = 0; col < n; col += 8) {
      const co = <usize>col << 2;
      let x00 = zero, x01 = zero, x10 = zero, x11 = zero, x20 = zero, x21 = zero;
      let x30 = zero, x31 = zero, x40 = zero, x41 = zero, x50 = zero, x51 = zero;
      if (accumulate) {
        x00 = v128.load(c0 + co); x01 = v128.load(c0 + co, 16);
        x10 = v128.load(c1 + co); x11 = v128.load(c1 + co, 16);
        x20 = v128.load(c2 + co); x21 = v128.load(c2 + co, 16);
        x30 = v128.load(c3 + co); x31 = v128.load(c3 + co, 16);
        if (MR >= 5) { x40 = v128.load(c4 + co); x41 = v128.load(c4 + co, 16); }
        if (MR >= 6) { x50 = v128.load(c5 + co); x51 = v128.load(c5 + co, 16); }
      }
      let bp = b + co;
      let ak: usize = 0;
      for (let kk = 0; kk < k; kk++) {
        const b0 = v128.load(bp), b1 = v128.load(bp, 16);
        let av = v128.load32_splat(a0 + ak); x00 = fma(av, b0, x00); x01 = fma(av, b1, x01);
        av = v128.load32_splat(a1 + ak); x10 = fma(av, b0, x10); x11 = fma(av, b1, x11);
        av = v128.load32_splat(a2 + ak); x20 = fma(av, b0, x20); x21 = fma(av, b1, x21);
        av = v128.load32_splat(a3 + ak); x30 = fma(av, b0, x30); x31 = fma(av, b1, x31);
        if (MR >= 5) { av = v128.load32_splat(a4 + ak); x40 = fma(av, b0, x40); x41 = fma(av, b1, x41); }
        if (MR >= 6) { av = v128.load32_splat(a5 + ak); x50 = fma(av, b0, x50); x51 = fma(av, b1, x51); }
        bp += ldb; ak += acs;
      }
      v128.store(c0 + co, x00); v128.store(c0 + co, x01, 16);
      v128.store(c1 + co, x10); v128.store(c1 + co, x11, 16);
      v128.store(c2 + co, x20); v128.store(c2 + co, x21, 16);
      v128.store(c3 + co, x30); v128.store(c3 + co, x31, 16);
      if (MR >= 5) { v128.store(c4 + co, x40); v128.store(c4 + co, x41, 16); }
      if (MR >= 6) { v128.store(c5 + co, x50); v128.store(c5 + co, x51, 16); }
    }
  }
  for (; i + 2 <= m; i += 2) {
    const a0 = a + <usize>i * ars, a1 = a0 + ars;
    const c0 = c + <usize>i * ldc, c1 = c0 + ldc;
    for (let col = 0; col < n; col += 8) {
      const co = <usize>col << 2;
      let x00 = zero, x01 = zero, x10 = zero, x11 = zero;
      if (accumulate) { x00 = v128.load(c0 + co); x01 = v128.load(c0 + co, 16); x10 = v128.load(c1 + co); x11 = v128.load(c1 + co, 16); }
      let bp = b + co;
      let ak: usize = 0;
      for (let kk = 0; kk < k; kk++) {
        const b0 = v128.load(bp), b1 = v128.load(bp, 16);
        let av = v128.load32_splat(a0 + ak); x00 = fma(av, b0, x00); x01 = fma(av, b1, x01);
        av = v128.load32_splat(a1 + ak); x10 = fma(av, b0, x10); x11 = fma(av, b1, x11);
        bp += ldb; ak += acs;
      }
      v128.store(c0 + co, x00); v128.store(c0 + co, x01, 16);
      v128.store(c1 + co, x10); v128.store(c1 + co, x11, 16);
    }
  }
  for (; i < m; i++) {
    const a0 = a + <usize>i * ars;
    const c0 = c + <usize>i * ldc;
    for (let col = 0; col < n; col += 8) {
      const co = <usize>col << 2;
      let x00 = zero, x01 = zero;
      if (accumulate) { x00 = v128.load(c0 + co); x01 = v128.load(c0 + co, 16); }
      let bp = b + co;
      let ak: usize = 0;
      for (let kk = 0; kk < k; kk++) {
        const av = v128.load32_splat(a0 + ak);
        x00 = fma(av, v128.load(bp), x00); x01 = fma(av, v128.load(bp, 16), x01);
        bp += ldb; ak += acs;
      }
      v128.store(c0 + co, x00); v128.store(c0 + co, x01, 16);
    }
  }
}

// mmAcc for A stored k-major (A[i][k] at a + k·lda + 4·i, e.g. Pᵀ of a row-major P, or a transposed tile): the
// MR rows of a register tile are adjacent floats, so one address per k step serves them all.
function mmT(a: usize, lda: usize, b: usize, ldb: usize, c: usize, ldc: usize, m: i32, n: i32, k: i32, accumulate: bool): void {
  let i = 0;
  const zero = f32x4.splat(0);
  for (; i + MR <= m; i += MR) {
    const a0 = a + <usize>i * 4;
    const c0 = c + <usize>i * ldc, c1 = c0 + ldc, c2 = c1 + ldc, c3 = c2 + ldc, c4 = c3 + ldc, c5 = c4 + ldc;
    for (let col = 0; col < n; col += 8) {
      const co = <usize>col << 2;
      let x00 = zero, x01 = zero, x10 = zero, x11 = zero, x20 = zero, x21 = zero;
      let x30 = zero, x31 = zero, x40 = zero, x41 = zero, x50 = zero, x51 = zero;
      if (accumulate) {
        x00 = v128.load(c0 + co); x01 = v128.load(c0 + co, 16);
        x10 = v128.load(c1 + co); x11 = v128.load(c1 + co, 16);
        x20 = v128.load(c2 + co); x21 = v128.load(c2 + co, 16);
        x30 = v128.load(c3 + co); x31 = v128.load(c3 + co, 16);
        if (MR >= 5) { x40 = v128.load(c4 + co); x41 = v128.load(c4 + co, 16); }
        if (MR >= 6) { x50 = v128.load(c5 + co); x51 = v128.load(c5 + co, 16); }
      }
      let bp = b + co;
      let ap = a0;
      for (let kk = 0; kk < k; kk++) {
        const b0 = v128.load(bp), b1 = v128.load(bp, 16);
        let av = v128.load32_splat(ap); x00 = fma(av, b0, x00); x01 = fma(av, b1, x01);
        av = v128.load32_splat(ap, 4); x10 = fma(av, b0, x10); x11 = fma(av, b1, x11);
        av = v128.load32_splat(ap, 8); x20 = fma(av, b0, x20); x21 = fma(av, b1, x21);
        av = v128.load32_splat(ap, 12); x30 = fma(av, b0, x30); x31 = fma(av, b1, x31);
        if (MR >= 5) { av = v128.load32_splat(ap, 16); x40 = fma(av, b0, x40); x41 = fma(av, b1, x41); }
        if (MR >= 6) { av = v128.load32_splat(ap, 20); x50 = fma(av, b0, x50); x51 = fma(av, b1, x51); }
        bp += ldb; ap += lda;
      }
      v128.store(c0 + co, x00); v128.store(c0 + co, x01, 16);
      v128.store(c1 + co, x10); v128.store(c1 + co, x11, 16);
      v128.store(c2 + co, x20); v128.store(c2 + co, x21, 16);
      v128.store(c3 + co, x30); v128.store(c3 + co, x31, 16);
      if (MR >= 5) { v128.store(c4 + co, x40); v128.store(c4 + co, x41, 16); }
      if (MR >= 6) { v128.store(c5 + co, x50); v128.store(c5 + co, x51, 16); }
    }
  }
  if (i < m) mmAcc(a + <usize>i * 4, 4, lda, b, ldb, c + <usize>i * ldc, ldc, m - i, n, k, accumulate);
}

// dst[rows × d] = scale · src[rows × d] (contiguous).
function scaledCopy(src: usize, dst: usize, n: i32, scale: f32): void {
  const vs = f32x4.splat(scale);
  for (let x = 0; x < n; x += 4) v128.store(dst + <usize>x * 4, f32x4.mul(v128.load(src + <usize>x * 4), vs));
}

// dst[e × njp] = src[j × d]ᵀ for j < nj, zero for nj ≤ j < njp.
function transposeTile(src: usize, d: i32, nj: i32, njp: i32, dst: usize): void {
  for (let e = 0; e < d; e++) {
    const drow = dst + <usize>(e * njp) * 4;
    let s = src + <usize>e * 4;
    for (let j = 0; j < nj; j++) { store<f32>(drow + <usize>j * 4, load<f32>(s)); s += <usize>d * 4; }
    for (let j = nj; j < njp; j++) store<f32>(drow + <usize>j * 4, 0);
  }
}

// Sets the not-allowed entries among columns [from, to) of one score row to −∞: columns ≥ nj always; inside the
// tile (when masked) by the band or by the tile's byte mask. i = absolute-in-sequence query index, j0 = first key
// index of the tile.
// @ts-ignore: decorator
@inline function maskRow(srow: usize, masked: bool, desc: usize, bitmapRow: usize, i: i32, j0: i32, nj: i32, from: i32, to: i32): void {
  const ninf: f32 = -Infinity;
  for (let jj = max(nj, from); jj < to; jj++) store<f32>(srow + <usize>jj * 4, ninf);
  if (!masked) return;
  const end = min(nj, to);
  if (fi(desc, F_MASK_KIND) == MASK_BAND) {
    // allowed iff lo ≤ i + delta − j ≤ hi
    const base = i + fi(desc, F_DELTA) - j0;
    const lo = max(from, base - fi(desc, F_BAND_HI));
    const hi = min(end - 1, base - fi(desc, F_BAND_LO));
    if (hi < lo) { for (let jj = from; jj < end; jj++) store<f32>(srow + <usize>jj * 4, ninf); return; }
    for (let jj = from; jj < lo; jj++) store<f32>(srow + <usize>jj * 4, ninf);
    for (let jj = hi + 1; jj < end; jj++) store<f32>(srow + <usize>jj * 4, ninf);
  } else {
    for (let jj = from; jj < end; jj++) if (load<u8>(bitmapRow + <usize>jj) == 0) store<f32>(srow + <usize>jj * 4, ninf);
  }
}

// Columns of a band-masked tile that rows [i, i + n) (absolute query indices) may see: [lo, hi) local to the tile
// of nj keys starting at j0, widened to multiples of 8 (hi ≤ pad8(nj)); hi ≤ lo when the rows see none of it.
// Packed into one i64 as lo | hi << 32.
// @ts-ignore: decorator
@inline function bandCols(desc: usize, i: i32, n: i32, j0: i32, nj: i32): i64 {
  const base = i + fi(desc, F_DELTA) - j0;
  const lo = max(0, base - fi(desc, F_BAND_HI));
  const hi = min(nj, base + n - fi(desc, F_BAND_LO));
  if (hi <= lo) return 0;
  return <i64>(lo & ~7) | (<i64>pad8(hi) << 32);
}

// One kv tile of the forward for query tile rows [i0, i0 + rows) of head h (state in scratch). Band-masked tiles
// go in strips of MR rows, each computing only the 8-key column groups its rows can see (diagonal and band-edge
// tiles are mostly masked); other tiles run whole.
function forwardTile(desc: usize, h: i32, i0: i32, rows: i32, c: i32, masked: bool, bitmap: usize,
  qs: usize, sc: usize, acc: usize, mrow: usize, lrow: usize): void {
  const d = fi(desc, F_D), s = fi(desc, F_S), bk = fi(desc, F_BK);
  const g = h / (fi(desc, F_HQ) / fi(desc, F_HKV));
  const j0 = c * bk;
  const nj = min(bk, s - j0), njp = pad8(nj);
  const vJ = fp(desc, F_V) + (<usize>g * <usize>s + <usize>j0) * <usize>d * 4;
  // Kᵀ tiles were written once by attnTransposeK: per (kv head, kv tile) a [d × pad8(bk)] block
  const bkp = pad8(bk);
  const ktJ = fp(desc, F_KT) + (<usize>(g * fi(desc, F_NKT) + c) * <usize>d * <usize>bkp) * 4;
  const band = masked && fi(desc, F_MASK_KIND) == MASK_BAND;
  const step = band ? MR : rows;
  const ld = <usize>njp * 4;
  for (let s0 = 0; s0 < rows; s0 += step) {
    const sr = min(step, rows - s0);
    let from = 0, to = njp;
    if (band) {
      const cols = bandCols(desc, i0 + s0, sr, j0, nj);
      from = <i32>cols; to = <i32>(cols >> 32);
      if (to <= from) continue;
    }
    const fo = <usize>from * 4;
    mmAcc(qs + <usize>(s0 * d) * 4, <usize>d * 4, 4, ktJ + fo, ld, sc + <usize>s0 * ld + fo, ld, sr, to - from, d, false);
    for (let ii = s0; ii < s0 + sr; ii++) {
      const srow = sc + <usize>ii * ld;
      maskRow(srow, masked, desc, bitmap + <usize>(ii * bk), i0 + ii, j0, nj, from, to);
      let vmax = f32x4.splat(-Infinity);
      for (let jj = from; jj < to; jj += 4) vmax = f32x4.pmax(v128.load(srow + <usize>jj * 4), vmax);
      const mOld = load<f32>(mrow + <usize>ii * 4);
      const mNew = max(mOld, hmax(vmax));
      if (mNew == -Infinity) { // nothing visible yet and no sink: this tile contributes nothing
        for (let jj = from; jj < to; jj += 4) v128.store(srow + <usize>jj * 4, f32x4.splat(0));
        continue;
      }
      const vm = f32x4.splat(mNew);
      let vsum = f32x4.splat(0);
      for (let jj = from; jj < to; jj += 4) {
        const p = exp2Neg(f32x4.sub(v128.load(srow + <usize>jj * 4), vm));
        v128.store(srow + <usize>jj * 4, p);
        vsum = f32x4.add(vsum, p);
      }
      const alpha = exp2NegS(mOld - mNew);
      store<f32>(lrow + <usize>ii * 4, alpha * load<f32>(lrow + <usize>ii * 4) + hsum(vsum));
      store<f32>(mrow + <usize>ii * 4, mNew);
      if (alpha != 1) {
        const va = f32x4.splat(alpha);
        const arow = acc + <usize>(ii * d) * 4;
        for (let e = 0; e < d; e += 4) v128.store(arow + <usize>e * 4, f32x4.mul(v128.load(arow + <usize>e * 4), va));
      }
    }
    mmAcc(sc + <usize>s0 * ld + fo, ld, 4, vJ + fo * <usize>d, <usize>d * 4, acc + <usize>(s0 * d) * 4, <usize>d * 4, sr, d, min(to, nj) - from, true);
  }
}

/**
 * Kᵀ tile by tile into desc.KT: for kv head g and kv tile c a [d × pad8(nj)] block (zero-padded columns) at
 * offset (g·nkt + c)·d·pad8(bk). Tile-contiguous blocks keep the forward's B operand in a few cache lines per row
 * (a whole-head Kᵀ with row stride S would alias in L1 at power-of-two S). Threads split kv heads.
 */
export function attnTransposeK(tid: i32, nthreads: i32, desc: usize): void {
  const hkv = fi(desc, F_HKV), s = fi(desc, F_S), d = fi(desc, F_D), bk = fi(desc, F_BK), nkt = fi(desc, F_NKT);
  const bkp = pad8(bk);
  const counter = fp(desc, F_COUNTER);
  for (let g = claim(counter, 1, hkv); g < hkv; g = claim(counter, 1, hkv)) {
    for (let c = 0; c < nkt; c++) {
      const j0 = c * bk, nj = min(bk, s - j0);
      transposeTile(fp(desc, F_K) + (<usize>g * <usize>s + <usize>j0) * <usize>d * 4, d, nj, pad8(nj),
        fp(desc, F_KT) + (<usize>(g * nkt + c) * <usize>d * <usize>bkp) * 4);
    }
  }
}

export function attnForward(tid: i32, nthreads: i32, desc: usize): void {
  const hq = fi(desc, F_HQ), t = fi(desc, F_T), d = fi(desc, F_D);
  const bq = fi(desc, F_BQ), bk = fi(desc, F_BK), nqt = fi(desc, F_NQT);
  const bkp = pad8(bk);
  const sinks = fp(desc, F_SINKS);
  const scratch = fp(desc, F_SCRATCH) + <usize>tid * <usize>fi(desc, F_SCRATCH_PER);
  const kt = scratch;
  const sc = kt + <usize>(d * bkp) * 4;
  const acc = sc + <usize>(bq * bkp) * 4;
  const mrow = acc + <usize>(bq * d) * 4;
  const lrow = mrow + <usize>bq * 4;
  const qs = lrow + <usize>bq * 4;
  // Scores in base 2 (see exp2Neg): q is copied scaled by c·log2 e, the running max m and the sink in base 2 too.
  const scale = ff(desc, F_SCALE) * LOG2E;
  const q = fp(desc, F_Q);
  const fullStart = fp(desc, F_FULL_START), fullIdx = fp(desc, F_FULL_IDX);
  const partStart = fp(desc, F_PART_START), partIdx = fp(desc, F_PART_IDX);
  const bitmap = fp(desc, F_BITMAP);
  const tileBytes = <usize>(bq * bk);
  const o = fp(desc, F_O), lse = fp(desc, F_LSE);
  // Work items (query tile, head) are claimed dynamically, last query tiles first: under a causal mask they see
  // the most kv tiles, and the light ones at the end even out the threads.
  const counter = fp(desc, F_COUNTER);
  const items = hq * nqt;
  for (let w = claim(counter, 1, items); w < items; w = claim(counter, 1, items)) {
    const r = nqt - 1 - w / hq, h = w % hq;
    const i0 = r * bq, rows = min(bq, t - i0);
    const m0: f32 = sinks != 0 ? load<f32>(sinks + <usize>h * 4) * LOG2E : -Infinity;
    const l0: f32 = sinks != 0 ? 1 : 0;
    for (let ii = 0; ii < rows; ii++) { store<f32>(mrow + <usize>ii * 4, m0); store<f32>(lrow + <usize>ii * 4, l0); }
    memory.fill(acc, 0, <usize>(rows * d) * 4);
    scaledCopy(q + (<usize>h * <usize>t + <usize>i0) * <usize>d * 4, qs, rows * d, scale);
    const p0 = load<i32>(partStart + <usize>r * 4), p1 = load<i32>(partStart + <usize>(r + 1) * 4);
    for (let x = p0; x < p1; x++) {
      forwardTile(desc, h, i0, rows, load<i32>(partIdx + <usize>x * 4), true, bitmap + <usize>x * tileBytes, qs, sc, acc, mrow, lrow);
    }
    const f0 = load<i32>(fullStart + <usize>r * 4), f1 = load<i32>(fullStart + <usize>(r + 1) * 4);
    for (let x = f0; x < f1; x++) {
      forwardTile(desc, h, i0, rows, load<i32>(fullIdx + <usize>x * 4), false, 0, qs, sc, acc, mrow, lrow);
    }
    for (let ii = 0; ii < rows; ii++) {
      const row = <usize>h * <usize>t + <usize>(i0 + ii);
      const l = load<f32>(lrow + <usize>ii * 4);
      const orow = o + row * <usize>d * 4;
      const arow = acc + <usize>(ii * d) * 4;
      if (l == 0) { // empty row without a sink: O = 0, L = −∞
        memory.fill(orow, 0, <usize>d * 4);
        store<f32>(lse + row * 4, -Infinity);
        continue;
      }
      const inv = f32x4.splat(<f32>1 / l);
      for (let e = 0; e < d; e += 4) v128.store(orow + <usize>e * 4, f32x4.mul(v128.load(arow + <usize>e * 4), inv));
      store<f32>(lse + row * 4, load<f32>(mrow + <usize>ii * 4) * LN2 + Mathf.log(l));
    }
  }
}

/** Backward pre-pass: D = rowsum(dO ⊙ O), dσ_h = −Σ exp(σ_h − L)·D (accumulated in f64), dQ zeroed. */
export function attnBackwardPre(tid: i32, nthreads: i32, desc: usize): void {
  const hq = fi(desc, F_HQ), t = fi(desc, F_T), d = fi(desc, F_D);
  const o = fp(desc, F_O), dO = fp(desc, F_DO), dd = fp(desc, F_DD), lse = fp(desc, F_LSE), dq = fp(desc, F_DQ);
  const sinks = fp(desc, F_SINKS), dsinks = fp(desc, F_DSINKS);
  const counter = fp(desc, F_COUNTER);
  for (let h = claim(counter, 1, hq); h < hq; h = claim(counter, 1, hq)) {
    const sink: f64 = sinks != 0 ? <f64>load<f32>(sinks + <usize>h * 4) : 0;
    let ds: f64 = 0;
    for (let i = 0; i < t; i++) {
      const row = <usize>h * <usize>t + <usize>i;
      const base = row * <usize>d * 4;
      let acc = f32x4.splat(0);
      for (let e = 0; e < d; e += 4) acc = fma(v128.load(o + base + <usize>e * 4), v128.load(dO + base + <usize>e * 4), acc);
      const D = hsum(acc);
      store<f32>(dd + row * 4, D);
      memory.fill(dq + base, 0, <usize>d * 4);
      if (sinks != 0) ds -= Math.exp(sink - <f64>load<f32>(lse + row * 4)) * <f64>D;
    }
    if (sinks != 0) store<f32>(dsinks + <usize>h * 4, <f32>ds);
  }
}

// One (query tile, kv tile) pair of the backward for head h; the kv tile's Kᵀ/Vᵀ are in kt/vt. Band-masked tiles
// go in strips as in the forward: row strips compute P, dP, dS and dQ on the 8-key column groups they can see
// (the rest of their P and dS rows is zeroed), key strips accumulate dV and dK over the query rows they can see.
// The softmax scale c is applied to the raw scores inside the exp and folded into dS (dS = c·P ⊙ (dP − D)), so
// dQ += dS K and dK += dSᵀ Q need neither a scaled copy of Q nor a final pass over dQ.
function backwardTile(desc: usize, h: i32, r: i32, j0: i32, nj: i32, masked: bool, bitmap: usize,
  kt: usize, vt: usize, pm: usize, dsm: usize, dkacc: usize, dvacc: usize, kJ: usize): void {
  const d = fi(desc, F_D), t = fi(desc, F_T), bq = fi(desc, F_BQ), bk = fi(desc, F_BK);
  const i0 = r * bq, rows = min(bq, t - i0);
  const njp = pad8(nj);
  const vs = f32x4.splat(ff(desc, F_SCALE));
  const vs2 = f32x4.splat(ff(desc, F_SCALE) * LOG2E); // P = 2^(c·log2 e·S − log2 e·L) (exp2Neg)
  const rowBase = <usize>h * <usize>t + <usize>i0;
  const qI = fp(desc, F_Q) + rowBase * <usize>d * 4;
  const dOI = fp(desc, F_DO) + rowBase * <usize>d * 4;
  const dQI = fp(desc, F_DQ) + rowBase * <usize>d * 4;
  const lse = fp(desc, F_LSE) + rowBase * 4, dd = fp(desc, F_DD) + rowBase * 4;
  const ld = <usize>njp * 4;
  const dr = <usize>d * 4;
  const band = masked && fi(desc, F_MASK_KIND) == MASK_BAND;
  const step = band ? MR : rows;
  for (let s0 = 0; s0 < rows; s0 += step) {
    const sr = min(step, rows - s0);
    let from = 0, to = njp;
    if (band) {
      const cols = bandCols(desc, i0 + s0, sr, j0, nj);
      from = <i32>cols; to = <i32>(cols >> 32);
      if (to <= from) from = to = 0;
      const z = f32x4.splat(0);
      for (let ii = s0; ii < s0 + sr; ii++) {
        const prow = pm + <usize>ii * ld, dsrow = dsm + <usize>ii * ld;
        for (let jj = 0; jj < from; jj += 4) { v128.store(prow + <usize>jj * 4, z); v128.store(dsrow + <usize>jj * 4, z); }
        for (let jj = to; jj < njp; jj += 4) { v128.store(prow + <usize>jj * 4, z); v128.store(dsrow + <usize>jj * 4, z); }
      }
      if (to <= from) continue;
    }
    const fo = <usize>from * 4;
    mmAcc(qI + <usize>s0 * dr, dr, 4, kt + fo, ld, pm + <usize>s0 * ld + fo, ld, sr, to - from, d, false);
    mmAcc(dOI + <usize>s0 * dr, dr, 4, vt + fo, ld, dsm + <usize>s0 * ld + fo, ld, sr, to - from, d, false);
    for (let ii = s0; ii < s0 + sr; ii++) {
      const prow = pm + <usize>ii * ld, dsrow = dsm + <usize>ii * ld;
      maskRow(prow, masked, desc, bitmap + <usize>(ii * bk), i0 + ii, j0, nj, from, to);
      const L = load<f32>(lse + <usize>ii * 4);
      if (L == -Infinity) { // an empty row (no keys, no sink) has no gradient
        for (let jj = from; jj < to; jj += 4) { v128.store(prow + <usize>jj * 4, f32x4.splat(0)); v128.store(dsrow + <usize>jj * 4, f32x4.splat(0)); }
        continue;
      }
      const vL = f32x4.splat(L * LOG2E), vD = f32x4.splat(load<f32>(dd + <usize>ii * 4));
      for (let jj = from; jj < to; jj += 4) {
        const p = exp2Neg(f32x4.sub(f32x4.mul(v128.load(prow + <usize>jj * 4), vs2), vL));
        v128.store(prow + <usize>jj * 4, p);
        v128.store(dsrow + <usize>jj * 4, f32x4.mul(f32x4.mul(p, vs), f32x4.sub(v128.load(dsrow + <usize>jj * 4), vD)));
      }
    }
    // dQ_I += dS K_J
    mmAcc(dsm + <usize>s0 * ld + fo, ld, 4, kJ + fo * <usize>d, dr, dQI + <usize>s0 * dr, dr, sr, d, min(to, nj) - from, true);
  }
  // dV_J += Pᵀ dO_I, dK_J += dSᵀ Q_I; key strips of a band tile only over the query rows that can see them
  const kstep = band ? MR : nj;
  for (let k0 = 0; k0 < nj; k0 += kstep) {
    const kn = min(kstep, nj - k0);
    let r0 = 0, r1 = rows;
    if (band) {
      // rows i with lo ≤ i + delta − j ≤ hi for some key j in [j0 + k0, j0 + k0 + kn)
      const base = j0 + k0 - fi(desc, F_DELTA) - i0;
      r0 = max(0, base + fi(desc, F_BAND_LO));
      r1 = min(rows, base + kn - 1 + fi(desc, F_BAND_HI) + 1);
      if (r1 <= r0) continue;
    }
    const ko = <usize>k0 * 4;
    mmT(pm + <usize>r0 * ld + ko, ld, dOI + <usize>r0 * dr, dr, dvacc + ko * <usize>d, dr, kn, d, r1 - r0, true);
    mmT(dsm + <usize>r0 * ld + ko, ld, qI + <usize>r0 * dr, dr, dkacc + ko * <usize>d, dr, kn, d, r1 - r0, true);
  }
}

/**
 * Backward main pass (after attnBackwardPre, which zeroes dQ). Work items (kv head g, chunk of desc.BWD_CHUNK kv
 * tiles) are claimed dynamically; an item writes dK/dV of its kv tiles and accumulates dQ of the query tiles that
 * read them. With desc.BWD_PHASES = 2 (set when chunks of the same parity never share a query tile, e.g. band
 * masks) phase p runs chunks p, p + 2, …, so concurrent items write disjoint dQ rows; with 1 phase a chunk is a
 * whole kv head.
 */
export function attnBackward(tid: i32, nthreads: i32, desc: usize, phase: i32): void {
  const hq = fi(desc, F_HQ), hkv = fi(desc, F_HKV), s = fi(desc, F_S), d = fi(desc, F_D);
  const bq = fi(desc, F_BQ), bk = fi(desc, F_BK), nkt = fi(desc, F_NKT);
  const group = hq / hkv;
  const bkp = pad8(bk);
  const scratch = fp(desc, F_SCRATCH) + <usize>tid * <usize>fi(desc, F_SCRATCH_PER);
  const kt = scratch;
  const vt = kt + <usize>(d * bkp) * 4;
  const pm = vt + <usize>(d * bkp) * 4;
  const dsm = pm + <usize>(bq * bkp) * 4;
  const dkacc = dsm + <usize>(bq * bkp) * 4;
  const dvacc = dkacc + <usize>(bkp * d) * 4;
  const tFullStart = fp(desc, F_TFULL_START), tFullIdx = fp(desc, F_TFULL_IDX);
  const tPartStart = fp(desc, F_TPART_START), tPartIdx = fp(desc, F_TPART_IDX), tPartPos = fp(desc, F_TPART_POS);
  const bitmap = fp(desc, F_BITMAP);
  const tileBytes = <usize>(bq * bk);
  const phases = fi(desc, F_BWD_PHASES);
  const cw = phases == 2 ? fi(desc, F_BWD_CHUNK) : nkt;
  const nch = (nkt + cw - 1) / cw;
  const per = phases == 2 ? (nch - phase + 1) / 2 : nch;
  const items = hkv * per;
  const counter = fp(desc, F_COUNTER);
  for (let w = claim(counter, 1, items); w < items; w = claim(counter, 1, items)) {
    const g = w % hkv, k = w / hkv;
    const chunk = phases == 2 ? 2 * k + phase : k;
    const c1 = min(nkt, (chunk + 1) * cw);
    for (let c = chunk * cw; c < c1; c++) {
      const j0 = c * bk, nj = min(bk, s - j0), njp = pad8(nj);
      const p0 = load<i32>(tPartStart + <usize>c * 4), p1 = load<i32>(tPartStart + <usize>(c + 1) * 4);
      const f0 = load<i32>(tFullStart + <usize>c * 4), f1 = load<i32>(tFullStart + <usize>(c + 1) * 4);
      const kvOff = (<usize>g * <usize>s + <usize>j0) * <usize>d * 4;
      const kJ = fp(desc, F_K) + kvOff, vJ = fp(desc, F_V) + kvOff;
      const dkJ = fp(desc, F_DK) + kvOff, dvJ = fp(desc, F_DV) + kvOff;
      if (p0 == p1 && f0 == f1) { // no query sees this kv tile
        memory.fill(dkJ, 0, <usize>(nj * d) * 4);
        memory.fill(dvJ, 0, <usize>(nj * d) * 4);
        continue;
      }
      transposeTile(kJ, d, nj, njp, kt);
      transposeTile(vJ, d, nj, njp, vt);
      memory.fill(dkacc, 0, <usize>(nj * d) * 4);
      memory.fill(dvacc, 0, <usize>(nj * d) * 4);
      for (let h = g * group; h < (g + 1) * group; h++) {
        for (let x = p0; x < p1; x++) {
          const pos = <usize>load<i32>(tPartPos + <usize>x * 4);
          backwardTile(desc, h, load<i32>(tPartIdx + <usize>x * 4), j0, nj, true, bitmap + pos * tileBytes, kt, vt, pm, dsm, dkacc, dvacc, kJ);
        }
        for (let x = f0; x < f1; x++) {
          backwardTile(desc, h, load<i32>(tFullIdx + <usize>x * 4), j0, nj, false, 0, kt, vt, pm, dsm, dkacc, dvacc, kJ);
        }
      }
      memory.copy(dkJ, dkacc, <usize>(nj * d) * 4);
      memory.copy(dvJ, dvacc, <usize>(nj * d) * 4);
    }
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Kernels of the materialising (eager) baseline: dense row-parallel pieces on [T × S] matrices.

/** C[m × n] (+)= A·B on this thread's share of the m rows (6-row aligned); see mmAcc for the addressing. */
export function attnMmRows(tid: i32, nthreads: i32, a: usize, ars: usize, acs: usize, b: usize, ldb: usize, c: usize, ldc: usize,
  m: i32, n: i32, k: i32, accumulate: i32): void {
  const per = ((m + nthreads - 1) / nthreads + 5) / 6 * 6;
  const r0 = min(m, tid * per), r1 = min(m, r0 + per);
  if (r1 > r0) mmAcc(a + <usize>r0 * ars, ars, acs, b, ldb, c + <usize>r0 * ldc, ldc, r1 - r0, n, k, accumulate != 0);
}

/**
 * Eager softmax with the sink column, in place on rows of x [T × S] (raw q·k): scores are x·scale, masked entries
 * (band lo..hi on i + delta − j) become −∞, then P = exp(score − L) with L = log(Σ exp(score) + exp(σ)) (no sink
 * when hasSink = 0).
 */
export function attnEagerSoftmax(tid: i32, nthreads: i32, x: usize, lse: usize, t: i32, s: i32, sink: f32, hasSink: i32,
  lo: i32, hi: i32, delta: i32, scale: f32): void {
  const per = (t + nthreads - 1) / nthreads;
  const i0 = min(t, tid * per), i1 = min(t, i0 + per);
  const ninf: f32 = -Infinity;
  for (let i = i0; i < i1; i++) {
    const row = x + <usize>i * <usize>s * 4;
    const vs = f32x4.splat(scale);
    for (let j = 0; j < s; j += 4) v128.store(row + <usize>j * 4, f32x4.mul(v128.load(row + <usize>j * 4), vs));
    for (let j = 0; j < s; j++) {
      const dd = i + delta - j;
      if (dd < lo || dd > hi) store<f32>(row + <usize>j * 4, ninf);
    }
    let vmax = f32x4.splat(-Infinity);
    for (let j = 0; j < s; j += 4) vmax = f32x4.max(vmax, v128.load(row + <usize>j * 4));
    let m = hmax(vmax);
    if (hasSink != 0) m = max(m, sink);
    if (m == -Infinity) { memory.fill(row, 0, <usize>s * 4); store<f32>(lse + <usize>i * 4, ninf); continue; }
    const vm = f32x4.splat(m);
    let vsum = f32x4.splat(0);
    for (let j = 0; j < s; j += 4) vsum = f32x4.add(vsum, expv(f32x4.sub(v128.load(row + <usize>j * 4), vm)));
    let z = hsum(vsum);
    if (hasSink != 0) z += exps(sink - m);
    const L = m + Mathf.log(z);
    store<f32>(lse + <usize>i * 4, L);
    const vL = f32x4.splat(L);
    for (let j = 0; j < s; j += 4) v128.store(row + <usize>j * 4, expv(f32x4.sub(v128.load(row + <usize>j * 4), vL)));
  }
}

/** Eager softmax backward on rows: D_i = Σ_j P_ij dP_ij, then dp ← c·P ⊙ (dP − D) in place; D written out. */
export function attnEagerDs(tid: i32, nthreads: i32, p: usize, dp: usize, dOut: usize, t: i32, s: i32, scale: f32): void {
  const per = (t + nthreads - 1) / nthreads;
  const i0 = min(t, tid * per), i1 = min(t, i0 + per);
  const vs = f32x4.splat(scale);
  for (let i = i0; i < i1; i++) {
    const pr = p + <usize>i * <usize>s * 4, dr = dp + <usize>i * <usize>s * 4;
    let acc = f32x4.splat(0);
    for (let j = 0; j < s; j += 4) acc = fma(v128.load(pr + <usize>j * 4), v128.load(dr + <usize>j * 4), acc);
    const D = hsum(acc);
    store<f32>(dOut + <usize>i * 4, D);
    const vD = f32x4.splat(D);
    for (let j = 0; j < s; j += 4) {
      v128.store(dr + <usize>j * 4, f32x4.mul(vs, f32x4.mul(v128.load(pr + <usize>j * 4), f32x4.sub(v128.load(dr + <usize>j * 4), vD))));
    }
  }
}
