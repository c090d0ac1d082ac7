import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { getBackend, Tensor, type MatmulOptions } from '../../src/engine/index.ts';
import { randn, relErr } from './helpers.ts';

const wasm = getBackend('wasm');
const ref = getBackend('reference');

function stored(rows: number, cols: number, trans: boolean | undefined): number[] {
  return trans ? [cols, rows] : [rows, cols];
}

function check(label: string, a: Tensor, b: Tensor, o: MatmulOptions, seed: number): void {
  const outShape = o.out?.shape;
  let init: Float32Array | undefined;
  let outW: Tensor | undefined, outR: Tensor | undefined;
  if (o.accumulate && outShape) {
    const c0 = randn(outShape, seed + 99);
    init = c0.toArray();
    outW = Tensor.from(init, outShape);
    outR = Tensor.from(init, outShape);
    c0.dispose();
  }
  const w = wasm.matmul(a, b, { ...o, out: outW });
  const r = ref.matmul(a, b, { ...o, out: outR });
  assert.deepEqual(w.shape, r.shape, `${label}: shape`);
  const e = relErr(w.data(), r.data());
  assert.ok(e < 2e-6, `${label}: relative error ${e.toExponential(2)}`);
  w.dispose();
  r.dispose();
}

describe('matmul (wasm vs reference)', () => {
  const shapes: [number, number, number][] = [
    [1, 1, 1], [7, 9, 13], [64, 64, 64], [33, 17, 65], [100, 37, 300], [5, 300, 17], [73, 8, 6], [3, 2100, 5], [150, 129, 257],
  ];
  for (const [M, N, K] of shapes) {
    it(`${M}×${K} · ${K}×${N}, every transpose / accumulate / alpha combination`, () => {
      let seed = M * 1000 + N * 10 + K;
      for (const transA of [false, true]) {
        for (const transB of [false, true]) {
          const a = randn(stored(M, K, transA), seed++), b = randn(stored(K, N, transB), seed++);
          for (const [accumulate, alpha] of [[false, undefined], [false, -0.5], [true, 1], [true, 2.5]] as const) {
            const out = accumulate ? Tensor.empty([M, N]) : undefined;
            check(`tA=${transA} tB=${transB} acc=${accumulate} alpha=${alpha}`, a, b, { transA, transB, accumulate, alpha, out }, seed++);
            out?.dispose();
          }
          a.dispose();
          b.dispose();
        }
      }
    });
  }

  it('few rows (M ≤ 4, the streaming path) at odd N and K, every transpose / accumulate combination', () => {
    let seed = 7;
    for (const M of [1, 2, 3, 4]) {
      for (const [N, K] of [[1, 1], [37, 9], [300, 70], [33, 3]]) {
        for (const transA of [false, true]) {
          for (const transB of [false, true]) {
            const a = randn(stored(M, K, transA), seed++), b = randn(stored(K, N, transB), seed++);
            for (const [accumulate, alpha] of [[false, undefined], [true, -1.5]] as const) {
              const out = accumulate ? Tensor.empty([M, N]) : undefined;
              check(`M=${M} N=${N} K=${K} tA=${transA} tB=${transB} acc=${accumulate}`, a, b, { transA, transB, accumulate, alpha, out }, seed++);
              out?.dispose();
            }
            a.dispose();
            b.dispose();
          }
        }
      }
    }
    // Batched, with a shared 2-D weight, big enough to run on both threads.
    const x = randn([3, 2, 64], 1), w = randn([1030, 64], 2);
    const y = wasm.matmul(x, w, { transB: true }), yr = ref.matmul(x, w, { transB: true });
    assert.ok(relErr(y.data(), yr.data()) < 2e-6);
    for (const t of [x, w, y, yr]) t.dispose();
  });

  it('very deep K (beyond the per-thread B cache, e.g. a weight gradient over 70k tokens)', () => {
    const [M, N, K] = [7, 19, 70_000];
    for (const transA of [false, true]) {
      for (const transB of [false, true]) {
        const a = randn(stored(M, K, transA), 1), b = randn(stored(K, N, transB), 2);
        const out = Tensor.empty([M, N]);
        check(`deep K tA=${transA} tB=${transB}`, a, b, { transA, transB, accumulate: true, alpha: 0.5, out }, 3);
        for (const t of [a, b, out]) t.dispose();
      }
    }
  });

  it('writes into out without reading it when not accumulating (NaN garbage is overwritten)', () => {
    const a = randn([9, 5], 1), b = randn([5, 11], 2);
    const out = Tensor.full([9, 11], NaN);
    wasm.matmul(a, b, { out });
    const r = ref.matmul(a, b);
    assert.ok(relErr(out.data(), r.data()) < 2e-6);
    for (const t of [a, b, out, r]) t.dispose();
  });

  it('K = 0 gives zeros (or leaves out unchanged when accumulating), on both the few-rows and the packed path', () => {
    for (const M of [4, 10]) {
      const a = Tensor.empty([M, 0]), b = Tensor.empty([0, 6]);
      const c = Tensor.full([M, 6], NaN);
      wasm.matmul(a, b, { out: c });
      assert.ok(c.data().every((v) => v === 0));
      c.fill(3);
      wasm.matmul(a, b, { out: c, accumulate: true });
      assert.ok(c.data().every((v) => v === 3));
      for (const t of [a, b, c]) t.dispose();
    }
  });

  it('batched 3-D, including a shared 2-D operand and every transpose', () => {
    for (const batch of [1, 3, 4, 9]) {
      for (const transA of [false, true]) {
        for (const transB of [false, true]) {
          const [M, N, K] = [13, 10, 21];
          const a3 = randn([batch, ...stored(M, K, transA)], batch + 1), b3 = randn([batch, ...stored(K, N, transB)], batch + 2);
          const a2 = randn(stored(M, K, transA), batch + 3), b2 = randn(stored(K, N, transB), batch + 4);
          for (const [a, b] of [[a3, b3], [a3, b2], [a2, b3]]) {
            const o = { transA, transB };
            const w = wasm.matmul(a, b, o), r = ref.matmul(a, b, o);
            assert.deepEqual(w.shape, [batch, M, N]);
            assert.ok(relErr(w.data(), r.data()) < 2e-6, `batch ${batch} ${JSON.stringify(o)} ${a.shape}·${b.shape}`);
            w.dispose();
            r.dispose();
          }
          for (const t of [a3, b3, a2, b2]) t.dispose();
        }
      }
    }
  });

  it('a large batched product with accumulate matches the reference', () => {
    const a = randn([2, 200, 96], 5), b = randn([2, 96, 130], 6);
    const c = randn([2, 200, 130], 7);
    const cr = c.clone();
    wasm.matmul(a, b, { out: c, accumulate: true, alpha: 0.25 });
    ref.matmul(a, b, { out: cr, accumulate: true, alpha: 0.25 });
    assert.ok(relErr(c.data(), cr.data()) < 2e-6);
    for (const t of [a, b, c, cr]) t.dispose();
  });

  it('rejects mismatched shapes with clear errors', () => {
    const a = Tensor.zeros([3, 4]), b = Tensor.zeros([5, 6]), c3 = Tensor.zeros([2, 4, 5]), d3 = Tensor.zeros([3, 4, 5]);
    const v = Tensor.zeros([4]);
    for (const be of [wasm, ref]) {
      assert.throws(() => be.matmul(a, b), /matmul: inner dimensions differ: op\(a\) is 3×4 .* op\(b\) is 5×6/);
      assert.throws(() => be.matmul(a, v), /operands must be 2-D or 3-D/);
      assert.throws(() => be.matmul(Tensor.zeros([2, 3, 4]), d3), /batch sizes differ/);
      assert.throws(() => be.matmul(a, c3.reshape([8, 5]), { transA: true }), /inner dimensions differ/);
      assert.throws(() => be.matmul(a, Tensor.zeros([4, 2]), { accumulate: true }), /accumulate needs an `out`/);
      assert.throws(() => be.matmul(a, Tensor.zeros([4, 2]), { out: Tensor.zeros([2, 3]) }), /out has shape \[2, 3\], expected \[3, 2\]/);
      assert.throws(() => be.matmul(a, Tensor.zeros([4, 4]), { out: a }), /must not share storage/);
    }
    for (const t of [a, b, c3, d3, v]) t.dispose();
  });
});
