import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { AdamW, clipGradNorm, globalNorm, memoryReport, Mulberry32Rng, Tensor, type StorageKind } from '../../src/engine/index.ts';
import { assertClose } from './helpers.ts';

describe('AdamW', () => {
  for (const storage of ['wasm', 'js'] as StorageKind[]) {
    it(`matches a hand-computed two-step update (${storage} storage, per-parameter weight decay)`, () => {
      // By hand, lr 0.1, β 0.9/0.999, eps 1e-8, grads 0.5 then −0.25, from p = 1:
      //   step 1: p = 1·(1 − 0.1·wd) − 0.1/0.1 · 0.05 / (sqrt(0.00025)/sqrt(0.001) + 1e-8)
      //   step 2: m = 0.02, v = 0.00031225, bc1 = 0.19, bc2 = 0.001999
      const p = Tensor.from([1, 1, 1, 1, 1], [5], { storage }), g = Tensor.from([0.5, 0.5, 0.5, 0.5, 0.5], [5], { storage });
      const q = Tensor.from([1], [1], { storage }), gq = Tensor.from([0.5], [1], { storage });
      const opt = new AdamW([{ param: p, grad: g }, { param: q, grad: gq, weightDecay: 0 }], { lr: 0.1, weightDecay: 0.01 });
      opt.update();
      assertClose(p.data(), new Array(5).fill(0.899000002), 'p after step 1', 1e-7);
      assertClose(q.data(), [0.900000002], 'q after step 1', 1e-7);
      g.fill(-0.25);
      gq.fill(-0.25);
      opt.update();
      assertClose(p.data(), new Array(5).fill(0.8714672987), 'p after step 2', 1e-6);
      assertClose(q.data(), [0.8733662987], 'q after step 2', 1e-6);
      assertClose(opt.moments(0).m.data(), new Array(5).fill(0.02), 'm', 1e-6);
      assertClose(opt.moments(0).v.data(), new Array(5).fill(0.00031225), 'v', 1e-6);
      assert.equal(opt.step, 2);
      opt.dispose();
      for (const t of [p, g, q, gq]) t.dispose();
    });
  }

  it('updates large odd-sized tensors (both threads) like a float64 loop, and tags its state', () => {
    const n = 70_001;
    const rng = new Mulberry32Rng(9);
    const p = Tensor.randn([n], rng), g = Tensor.randn([n], rng);
    const p64 = Float64Array.from(p.data()), m64 = new Float64Array(n), v64 = new Float64Array(n);
    const before = memoryReport().tags['optimizer.state']?.liveBytes ?? 0;
    const opt = new AdamW([{ param: p, grad: g }], { lr: 1e-3, beta1: 0.8, beta2: 0.95, eps: 1e-6, weightDecay: 0.1 });
    assert.equal(memoryReport().tags['optimizer.state'].liveBytes - before, 2 * n * 4);
    for (let step = 1; step <= 3; step++) {
      opt.update();
      const gd = g.data();
      for (let i = 0; i < n; i++) {
        p64[i] *= 1 - 1e-3 * 0.1;
        m64[i] = 0.8 * m64[i] + 0.2 * gd[i];
        v64[i] = 0.95 * v64[i] + 0.05 * gd[i] * gd[i];
        p64[i] -= (1e-3 / (1 - 0.8 ** step)) * m64[i] / (Math.sqrt(v64[i]) / Math.sqrt(1 - 0.95 ** step) + 1e-6);
      }
    }
    assertClose(p.data(), p64, 'params after 3 steps', 1e-5, 1e-6);
    opt.dispose();
    assert.equal(memoryReport().tags['optimizer.state'].liveBytes, before);
    p.dispose();
    g.dispose();
  });

  it('rejects mismatched gradients and bad hyperparameters', () => {
    const p = Tensor.zeros([2, 3]), g = Tensor.zeros([3, 2]);
    assert.throws(() => new AdamW([{ param: p, grad: g }], { lr: 0.1 }), /parameter 0 is \[2, 3\] but its gradient is \[3, 2\]/);
    assert.throws(() => new AdamW([], { lr: 0.1, beta2: 1 }), /beta2 must be in \[0, 1\)/);
    assert.throws(() => new AdamW([], { lr: -1 }), /lr must be ≥ 0/);
    p.dispose();
    g.dispose();
  });
});

describe('gradient clipping', () => {
  it('computes the global L2 norm over several tensors and clips to maxNorm', () => {
    const a = Tensor.from([3, 0], [2]), b = Tensor.from([0, 4, 0], [3], { storage: 'js' });
    assert.equal(globalNorm([a, b]), 5);
    const norm = clipGradNorm([a, b], 1);
    assert.equal(norm, 5);
    assertClose([...a.data(), ...b.data()], [0.6, 0, 0, 0.8, 0], 'clipped', 1e-6);
    assert.ok(Math.abs(clipGradNorm([a, b], 10) - 1) < 1e-6, 'a norm under the limit is returned and nothing changes');
    assertClose([...a.data(), ...b.data()], [0.6, 0, 0, 0.8, 0], 'unchanged', 1e-6);
    a.dispose();
    b.dispose();
  });

  it('returns a non-finite norm without touching the gradients', () => {
    const a = Tensor.from([1, NaN], [2]);
    assert.ok(Number.isNaN(clipGradNorm([a], 1)));
    assert.equal(a.data()[0], 1);
    a.dispose();
  });
});
