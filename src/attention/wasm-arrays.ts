/**
 * The Wasm fast path behind the array-based `AttentionFn` signature (Float32Array inputs): copies into engine
 * tensors, runs `flexAttention`, copies the results out and frees everything. For tests and small callers;
 * performance-sensitive code keeps its tensors in Wasm memory and calls `flexAttention` directly.
 */
import { Tensor } from '../engine/tensor.ts';
import { flexAttention } from './wasm.ts';
import type { AttentionGrads, AttentionOptions, AttentionOutput, AttentionResult, FloatArray, HeadTensor } from './types.ts';

function toTensor(x: HeadTensor, tag: string): Tensor {
  if (!(x.data instanceof Float32Array)) throw new TypeError('wasm attention: inputs must be Float32Array (the kernels are float32)');
  return Tensor.from(x.data, [...x.shape], { tag });
}

export function wasmAttention<A extends FloatArray>(q: HeadTensor<A>, k: HeadTensor<A>, v: HeadTensor<A>, options: AttentionOptions): AttentionOutput<A> {
  const tq = toTensor(q, 'attn.in'), tk = toTensor(k, 'attn.in'), tv = toTensor(v, 'attn.in');
  const sinks = options.sinks ? Float32Array.from(options.sinks) : null;
  let out;
  try {
    out = flexAttention(tq, tk, tv, { ...options, sinks });
  } catch (err) {
    tq.dispose(); tk.dispose(); tv.dispose();
    throw err;
  }
  const o = out.o.toArray() as A, lse = out.lse.toArray() as A;
  const backward = (dO: HeadTensor<A>): AttentionGrads<A> => {
    const tdo = toTensor(dO, 'attn.in');
    try {
      const g = out.backward(tdo);
      const res = {
        dq: { data: g.dq.toArray() as A, shape: g.dq.shape }, dk: { data: g.dk.toArray() as A, shape: g.dk.shape },
        dv: { data: g.dv.toArray() as A, shape: g.dv.shape }, dsinks: g.dsinks as A | null,
      };
      g.dq.dispose(); g.dk.dispose(); g.dv.dispose();
      return res;
    } finally {
      tdo.dispose();
    }
  };
  // Keep inputs and forward results alive until the backward has run once (tests call it at most once).
  let released = false;
  const release = (): void => { if (!released) { released = true; out.dispose(); tq.dispose(); tk.dispose(); tv.dispose(); } };
  return { o: { data: o, shape: [...q.shape] }, lse, backward: (dO) => { try { return backward(dO); } finally { release(); } } };
}

/** Forward only (O and LSE copied out, every Wasm buffer freed): e.g. the `forward` of decodeAttention. */
export function wasmForward<A extends FloatArray>(q: HeadTensor<A>, k: HeadTensor<A>, v: HeadTensor<A>, options: AttentionOptions): AttentionResult<A> {
  const tq = toTensor(q, 'attn.in'), tk = toTensor(k, 'attn.in'), tv = toTensor(v, 'attn.in');
  try {
    const out = flexAttention(tq, tk, tv, { ...options, sinks: options.sinks ? Float32Array.from(options.sinks) : null });
    const res = { o: { data: out.o.toArray() as A, shape: [...q.shape] }, lse: out.lse.toArray() as A };
    out.dispose();
    return res;
  } finally {
    tq.dispose(); tk.dispose(); tv.dispose();
  }
}
