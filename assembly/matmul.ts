// Matrix multiply C (+)= alpha · op(A) · op(B), float32, row-major, with optional batching.
//
// Blocking follows the Goto scheme: a thread packs a column block of op(B) into 8-column panels laid out [k][8]
// (for all of K when it fits its cache, else per K block of KC); for each M block (MC) and K block it packs op(A)
// into MR-row panels laid out [k][MR]; a register-tiled MR×8 micro-kernel then runs over the packed panels.
// Packing handles every transpose combination, and pads edge panels with zeros so the micro-kernel always runs
// full tiles (edge tiles are stored through a small buffer). Each thread packs its own panels, so threads never
// wait on each other.
import { matmulSmallM, SMALL_M } from './matvec';
import { claim, fma } from './simd';

// 6×8 tiles need 12 accumulators + 3 operands = 15 of the 16 SIMD registers. Without fused multiply-add each
// product needs one more temporary and V8 spills (measured: ~30 instead of ~45 GFLOP/s on one core), so the
// plain-SIMD build uses 5×8 tiles, and MC stays a multiple of MR.
const MR: i32 = isDefined(RELAXED) ? 6 : 5;
const NR: i32 = 8;
const KC: i32 = 256;
const MC: i32 = isDefined(RELAXED) ? 72 : 80;
const NC: i32 = 2048;
/** Floats of packed op(B) a thread keeps: a column block over all of K (or one KC×NC block when K is deeper). */
const BCACHE: i32 = KC * NC;

/** Bytes of scratch one thread needs (packed A block, packed B cache, an edge tile). */
export function matmulScratchBytes(): i32 {
  return (MC * KC + BCACHE + MR * NR) * 4;
}

// Packs rows [i0, i0+mc) × cols [k0, k0+kc) of op(A) into MR-row panels; lda is the stored row length.
function packA(a: usize, transA: bool, lda: i32, i0: i32, mc: i32, k0: i32, kc: i32, dst: usize): void {
  for (let ip = 0; ip < mc; ip += MR) {
    const rows = min(MR, mc - ip);
    const panel = dst + <usize>(ip * kc) * 4;
    if (!transA) {
      for (let r = 0; r < MR; r++) {
        let d = panel + <usize>r * 4;
        if (r < rows) {
          let s = a + (<usize>(i0 + ip + r) * <usize>lda + <usize>k0) * 4;
          for (let k = 0; k < kc; k++) { store<f32>(d, load<f32>(s)); s += 4; d += MR * 4; }
        } else {
          for (let k = 0; k < kc; k++) { store<f32>(d, 0); d += MR * 4; }
        }
      }
    } else {
      // op(A)[i][k] = A[k][i]: MR consecutive i of one stored row go to one packed k slot.
      let s = a + (<usize>k0 * <usize>lda + <usize>(i0 + ip)) * 4;
      let d = panel;
      for (let k = 0; k < kc; k++) {
        for (let r = 0; r < MR; r++) store<f32>(d + <usize>r * 4, r < rows ? load<f32>(s + <usize>r * 4) : 0);
        s += <usize>lda * 4; d += MR * 4;
      }
    }
  }
}

// Packs rows [k0, k0+kc) × cols [j0, j0+nc) of op(B) into 8-column panels; ldb is the stored row length.
function packB(b: usize, transB: bool, ldb: i32, j0: i32, nc: i32, k0: i32, kc: i32, dst: usize): void {
  for (let jp = 0; jp < nc; jp += NR) {
    const cols = min(NR, nc - jp);
    const panel = dst + <usize>(jp * kc) * 4;
    if (!transB) {
      let s = b + (<usize>k0 * <usize>ldb + <usize>(j0 + jp)) * 4;
      let d = panel;
      if (cols == NR) {
        for (let k = 0; k < kc; k++) {
          v128.store(d, v128.load(s)); v128.store(d, v128.load(s, 16), 16);
          s += <usize>ldb * 4; d += NR * 4;
        }
      } else {
        for (let k = 0; k < kc; k++) {
          for (let c = 0; c < NR; c++) store<f32>(d + <usize>c * 4, c < cols ? load<f32>(s + <usize>c * 4) : 0);
          s += <usize>ldb * 4; d += NR * 4;
        }
      }
    } else if (cols == NR) {
      // op(B)[k][j] = B[j][k]: 4 k-values from each of the 8 stored rows, transposed in registers (4×4 blocks).
      const s0 = b + (<usize>(j0 + jp) * <usize>ldb + <usize>k0) * 4;
      const rs = <usize>ldb * 4;
      let k = 0;
      for (; k + 4 <= kc; k += 4) {
        const o = <usize>k * 4;
        const d = panel + <usize>(k * NR) * 4;
        transpose4(v128.load(s0 + o), v128.load(s0 + rs + o), v128.load(s0 + 2 * rs + o), v128.load(s0 + 3 * rs + o), d);
        transpose4(v128.load(s0 + 4 * rs + o), v128.load(s0 + 5 * rs + o), v128.load(s0 + 6 * rs + o), v128.load(s0 + 7 * rs + o), d + 16);
      }
      for (; k < kc; k++) {
        const d = panel + <usize>(k * NR) * 4;
        for (let c = 0; c < NR; c++) store<f32>(d + <usize>c * 4, load<f32>(s0 + <usize>c * rs + <usize>k * 4));
      }
    } else {
      // Edge panel: read stored rows contiguously, scatter into the panel's column c.
      for (let c = 0; c < NR; c++) {
        let d = panel + <usize>c * 4;
        if (c < cols) {
          let s = b + (<usize>(j0 + jp + c) * <usize>ldb + <usize>k0) * 4;
          for (let k = 0; k < kc; k++) { store<f32>(d, load<f32>(s)); s += 4; d += NR * 4; }
        } else {
          for (let k = 0; k < kc; k++) { store<f32>(d, 0); d += NR * 4; }
        }
      }
    }
  }
}

// Writes the 4×4 transpose of rows r0..r3 (row r = 4 consecutive k of one column) as 4 k-slots of a packed
// 8-wide B panel: slot k gets [r0[k], r1[k], r2[k], r3[k]] at d + k·32.
// @ts-ignore: decorator
@inline function transpose4(r0: v128, r1: v128, r2: v128, r3: v128, d: usize): void {
  const t0 = v128.shuffle<i32>(r0, r1, 0, 4, 1, 5), t1 = v128.shuffle<i32>(r0, r1, 2, 6, 3, 7);
  const t2 = v128.shuffle<i32>(r2, r3, 0, 4, 1, 5), t3 = v128.shuffle<i32>(r2, r3, 2, 6, 3, 7);
  v128.store(d, v128.shuffle<i32>(t0, t2, 0, 1, 4, 5));
  v128.store(d, v128.shuffle<i32>(t0, t2, 2, 3, 6, 7), NR * 4);
  v128.store(d, v128.shuffle<i32>(t1, t3, 0, 1, 4, 5), 2 * NR * 4);
  v128.store(d, v128.shuffle<i32>(t1, t3, 2, 3, 6, 7), 3 * NR * 4);
}

// @ts-ignore: decorator
@inline function storeRow(c: usize, lo: v128, hi: v128, alpha: v128, overwrite: bool): void {
  if (overwrite) {
    v128.store(c, f32x4.mul(lo, alpha)); v128.store(c, f32x4.mul(hi, alpha), 16);
  } else {
    v128.store(c, fma(lo, alpha, v128.load(c))); v128.store(c, fma(hi, alpha, v128.load(c, 16)), 16);
  }
}

// MR×8 tile (MR = 5 or 6): C[rows×cols] (+)= alpha · Ap·Bp over kc. ldc in bytes. `tmp` holds a full tile for edge cases.
function microKernel(kc: i32, ap: usize, bp: usize, c: usize, ldc: usize, rows: i32, cols: i32, alpha: f32, overwrite: bool, tmp: usize): void {
  let c00 = f32x4.splat(0), c01 = f32x4.splat(0), c10 = f32x4.splat(0), c11 = f32x4.splat(0);
  let c20 = f32x4.splat(0), c21 = f32x4.splat(0), c30 = f32x4.splat(0), c31 = f32x4.splat(0);
  let c40 = f32x4.splat(0), c41 = f32x4.splat(0), c50 = f32x4.splat(0), c51 = f32x4.splat(0);
  for (let k = 0; k < kc; k++) {
    const b0 = v128.load(bp), b1 = v128.load(bp, 16);
    let av = v128.load32_splat(ap);
    c00 = fma(av, b0, c00); c01 = fma(av, b1, c01);
    av = v128.load32_splat(ap, 4);
    c10 = fma(av, b0, c10); c11 = fma(av, b1, c11);
    av = v128.load32_splat(ap, 8);
    c20 = fma(av, b0, c20); c21 = fma(av, b1, c21);
    av = v128.load32_splat(ap, 12);
    c30 = fma(av, b0, c30); c31 = fma(av, b1, c31);
    if (MR >= 5) {
      av = v128.load32_splat(ap, 16);
      c40 = fma(av, b0, c40); c41 = fma(av, b1, c41);
    }
    if (MR == 6) {
      av = v128.load32_splat(ap, 20);
      c50 = fma(av, b0, c50); c51 = fma(av, b1, c51);
    }
    ap += MR * 4; bp += NR * 4;
  }
  const va = f32x4.splat(alpha);
  if (rows == MR && cols == NR) {
    storeRow(c, c00, c01, va, overwrite); c += ldc;
    storeRow(c, c10, c11, va, overwrite); c += ldc;
    storeRow(c, c20, c21, va, overwrite); c += ldc;
    storeRow(c, c30, c31, va, overwrite);
    if (MR >= 5) { c += ldc; storeRow(c, c40, c41, va, overwrite); }
    if (MR == 6) { c += ldc; storeRow(c, c50, c51, va, overwrite); }
    return;
  }
  v128.store(tmp, c00); v128.store(tmp, c01, 16); v128.store(tmp, c10, 32); v128.store(tmp, c11, 48);
  v128.store(tmp, c20, 64); v128.store(tmp, c21, 80); v128.store(tmp, c30, 96); v128.store(tmp, c31, 112);
  if (MR >= 5) { v128.store(tmp, c40, 128); v128.store(tmp, c41, 144); }
  if (MR == 6) { v128.store(tmp, c50, 160); v128.store(tmp, c51, 176); }
  for (let r = 0; r < rows; r++) {
    const row = c + <usize>r * ldc, t = tmp + <usize>(r * NR) * 4;
    for (let j = 0; j < cols; j++) {
      const v = load<f32>(t + <usize>j * 4) * alpha;
      const p = row + <usize>j * 4;
      store<f32>(p, overwrite ? v : load<f32>(p) + v);
    }
  }
}

// Packs op(B) columns [n0, n0+nc) for all of K into `dst`: K block p (rows [p·KC, p·KC+kc)) at p·KC·ncPad floats,
// where ncPad = nc rounded up to NR.
function packBColumns(b: usize, transB: bool, ldb: i32, K: i32, n0: i32, nc: i32, dst: usize): void {
  const ncPad = (nc + NR - 1) / NR * NR;
  for (let pc = 0; pc < K; pc += KC) packB(b, transB, ldb, n0, nc, pc, min(KC, K - pc), dst + <usize>pc * <usize>ncPad * 4);
}

// C[m0..m1) × [n0..n1) from B columns already packed by packBColumns at `bcache`; mc ≤ MC.
function gemmPackedB(a: usize, c: usize, M: i32, N: i32, K: i32, transA: bool, alpha: f32, accumulate: bool,
  m0: i32, m1: i32, n0: i32, n1: i32, ws: usize, bcache: usize, tmp: usize): void {
  const lda = transA ? M : K;
  const ldc = <usize>N * 4;
  const mc = m1 - m0, nc = n1 - n0;
  const ncPad = (nc + NR - 1) / NR * NR;
  for (let pc = 0; pc < K; pc += KC) {
    const kc = min(KC, K - pc);
    const overwrite = pc == 0 && !accumulate;
    packA(a, transA, lda, m0, mc, pc, kc, ws);
    const bblock = bcache + <usize>pc * <usize>ncPad * 4;
    for (let jr = 0; jr < nc; jr += NR) {
      const cols = min(NR, nc - jr);
      const bp = bblock + <usize>(jr * kc) * 4;
      for (let ir = 0; ir < mc; ir += MR) {
        const cp = c + <usize>(m0 + ir) * ldc + <usize>(n0 + jr) * 4;
        microKernel(kc, ws + <usize>(ir * kc) * 4, bp, cp, ldc, min(MR, mc - ir), cols, alpha, overwrite, tmp);
      }
    }
  }
}

// For K too deep to cache B columns over all of K: packs B per K block inside the item (more packing, same
// arithmetic and order, so results match the cached path bit for bit).
function gemmRegion(a: usize, b: usize, c: usize, M: i32, N: i32, K: i32, transA: bool, transB: bool, alpha: f32,
  accumulate: bool, m0: i32, m1: i32, n0: i32, n1: i32, ws: usize, bpack: usize, tmp: usize): void {
  const lda = transA ? M : K, ldb = transB ? K : N;
  const ldc = <usize>N * 4;
  const mc = m1 - m0;
  for (let pc = 0; pc < K; pc += KC) {
    const kc = min(KC, K - pc);
    const overwrite = pc == 0 && !accumulate;
    for (let jc = n0; jc < n1; jc += NC) {
      const nc = min(NC, n1 - jc);
      packB(b, transB, ldb, jc, nc, pc, kc, bpack);
      packA(a, transA, lda, m0, mc, pc, kc, ws);
      for (let jr = 0; jr < nc; jr += NR) {
        const cols = min(NR, nc - jr);
        const bp = bpack + <usize>(jr * kc) * 4;
        for (let ir = 0; ir < mc; ir += MR) {
          const cp = c + <usize>(m0 + ir) * ldc + <usize>(jc + jr) * 4;
          microKernel(kc, ws + <usize>(ir * kc) * 4, bp, cp, ldc, min(MR, mc - ir), cols, alpha, overwrite, tmp);
        }
      }
    }
  }
}

/**
 * Batched C[b] (+)= alpha · op(A[b]) · op(B[b]) for b < batch. op(A) is M×K (A stored K×M when transA),
 * op(B) is K×N (B stored N×K when transB), C is M×N. Batch strides are in elements (0 broadcasts one matrix).
 * `scratch` holds nthreads × matmulScratchBytes() bytes. `counter` is an i32 the caller zeroes before the call.
 *
 * Work items are (batch, column block, MC-row block), row block fastest, claimed from `counter`, so a thread the
 * OS deschedules simply ends up with fewer items. A thread packs a column block of op(B) over all of K once and
 * reuses it for the consecutive items it claims in that block. Each output element is computed the same way
 * whoever claims it, so results do not depend on the thread count.
 */
export function matmul(tid: i32, nthreads: i32, a: usize, b: usize, c: usize, batch: i32, M: i32, N: i32, K: i32,
  strideA: i32, strideB: i32, strideC: i32, transA: i32, transB: i32, alpha: f32, accumulate: i32, scratch: usize, counter: usize): void {
  const ws = scratch + <usize>tid * <usize>matmulScratchBytes();
  const bcache = ws + <usize>(MC * KC) * 4, tmp = bcache + <usize>BCACHE * 4;
  const tA = transA != 0, tB = transB != 0, acc = accumulate != 0;
  // Few rows: stream B instead of packing it (the transposed-A copy must fit the workspace).
  if (M <= SMALL_M && <i64>M * <i64>K * 4 <= <i64>matmulScratchBytes()) {
    matmulSmallM(nthreads, a, b, c, batch, M, N, K, strideA, strideB, strideC, tA, tB, alpha, acc, ws, counter);
    return;
  }
  const ldb = tB ? K : N;
  const mBlocks = (M + MC - 1) / MC;
  const cacheAllK = K > 0 && K <= BCACHE / NR;
  // Column blocks: as wide as the cache holds over all of K (at most NC), narrowed until the threads have
  // enough items to balance.
  let nw = cacheAllK ? min(NC, BCACHE / K / NR * NR) : NC;
  while (nw > 4 * NR && batch * mBlocks * ((N + nw - 1) / nw) < 4 * nthreads) nw = ((nw >> 1) + NR - 1) / NR * NR;
  const nBlocks = (N + nw - 1) / nw;
  const perBatch = mBlocks * nBlocks;
  const items = batch * perBatch;
  let cached = -1;
  for (let item = claim(counter, 1, items); item < items; item = claim(counter, 1, items)) {
    const bi = item / perBatch, rest = item % perBatch;
    const jb = rest / mBlocks;
    const m0 = (rest % mBlocks) * MC, n0 = jb * nw;
    const m1 = min(M, m0 + MC), n1 = min(N, n0 + nw);
    const ab = a + <usize>bi * <usize>strideA * 4, bb = b + <usize>bi * <usize>strideB * 4, cb = c + <usize>bi * <usize>strideC * 4;
    if (K == 0) {
      // An empty sum: C = 0 (or unchanged when accumulating).
      if (!acc) for (let i = m0; i < m1; i++) memory.fill(cb + (<usize>i * <usize>N + <usize>n0) * 4, 0, <usize>(n1 - n0) * 4);
    } else if (cacheAllK) {
      const key = bi * nBlocks + jb;
      if (key != cached) {
        packBColumns(bb, tB, ldb, K, n0, n1 - n0, bcache);
        cached = key;
      }
      gemmPackedB(ab, cb, M, N, K, tA, alpha, acc, m0, m1, n0, n1, ws, bcache, tmp);
    } else {
      gemmRegion(ab, bb, cb, M, N, K, tA, tB, alpha, acc, m0, m1, n0, n1, ws, bcache, tmp);
    }
  }
}
