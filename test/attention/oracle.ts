/** Runs an attention implementation and the float64 eager oracle on the same random problem and reports errors. */
import { createBlockMask } from '../../src/attention/block-mask.ts';
import { causalMask, slidingWindowMask } from '../../src/attention/masks.ts';
import { eagerAttention } from '../../src/attention/eager.ts';
import type { AttentionMask } from '../../src/attention/masks.ts';
import type { AttentionFn, FloatArray, HeadTensor } from '../../src/attention/types.ts';
import { randTensor, relErr, rng } from './helpers.ts';

export interface Case {
  hkv: number;
  group: number;
  t: number;
  d: number;
  /** Window W, or 0 for full causal. */
  window: number;
  block: number | { q: number; kv: number };
  /** Extra cached keys before the queries (q offset = S − T). */
  prefix?: number;
  sinks?: boolean;
  seed?: number;
  qScale?: number;
}

export interface CaseErrors { o: number; lse: number; dq: number; dk: number; dv: number; dsinks: number }

export function maskOf(c: Case): AttentionMask {
  return c.window > 0 ? slidingWindowMask(c.window) : causalMask();
}

function toF32(t: HeadTensor<Float64Array>): HeadTensor<Float32Array> {
  return { data: Float32Array.from(t.data), shape: t.shape };
}

/** Relative (to the oracle's max magnitude) errors of impl vs the float64 oracle; f32 runs impl on rounded inputs. */
export function compareWithOracle(impl: AttentionFn, c: Case, f32: boolean): CaseErrors {
  const r = rng(c.seed ?? 1);
  const hq = c.hkv * c.group, prefix = c.prefix ?? 0, S = c.t + prefix;
  const round = (t: HeadTensor<Float64Array>): HeadTensor<Float64Array> => (f32 ? { data: Float64Array.from(Float32Array.from(t.data)), shape: t.shape } : t);
  const q = round(randTensor(r, [hq, c.t, c.d], c.qScale ?? 1));
  const k = round(randTensor(r, [c.hkv, S, c.d]));
  const v = round(randTensor(r, [c.hkv, S, c.d]));
  const dO = round(randTensor(r, [hq, c.t, c.d]));
  const sinks = c.sinks === false ? null : Float64Array.from(Float32Array.from(randTensor(r, [hq, 1, 1]).data));
  const mask = maskOf(c);
  const blockMask = createBlockMask(mask, c.t, S, c.block, { qOffset: prefix });
  const opts = { blockMask, sinks, gqa: true };
  const ref = eagerAttention(q, k, v, opts);
  const refG = ref.backward(dO);
  let got: { o: FloatArray; lse: FloatArray; dq: FloatArray; dk: FloatArray; dv: FloatArray; dsinks: FloatArray | null };
  if (f32) {
    const out = impl(toF32(q), toF32(k), toF32(v), { blockMask, sinks: sinks && Float32Array.from(sinks), gqa: true });
    const g = out.backward(toF32(dO));
    got = { o: out.o.data, lse: out.lse, dq: g.dq.data, dk: g.dk.data, dv: g.dv.data, dsinks: g.dsinks };
  } else {
    const out = impl(q, k, v, opts);
    const g = out.backward(dO);
    got = { o: out.o.data, lse: out.lse, dq: g.dq.data, dk: g.dk.data, dv: g.dv.data, dsinks: g.dsinks };
  }
  return {
    o: relErr(got.o, ref.o.data, 1), lse: relErr(got.lse, ref.lse, 1), dq: relErr(got.dq, refG.dq.data, 1),
    dk: relErr(got.dk, refG.dk.data, 1), dv: relErr(got.dv, refG.dv.data, 1),
    dsinks: refG.dsinks ? relErr(got.dsinks!, refG.dsinks, 1) : (got.dsinks === null ? 0 : Infinity),
  };
}

export function worst(e: CaseErrors): number {
  return Math.max(e.o, e.lse, e.dq, e.dk, e.dv, e.dsinks);
}
