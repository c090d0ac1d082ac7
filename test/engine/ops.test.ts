import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkFinite, getBackend, Tensor, type Backend, type Shape } from '../../src/engine/index.ts';
import { assertClose, randn, randomIds } from './helpers.ts';

const wasm = getBackend('wasm');
const ref = getBackend('reference');
// Odd sizes (not multiples of 4/8), a 3-D case, and sizes large enough to run on both threads.
const SHAPES: Shape[] = [[1, 1], [3, 5], [7, 33], [2, 3, 17], [64, 1030], [300, 301]];

/** Runs `f` on both backends with the same seeded inputs and compares every output tensor. */
function same(label: string, f: (be: Backend, inputs: Tensor[]) => Tensor | Tensor[], make: () => Tensor[], rtol = 2e-5, atol = 1e-6): void {
  const inputs = make();
  const copies = inputs.map((t) => t.clone());
  const w = [f(wasm, inputs)].flat();
  const r = [f(ref, copies)].flat();
  w.forEach((t, i) => {
    assert.deepEqual(t.shape, r[i].shape, `${label}: output ${i} shape`);
    assertClose(t.data(), r[i].data(), `${label} output ${i}`, rtol, atol);
  });
  for (const t of [...inputs, ...copies, ...w, ...r]) if (!t.isDisposed) t.dispose();
}

describe('elementwise ops (wasm vs reference)', () => {
  for (const shape of SHAPES) {
    const s = JSON.stringify(shape);
    it(`add, sub, mul, scale, axpy, exp, silu at ${s}`, () => {
      const two = () => [randn(shape, 1), randn(shape, 2)];
      same('add', (be, [a, b]) => be.add(a, b), two);
      same('sub', (be, [a, b]) => be.sub(a, b), two);
      same('mul', (be, [a, b]) => be.mul(a, b), two);
      same('scale', (be, [a]) => be.scale(a, -1.75), two);
      same('axpy', (be, [y, x]) => be.axpy(y, 0.3, x), two);
      same('exp', (be, [a]) => be.exp(a), () => [randn(shape, 3, 4)], 2e-6);
      same('silu', (be, [a]) => be.silu(a), () => [randn(shape, 4, 3)]);
      same('siluBackward', (be, [x, g]) => be.siluBackward(x, g), () => [randn(shape, 5, 3), randn(shape, 6)]);
      same('in place add', (be, [a, b]) => be.add(a, b, { out: a }), two);
    });

    it(`swiglu (plain and gpt-oss clamped) and its backward at ${s}`, () => {
      const inputs = () => [randn(shape, 7, 5), randn(shape, 8, 5), randn(shape, 9)];
      for (const o of [{}, { alpha: 1.702, limit: 7, upBias: 1 }]) {
        same(`swiglu ${JSON.stringify(o)}`, (be, [g, u]) => be.swiglu(g, u, o), inputs);
        same(`swigluBackward ${JSON.stringify(o)}`, (be, [g, u, d]) => {
          const { dgate, dup } = be.swigluBackward(g, u, d, o);
          return [dgate, dup];
        }, inputs);
      }
    });

    it(`bias add and bias gradient at ${s}`, () => {
      const cols = shape[shape.length - 1];
      same('addBias', (be, [x, b]) => be.addBias(x, b), () => [randn(shape, 10), randn([cols], 11)]);
      same('biasGrad', (be, [dy]) => be.biasGrad(dy), () => [randn(shape, 12)], 1e-5, 1e-5);
      same('biasGrad accumulate', (be, [dy, acc]) => be.biasGrad(dy, { out: acc, accumulate: true }),
        () => [randn(shape, 13), randn([cols], 14)], 1e-5, 1e-5);
    });
  }
});

describe('row ops along the last axis (wasm vs reference)', () => {
  for (const shape of SHAPES) {
    const s = JSON.stringify(shape);
    it(`sum, mean, max at ${s}`, () => {
      same('sum', (be, [x]) => be.sum(x), () => [randn(shape, 20)], 1e-5, 1e-5);
      same('mean', (be, [x]) => be.mean(x), () => [randn(shape, 21)], 1e-5, 1e-6);
      same('max', (be, [x]) => be.max(x), () => [randn(shape, 22)], 0, 0);
    });

    it(`softmax, logSoftmax and their backward at ${s}`, () => {
      same('softmax', (be, [x]) => be.softmax(x), () => [randn(shape, 23, 3)]);
      same('logSoftmax', (be, [x]) => be.logSoftmax(x), () => [randn(shape, 24, 3)], 1e-5, 1e-5);
      same('softmaxBackward', (be, [x, dy]) => {
        const y = be.softmax(x);
        const dx = be.softmaxBackward(y, dy);
        y.dispose();
        return dx;
      }, () => [randn(shape, 25), randn(shape, 26)], 1e-4, 1e-6);
      same('logSoftmaxBackward', (be, [x, dy]) => {
        const y = be.logSoftmax(x);
        const dx = be.logSoftmaxBackward(y, dy);
        y.dispose();
        return dx;
      }, () => [randn(shape, 27), randn(shape, 28)], 1e-4, 1e-5);
      same('softmax in place', (be, [x]) => be.softmax(x, { out: x }), () => [randn(shape, 29)]);
    });

    it(`rmsnorm forward and backward at ${s}`, () => {
      const cols = shape[shape.length - 1];
      same('rmsnorm', (be, [x, w]) => {
        const { y, rstd } = be.rmsnorm(x, w, 1e-5);
        return [y, rstd];
      }, () => [randn(shape, 30, 2), randn([cols], 31)]);
      same('rmsnormBackward', (be, [x, w, dy, dwAcc]) => {
        const { y, rstd } = be.rmsnorm(x, w, 1e-5);
        const g = be.rmsnormBackward(dy, x, w, rstd);
        const g2 = be.rmsnormBackward(dy, x, w, rstd, { dweight: dwAcc, accumulateWeight: true });
        y.dispose();
        rstd.dispose();
        g2.dx.dispose();
        return [g.dx, g.dweight, dwAcc];
      }, () => [randn(shape, 32), randn([cols], 33), randn(shape, 34), randn([cols], 35)], 1e-4, 1e-5);
    });
  }

  it('NaN propagates through softmax, max and matmul rather than being hidden', () => {
    const x = Tensor.from([1, NaN, 3, 4, 5, 6], [2, 3]);
    for (const be of [wasm, ref]) {
      const s = be.softmax(x), m = be.max(x);
      assert.ok(Number.isNaN(s.data()[0]) && Number.isNaN(m.data()[0]));
      assert.ok(s.data().slice(3).every((v) => Number.isFinite(v)), 'other rows unaffected');
      assert.throws(() => checkFinite(s, 'probs'), /checkFinite: probs \[2, 3\] has NaN at flat index 0/);
      s.dispose();
      m.dispose();
    }
    x.dispose();
  });

  it('softmax of −∞ entries gives exact zeros', () => {
    const x = Tensor.from([0, -Infinity, 1, -Infinity, -Infinity, 2, 0.5], [1, 7]);
    const s = wasm.softmax(x);
    assert.equal(s.data()[1], 0);
    assert.equal(s.data()[4], 0);
    assertClose(s.data(), ref.softmax(x).data(), 'softmax with −∞', 2e-6);
  });
});

describe('cross-entropy, embedding rows, transpose (wasm vs reference)', () => {
  for (const [rows, vocab] of [[1, 1], [5, 7], [33, 101], [64, 1030]]) {
    it(`crossEntropy and its backward, ${rows} rows × ${vocab}`, () => {
      const targets = randomIds(rows, vocab, rows);
      if (rows > 2) targets[1] = -1;
      same('crossEntropy', (be, [x, dloss]) => {
        const { loss, lse } = be.crossEntropy(x, targets);
        const dx = be.crossEntropyBackward(x, targets, lse, dloss);
        return [loss, lse, dx];
      }, () => [randn([rows, vocab], 40, 3), randn([rows], 41)], 1e-5, 1e-5);
    });
  }

  it('gatherRows and scatterAddRows (repeated ids accumulate)', () => {
    for (const [vocab, cols, n] of [[1, 1, 1], [10, 7, 13], [50, 130, 600]]) {
      const ids = randomIds(n, vocab, n);
      same('gatherRows', (be, [table]) => be.gatherRows(table, ids), () => [randn([vocab, cols], 42)], 0, 0);
      same('scatterAddRows', (be, [table, rows]) => {
        be.scatterAddRows(table, ids, rows);
        return table;
      }, () => [randn([vocab, cols], 43), randn([n, cols], 44)], 1e-5, 1e-5);
    }
  });

  it('transpose of the last two axes', () => {
    for (const shape of [[1, 1], [3, 5], [33, 70], [2, 3, 37, 41]]) {
      same('transpose', (be, [x]) => be.transpose(x), () => [randn(shape, 45)], 0, 0);
    }
    const x = Tensor.from([1, 2, 3, 4, 5, 6], [2, 3]);
    const t = wasm.transpose(x);
    assert.deepEqual(t.shape, [3, 2]);
    assert.deepEqual([...t.data()], [1, 4, 2, 5, 3, 6]);
  });

  it('sumSquares', () => {
    for (const n of [1, 7, 100_003]) {
      const x = randn([n], n);
      const w = wasm.sumSquares(x), r = ref.sumSquares(x);
      assert.ok(Math.abs(w - r) <= 1e-6 * r, `n=${n}: ${w} vs ${r}`);
      x.dispose();
    }
  });
});

describe('bad input gives clear errors on both backends', () => {
  for (const be of [wasm, ref]) {
    it(`${be.name}`, () => {
      const a = Tensor.zeros([2, 3]), b = Tensor.zeros([3, 2]), v = Tensor.zeros([4]);
      assert.throws(() => be.add(a, b), /add: shape mismatch, a is \[2, 3\] but b is \[3, 2\]/);
      assert.throws(() => be.mul(a, Tensor.zeros([3])), /mul: shape mismatch/);
      assert.throws(() => be.addBias(a, v), /addBias: bias must be \[3\]/);
      assert.throws(() => be.softmax(a, { out: b }), /softmax: out has shape \[3, 2\], expected \[2, 3\]/);
      assert.throws(() => be.sum(Tensor.zeros([])), /needs at least 1 dimension/);
      assert.throws(() => be.rmsnorm(a, v, 1e-5), /rmsnorm: weight must be \[3\]/);
      assert.throws(() => be.crossEntropy(a, Int32Array.from([0, 3])), /index 3 at position 1 is outside \[-1, 3\)/);
      assert.throws(() => be.crossEntropy(a, Int32Array.from([0])), /1 targets for 2 rows/);
      assert.throws(() => be.gatherRows(a, Int32Array.from([2])), /index 2 at position 0 is outside \[0, 2\)/);
      assert.throws(() => be.scatterAddRows(a, Int32Array.from([1]), Tensor.zeros([1, 2])), /rows must be \[1, 3\]/);
      assert.throws(() => be.transpose(v), /needs at least 2 dimensions/);
      assert.throws(() => be.biasGrad(a, { accumulate: true }), /accumulate needs an `out`/);
      const d = Tensor.zeros([2]);
      d.dispose();
      assert.throws(() => be.exp(d), /was disposed/);
      for (const t of [a, b, v]) t.dispose();
    });
  }
});
