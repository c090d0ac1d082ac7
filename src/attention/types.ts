/**
 * Shared types of the attention module.
 *
 * Layout (batch 1; pack several sequences with a document mask):
 * - q, o, dO, dQ: [Hq, T, d] row-major
 * - k, v, dK, dV: [Hkv, S, d] row-major; query head h reads kv head floor(h / (Hq / Hkv))
 * - sinks, dSinks: [Hq] (natural-log logits, not multiplied by the scale)
 * - lse: [Hq, T], the log-sum-exp INCLUDING the sink (−Infinity only for a row with no keys and no sink)
 */
import type { BlockMask } from './block-mask.ts';

export type FloatArray = Float32Array | Float64Array;

/** A dense [heads, length, dim] tensor. */
export interface HeadTensor<A extends FloatArray = FloatArray> {
  readonly data: A;
  readonly shape: readonly number[];
}

export interface AttentionOptions {
  readonly blockMask: BlockMask;
  /** One sink logit per query head; null / undefined = no sink (plain softmax attention). */
  readonly sinks?: FloatArray | null;
  /** Softmax scale applied to q·k only; default 1/sqrt(d). */
  readonly scale?: number;
  /** Must be true when Hq ≠ Hkv (grouped-query attention); there is no silent broadcasting. */
  readonly gqa?: boolean;
  /** Reject NaN / ±Infinity in q, k, v, sinks (default true). When false, non-finite inputs propagate. */
  readonly checkFinite?: boolean;
}

export interface AttentionShape {
  readonly hq: number;
  readonly hkv: number;
  readonly t: number;
  readonly s: number;
  readonly d: number;
  /** GQA group size Hq / Hkv. */
  readonly group: number;
  readonly scale: number;
}

export interface AttentionResult<A extends FloatArray = FloatArray> {
  readonly o: HeadTensor<A>;
  readonly lse: A;
}

export interface AttentionGrads<A extends FloatArray = FloatArray> {
  readonly dq: HeadTensor<A>;
  readonly dk: HeadTensor<A>;
  readonly dv: HeadTensor<A>;
  /** null when the forward had no sinks. */
  readonly dsinks: A | null;
}

/** A forward result that can run its own backward. */
export interface AttentionOutput<A extends FloatArray = FloatArray> extends AttentionResult<A> {
  backward(dO: HeadTensor<A>): AttentionGrads<A>;
}

export type AttentionFn = <A extends FloatArray>(
  q: HeadTensor<A>, k: HeadTensor<A>, v: HeadTensor<A>, options: AttentionOptions) => AttentionOutput<A>;
