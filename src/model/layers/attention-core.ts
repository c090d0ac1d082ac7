/**
 * One interface over src/attention's two implementations, on engine tensors in head-major layout
 * (q, o: [Hq, N, d]; k, v: [Hkv, N, d]): `flexAttention` (Wasm kernels) or `blockwiseAttention` (TypeScript,
 * float64 statistics; the oracle the gradient checks run against, and the fallback for head dims the Wasm kernels
 * do not take).
 */
import { Tensor } from '../../engine/index.ts';
import { blockwiseAttention } from '../../attention/blockwise.ts';
import type { BlockMask } from '../../attention/block-mask.ts';
import { eagerAttentionWasm } from '../../attention/eager-wasm.ts';
import { flexAttention } from '../../attention/wasm.ts';
import { TAG, type AttentionKind, type Impl } from './context.ts';

export interface CoreGrads {
  dq: Tensor;
  dk: Tensor;
  dv: Tensor;
  dsinks: Float32Array | null;
}

export interface CoreOutput {
  readonly o: Tensor;
  backward(dO: Tensor): CoreGrads;
  dispose(): void;
}

export interface CoreOptions {
  blockMask: BlockMask;
  sinks: Float32Array | null;
  scale: number;
}

export function attentionCore(impl: Impl, q: Tensor, k: Tensor, v: Tensor, opts: CoreOptions, kind: AttentionKind = 'flex'): CoreOutput {
  const gqa = q.shape[0] !== k.shape[0];
  if (kind === 'eager') {
    if (impl !== 'wasm') throw new Error("attention 'eager' runs on the wasm backend only");
    if (!opts.blockMask.mask.band) throw new Error(`attention 'eager' takes causal or sliding-window masks only, not '${opts.blockMask.mask.name}' (packed documents need 'flex')`);
    const out = eagerAttentionWasm(q, k, v, { blockMask: opts.blockMask, sinks: opts.sinks, scale: opts.scale, gqa, checkFinite: false });
    return { o: out.o, backward: (dO) => out.backward(dO), dispose: () => out.dispose() };
  }
  // the Wasm kernels need head dims that are multiples of 8; other sizes take the TypeScript path
  if (impl === 'wasm' && q.shape[2] % 8 === 0) {
    const out = flexAttention(q, k, v, { blockMask: opts.blockMask, sinks: opts.sinks, scale: opts.scale, gqa, checkFinite: false });
    return { o: out.o, backward: (dO) => out.backward(dO), dispose: () => out.dispose() };
  }
  const h = (t: Tensor) => ({ data: t.toArray(), shape: [...t.shape] });
  const out = blockwiseAttention(h(q), h(k), h(v), { blockMask: opts.blockMask, sinks: opts.sinks, scale: opts.scale, gqa });
  const o = Tensor.from(out.o.data, q.shape, { tag: TAG.act });
  return {
    o,
    backward(dO: Tensor): CoreGrads {
      const g = out.backward(h(dO));
      return {
        dq: Tensor.from(g.dq.data, q.shape, { tag: TAG.act }),
        dk: Tensor.from(g.dk.data, k.shape, { tag: TAG.act }),
        dv: Tensor.from(g.dv.data, v.shape, { tag: TAG.act }),
        dsinks: g.dsinks ? Float32Array.from(g.dsinks) : null,
      };
    },
    dispose: () => o.dispose(),
  };
}
