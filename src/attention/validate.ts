/** Input checks shared by every attention implementation: shapes, GQA grouping, finiteness. */
import type { AttentionOptions, AttentionShape, FloatArray, HeadTensor } from './types.ts';

function dims(name: string, t: HeadTensor): [number, number, number] {
  if (t.shape.length !== 3) throw new RangeError(`attention: ${name} must have shape [heads, length, dim], got [${t.shape.join(', ')}]`);
  const [a, b, c] = t.shape;
  for (const x of t.shape) if (!Number.isInteger(x) || x < 0) throw new RangeError(`attention: ${name} has a bad dimension in [${t.shape.join(', ')}]`);
  if (t.data.length !== a * b * c) throw new RangeError(`attention: ${name} data has ${t.data.length} elements but shape [${t.shape.join(', ')}] needs ${a * b * c}`);
  return [a, b, c];
}

function checkFiniteArray(name: string, a: FloatArray): void {
  for (let i = 0; i < a.length; i++) {
    if (!Number.isFinite(a[i])) throw new RangeError(`attention: ${name}[${i}] is ${a[i]}; inputs must be finite (pass checkFinite: false to let NaN/Inf propagate)`);
  }
}

export function sameType(name: string, a: FloatArray, ref: FloatArray): void {
  if (a.constructor !== ref.constructor) throw new TypeError(`attention: ${name} is a ${a.constructor.name} but q is a ${ref.constructor.name}; use one dtype`);
}

/** Validates q, k, v and options; returns the shape summary. */
export function validateAttention(q: HeadTensor, k: HeadTensor, v: HeadTensor, options: AttentionOptions): AttentionShape {
  const [hq, t, d] = dims('q', q);
  const [hkv, s, dk] = dims('k', k);
  const [hv, sv, dv] = dims('v', v);
  if (hv !== hkv || sv !== s || dv !== dk) throw new RangeError(`attention: v shape [${v.shape.join(', ')}] must equal k shape [${k.shape.join(', ')}]`);
  if (dk !== d) throw new RangeError(`attention: q head dim ${d} differs from k head dim ${dk}`);
  if (hkv === 0 || hq === 0) throw new RangeError('attention: head counts must be positive');
  if (hq % hkv !== 0) throw new RangeError(`attention: Hq = ${hq} is not divisible by Hkv = ${hkv}`);
  if (hq !== hkv && !options.gqa) throw new RangeError(`attention: Hq = ${hq} ≠ Hkv = ${hkv}; pass gqa: true for grouped-query attention (no silent broadcasting)`);
  sameType('k', k.data, q.data);
  sameType('v', v.data, q.data);
  const bm = options.blockMask;
  if (!bm) throw new RangeError('attention: options.blockMask is required (createBlockMask)');
  if (bm.qLen !== t || bm.kvLen !== s) throw new RangeError(`attention: block mask is for ${bm.qLen} queries × ${bm.kvLen} keys but q has ${t} and k has ${s}`);
  const sinks = options.sinks ?? null;
  if (sinks && sinks.length !== hq) throw new RangeError(`attention: sinks has ${sinks.length} entries, expected one per query head (${hq})`);
  const scale = options.scale ?? 1 / Math.sqrt(d);
  if (!Number.isFinite(scale)) throw new RangeError(`attention: scale must be finite, got ${scale}`);
  if (options.checkFinite ?? true) {
    checkFiniteArray('q', q.data);
    checkFiniteArray('k', k.data);
    checkFiniteArray('v', v.data);
  }
  if (sinks) checkFiniteArray('sinks', sinks);
  return { hq, hkv, t, s, d, group: hq / hkv, scale };
}

/** Checks that a gradient / saved tensor has the given shape. */
export function expectShape(name: string, x: HeadTensor, shape: readonly number[]): void {
  const got = dims(name, x);
  if (got.some((g, i) => g !== shape[i])) throw new RangeError(`attention: ${name} has shape [${got.join(', ')}], expected [${shape.join(', ')}]`);
}

/** A new array of q's dtype. */
export function like<A extends FloatArray>(ref: A, length: number): A {
  return (ref instanceof Float64Array ? new Float64Array(length) : new Float32Array(length)) as A;
}
