/**
 * Sampling one token from a logits row.
 * - temperature 0: greedy (argmax, ties → lowest id); the reported log-prob is log softmax(logits)[token].
 * - temperature τ > 0: z = logits / τ; top-k keeps the k largest z, then top-p keeps the smallest prefix of the
 *   remaining tokens (by descending probability) whose mass reaches p; sample from the renormalised rest.
 *   The reported log-prob is log softmax(z)[token] over the FULL vocabulary (temperature-scaled, not truncated by
 *   top-k/top-p), which is what a trainer recomputing log-probs at temperature τ obtains.
 */
import type { Mulberry32Rng } from '../engine/index.ts';

export interface SamplingOptions {
  temperature?: number;
  topK?: number;
  topP?: number;
}

export function validateSampling(o: SamplingOptions): void {
  const t = o.temperature ?? 1;
  if (!(t >= 0) || !Number.isFinite(t)) throw new RangeError(`temperature must be ≥ 0, got ${t}`);
  if (o.topK !== undefined && !(Number.isInteger(o.topK) && o.topK >= 1)) throw new RangeError(`topK must be a positive integer, got ${o.topK}`);
  if (o.topP !== undefined && !(o.topP > 0 && o.topP <= 1)) throw new RangeError(`topP must be in (0, 1], got ${o.topP}`);
}

export function sampleToken(logits: Float32Array, o: SamplingOptions, rng: Mulberry32Rng): { token: number; logprob: number } {
  const V = logits.length, t = o.temperature ?? 1;
  const inv = t > 0 ? 1 / t : 1;
  let m = -Infinity, arg = 0;
  for (let i = 0; i < V; i++) if (logits[i] > m) { m = logits[i]; arg = i; }
  const e = new Float64Array(V);
  let z = 0;
  for (let i = 0; i < V; i++) { e[i] = Math.exp((logits[i] - m) * inv); z += e[i]; }
  const logZ = Math.log(z);
  const lp = (i: number) => (logits[i] - m) * inv - logZ;
  if (t === 0) return { token: arg, logprob: lp(arg) };
  const useK = o.topK !== undefined && o.topK < V, useP = o.topP !== undefined && o.topP < 1;
  if (!useK && !useP) {
    let u = rng.next() * z;
    for (let i = 0; i < V; i++) { u -= e[i]; if (u <= 0) return { token: i, logprob: lp(i) }; }
    return { token: arg, logprob: lp(arg) };
  }
  let cand = Array.from({ length: V }, (_, i) => i).sort((a, b) => e[b] - e[a] || a - b);
  if (useK) cand = cand.slice(0, o.topK);
  if (useP) {
    let mass = 0, keep = 0;
    for (const i of cand) { mass += e[i] / z; keep++; if (mass >= o.topP!) break; }
    cand = cand.slice(0, keep);
  }
  let total = 0;
  for (const i of cand) total += e[i];
  let u = rng.next() * total;
  for (const i of cand) { u -= e[i]; if (u <= 0) return { token: i, logprob: lp(i) }; }
  const last = cand[cand.length - 1];
  return { token: last, logprob: lp(last) };
}
