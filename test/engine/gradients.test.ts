// Backward ops against central finite differences of float64 forward functions. The objective is
// L = Σ f(x) ⊙ G for a fixed random G, so the backward op is fed dy = G.
import { describe, it } from 'node:test';
import { getBackend, Mulberry32Rng, Tensor, type Backend } from '../../src/engine/index.ts';
import { assertClose } from './helpers.ts';

type F64 = Float64Array;

function rand(n: number, rng: Mulberry32Rng, std = 1): F64 {
  return Float64Array.from({ length: n }, () => rng.normal() * std);
}

function dot(a: F64, b: F64): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

/** Central differences of the scalar function f at x, with respect to every entry of x. */
function numericGrad(f: (x: F64) => number, x: F64, h = 1e-5): F64 {
  const g = new Float64Array(x.length);
  for (let i = 0; i < x.length; i++) {
    const old = x[i];
    x[i] = old + h;
    const up = f(x);
    x[i] = old - h;
    const down = f(x);
    x[i] = old;
    g[i] = (up - down) / (2 * h);
  }
  return g;
}

const t = (v: F64, shape: number[]) => Tensor.from(v, shape, { tag: 'grad-test' });

function rowsOf(x: F64, rows: number, cols: number, f: (row: F64) => F64): F64 {
  const out = new Float64Array(x.length);
  for (let r = 0; r < rows; r++) out.set(f(x.subarray(r * cols, (r + 1) * cols)), r * cols);
  return out;
}

const softmax64 = (row: F64): F64 => {
  const m = Math.max(...row);
  const e = row.map((v) => Math.exp(v - m));
  const s = e.reduce((a, b) => a + b, 0);
  return e.map((v) => v / s);
};
const logSoftmax64 = (row: F64): F64 => {
  const m = Math.max(...row);
  const lse = m + Math.log(row.reduce((a, v) => a + Math.exp(v - m), 0));
  return row.map((v) => v - lse);
};
const sig = (z: number) => 1 / (1 + Math.exp(-z));

const ROWS = 3, COLS = 7;
const TOL = { rtol: 2e-3, atol: 2e-5 };

for (const name of ['reference', 'wasm'] as const) {
  const be: Backend = getBackend(name);
  describe(`backward ops vs finite differences (${name} backend)`, () => {
    it('matmul: dA = dC·Bᵀ and dB = Aᵀ·dC through the transpose options', () => {
      const rng = new Mulberry32Rng(1);
      const [M, K, N] = [4, 6, 5];
      const A = rand(M * K, rng), B = rand(K * N, rng), G = rand(M * N, rng);
      const f = (a: F64, b: F64) => {
        let s = 0;
        for (let i = 0; i < M; i++) for (let j = 0; j < N; j++) {
          let c = 0;
          for (let k = 0; k < K; k++) c += a[i * K + k] * b[k * N + j];
          s += c * G[i * N + j];
        }
        return s;
      };
      const a = t(A, [M, K]), b = t(B, [K, N]), g = t(G, [M, N]);
      const dA = be.matmul(g, b, { transB: true }), dB = be.matmul(a, g, { transA: true });
      assertClose(dA.data(), numericGrad((x) => f(x, B), A), 'dA', TOL.rtol, TOL.atol);
      assertClose(dB.data(), numericGrad((x) => f(A, x), B), 'dB', TOL.rtol, TOL.atol);
    });

    it('softmax and logSoftmax', () => {
      const rng = new Mulberry32Rng(2);
      const X = rand(ROWS * COLS, rng, 2), G = rand(ROWS * COLS, rng);
      const x = t(X, [ROWS, COLS]), g = t(G, [ROWS, COLS]);
      const y = be.softmax(x), ly = be.logSoftmax(x);
      assertClose(be.softmaxBackward(y, g).data(), numericGrad((v) => dot(rowsOf(v, ROWS, COLS, softmax64), G), X), 'softmax dx', TOL.rtol, TOL.atol);
      assertClose(be.logSoftmaxBackward(ly, g).data(), numericGrad((v) => dot(rowsOf(v, ROWS, COLS, logSoftmax64), G), X), 'logSoftmax dx',
        TOL.rtol, TOL.atol);
    });

    it('rmsnorm: dx and dweight', () => {
      const rng = new Mulberry32Rng(3);
      const X = rand(ROWS * COLS, rng), W = rand(COLS, rng), G = rand(ROWS * COLS, rng);
      const eps = 1e-5;
      const f = (x: F64, w: F64) => {
        let s = 0;
        for (let r = 0; r < ROWS; r++) {
          let ss = 0;
          for (let c = 0; c < COLS; c++) ss += x[r * COLS + c] ** 2;
          const k = 1 / Math.sqrt(ss / COLS + eps);
          for (let c = 0; c < COLS; c++) s += x[r * COLS + c] * k * w[c] * G[r * COLS + c];
        }
        return s;
      };
      const x = t(X, [ROWS, COLS]), w = t(W, [COLS]), g = t(G, [ROWS, COLS]);
      const { rstd } = be.rmsnorm(x, w, eps);
      const { dx, dweight } = be.rmsnormBackward(g, x, w, rstd);
      assertClose(dx.data(), numericGrad((v) => f(v, W), X), 'rmsnorm dx', TOL.rtol, TOL.atol);
      assertClose(dweight.data(), numericGrad((v) => f(X, v), W), 'rmsnorm dweight', TOL.rtol, TOL.atol);
    });

    it('silu and clamped swiglu', () => {
      const rng = new Mulberry32Rng(4);
      const n = ROWS * COLS;
      const X = rand(n, rng, 2), G = rand(n, rng);
      const x = t(X, [ROWS, COLS]), g = t(G, [ROWS, COLS]);
      assertClose(be.siluBackward(x, g).data(), numericGrad((v) => dot(v.map((z) => z * sig(z)), G), X), 'silu dx', TOL.rtol, TOL.atol);
      // Values spread over ±10 so some sit beyond the clamp at 7 (kept away from the kinks at ±7).
      const opts = { alpha: 1.702, limit: 7, upBias: 1 };
      const pick = () => { let v; do v = rng.uniform(-10, 10); while (Math.abs(Math.abs(v) - 7) < 0.05); return v; };
      const Gt = Float64Array.from({ length: n }, pick), U = Float64Array.from({ length: n }, pick);
      const f = (gate: F64, up: F64) => {
        let s = 0;
        for (let i = 0; i < n; i++) {
          const gc = Math.min(gate[i], 7), uc = Math.max(Math.min(up[i], 7), -7);
          s += gc * sig(1.702 * gc) * (uc + 1) * G[i];
        }
        return s;
      };
      const { dgate, dup } = be.swigluBackward(t(Gt, [n]), t(U, [n]), t(G, [n]), opts);
      assertClose(dgate.data(), numericGrad((v) => f(v, U), Gt), 'swiglu dgate', TOL.rtol, TOL.atol);
      assertClose(dup.data(), numericGrad((v) => f(Gt, v), U), 'swiglu dup', TOL.rtol, TOL.atol);
    });

    it('cross-entropy with an ignored row', () => {
      const rng = new Mulberry32Rng(5);
      const X = rand(ROWS * COLS, rng, 2), D = rand(ROWS, rng);
      const targets = Int32Array.from([2, -1, 6]);
      const f = (x: F64) => {
        let s = 0;
        for (let r = 0; r < ROWS; r++) {
          if (targets[r] < 0) continue;
          const ls = logSoftmax64(x.subarray(r * COLS, (r + 1) * COLS));
          s += -ls[targets[r]] * D[r];
        }
        return s;
      };
      const x = t(X, [ROWS, COLS]);
      const { lse } = be.crossEntropy(x, targets);
      assertClose(be.crossEntropyBackward(x, targets, lse, t(D, [ROWS])).data(), numericGrad(f, X), 'CE dlogits', TOL.rtol, TOL.atol);
    });

    it('embedding (gatherRows backward = scatterAddRows), bias add (backward = biasGrad), transpose', () => {
      const rng = new Mulberry32Rng(6);
      const V = 5, C = 3, ids = Int32Array.from([4, 0, 4, 2]);
      const T = rand(V * C, rng), G = rand(ids.length * C, rng);
      const fEmb = (tab: F64) => {
        let s = 0;
        ids.forEach((id, i) => { for (let c = 0; c < C; c++) s += tab[id * C + c] * G[i * C + c]; });
        return s;
      };
      const dT = Tensor.zeros([V, C]);
      be.scatterAddRows(dT, ids, t(G, [ids.length, C]));
      assertClose(dT.data(), numericGrad(fEmb, T), 'embedding dtable', TOL.rtol, TOL.atol);

      const B = rand(COLS, rng), Gb = rand(ROWS * COLS, rng);
      const fBias = (b: F64) => { let s = 0; for (let i = 0; i < ROWS * COLS; i++) s += b[i % COLS] * Gb[i]; return s; };
      assertClose(be.biasGrad(t(Gb, [ROWS, COLS])).data(), numericGrad(fBias, B), 'bias grad', TOL.rtol, TOL.atol);

      const X = rand(ROWS * COLS, rng), Gt = rand(ROWS * COLS, rng);
      const fT = (x: F64) => { let s = 0; for (let r = 0; r < ROWS; r++) for (let c = 0; c < COLS; c++) s += x[r * COLS + c] * Gt[c * ROWS + r]; return s; };
      assertClose(be.transpose(t(Gt, [COLS, ROWS])).data(), numericGrad(fT, X), 'transpose backward', TOL.rtol, TOL.atol);
    });
  });
}
