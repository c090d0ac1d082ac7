/**
 * gpt-oss mixture of experts on N tokens.
 *   logits = xn Wrᵀ + br [N, E]; per token the top-k logits (ties → lower expert index) and
 *   w = softmax over those k logits only; y[n] = Σ_j w_nj · expert_{e_nj}(xn[n]).
 * Backward: dw_nj = dy[n]·expert_{e_nj}(xn[n]); through the k-way softmax dlogit_e = w_j(dw_j − Σ_j' w_j' dw_j')
 * for the chosen experts and 0 elsewhere (top-k selection itself is piecewise constant); then the router linear.
 * The experts run grouped: the N·k (token, expert) pairs are sorted by expert and gathered into [N·k, C], and a
 * grouped matmul applies each expert's slice of the stacked weights to its rows (no copies, no padding).
 */
import { Tensor } from '../../engine/index.ts';
import { TAG, type LayerContext } from './context.ts';
import { disposeExpertSaved, expertBackward, expertForward, type ExpertLora, type ExpertSaved, type ExpertTensors } from './expert.ts';
import { disposeLinearSaved, linearBackward, linearForward, type LinearParams, type LinearSaved } from './linear.ts';

export interface MoeParams {
  router: LinearParams;
  /** Stacked: w1 [E, C, 2I], b1 [E, 2I], w2 [E, I, C], b2 [E, C]. */
  experts: ExpertTensors;
  grad?: Partial<ExpertTensors>;
  lora?: ExpertLora;
}

export interface Routing {
  /** [N, k] chosen experts and their weights. */
  experts: Int32Array;
  weights: Float32Array;
  k: number;
}

export interface MoeSaved {
  xn: Tensor;
  routerSaved: LinearSaved;
  routing: Routing;
  useLora: boolean;
  /** Grouped layout: rows offsets[e] … offsets[e+1] hold expert e's tokens (`ids`) and routing slots n·k + j. */
  offsets: Int32Array;
  ids: Int32Array;
  slots: Int32Array;
  expert: ExpertSaved;
  /** Expert outputs [N·k, C] in the grouped layout, for the routing-weight gradient. */
  y: Tensor;
}

/** Top-k of each row of logits [N, E] and the softmax over the chosen k. */
export function route(logits: Float32Array, N: number, E: number, k: number): Routing {
  const experts = new Int32Array(N * k), weights = new Float32Array(N * k);
  const chosen = new Uint8Array(E);
  for (let n = 0; n < N; n++) {
    chosen.fill(0);
    const row = n * E;
    for (let j = 0; j < k; j++) {
      let best = -1;
      for (let e = 0; e < E; e++) if (!chosen[e] && (best < 0 || logits[row + e] > logits[row + best])) best = e;
      if (!Number.isFinite(logits[row + best])) throw new Error(`MoE router: token ${n} has a non-finite logit (${logits[row + best]}); check the inputs and weights`);
      chosen[best] = 1;
      experts[n * k + j] = best;
    }
    const m = logits[row + experts[n * k]];
    let z = 0;
    for (let j = 0; j < k; j++) z += Math.exp(logits[row + experts[n * k + j]] - m);
    for (let j = 0; j < k; j++) weights[n * k + j] = Math.exp(logits[row + experts[n * k + j]] - m) / z;
  }
  return { experts, weights, k };
}

/** Sorts the routed (token, slot) pairs by expert (stable in token order). */
function group(routing: Routing, N: number, E: number): { offsets: Int32Array; ids: Int32Array; slots: Int32Array } {
  const k = routing.k, offsets = new Int32Array(E + 1);
  for (const e of routing.experts) offsets[e + 1]++;
  for (let e = 0; e < E; e++) offsets[e + 1] += offsets[e];
  const ids = new Int32Array(N * k), slots = new Int32Array(N * k), fill = offsets.slice(0, E);
  for (let i = 0; i < N * k; i++) {
    const pos = fill[routing.experts[i]]++;
    ids[pos] = Math.floor(i / k);
    slots[pos] = i;
  }
  return { offsets, ids, slots };
}

export function moeForward(ctx: LayerContext, p: MoeParams, xn: Tensor, k: number, limit: number, useLora: boolean): { y: Tensor; saved: MoeSaved } {
  const N = xn.shape[0], C = xn.shape[1], E = p.experts.w1.shape[0];
  const r = linearForward(ctx, p.router, xn, useLora);
  const routing = route(r.y.data(), N, E, k);
  r.y.dispose();
  const { offsets, ids, slots } = group(routing, N, E);
  const xg = ctx.backend.gatherRows(xn, ids, { tag: TAG.temp });
  const ex = expertForward(ctx, p.experts, xg, offsets, limit, useLora ? p.lora : undefined);
  xg.dispose();
  const out = Tensor.zeros([N, C], { tag: TAG.act });
  const od = out.data(), yd = ex.y.data();
  for (let pos = 0; pos < ids.length; pos++) {
    const slot = slots[pos];
    const wt = routing.weights[slot], dst = ids[pos] * C, src = pos * C;
    for (let j = 0; j < C; j++) od[dst + j] += wt * yd[src + j];
  }
  return { y: out, saved: { xn, routerSaved: r.saved, routing, useLora, offsets, ids, slots, expert: ex.saved, y: ex.y } };
}

export function moeBackward(ctx: LayerContext, p: MoeParams, s: MoeSaved, dy: Tensor, limit: number): Tensor {
  const be = ctx.backend, N = s.xn.shape[0], C = s.xn.shape[1], E = p.experts.w1.shape[0];
  const { k, weights, experts } = s.routing, { offsets, ids, slots } = s;
  const dyg = Tensor.empty([ids.length, C], { tag: TAG.temp });
  const dw = new Float64Array(N * k);
  const dyd = dy.data(), dd = dyg.data(), yd = s.y.data();
  for (let pos = 0; pos < ids.length; pos++) {
    const slot = slots[pos];
    const wt = weights[slot], src = ids[pos] * C, row = pos * C;
    let dot = 0;
    for (let j = 0; j < C; j++) { dd[row + j] = wt * dyd[src + j]; dot += dyd[src + j] * yd[row + j]; }
    dw[slot] = dot;
  }
  const xg = be.gatherRows(s.xn, ids, { tag: TAG.temp });
  const dxg = expertBackward(ctx, p.experts, p.grad ?? {}, xg, offsets, s.expert, dyg, limit, s.useLora ? p.lora : undefined);
  xg.dispose(); dyg.dispose();
  const dxn = Tensor.zeros([N, C], { tag: TAG.act });
  be.scatterAddRows(dxn, ids, dxg);
  dxg.dispose();
  const dlogits = Tensor.zeros([N, E], { tag: TAG.temp });
  const dl = dlogits.data();
  for (let n = 0; n < N; n++) {
    let sum = 0;
    for (let j = 0; j < k; j++) sum += weights[n * k + j] * dw[n * k + j];
    for (let j = 0; j < k; j++) dl[n * E + experts[n * k + j]] = weights[n * k + j] * (dw[n * k + j] - sum);
  }
  linearBackward(ctx, p.router, s.xn, s.routerSaved, dlogits, dxn);
  dlogits.dispose();
  return dxn;
}

export function disposeMoeSaved(s: MoeSaved): void {
  disposeLinearSaved(s.routerSaved);
  disposeExpertSaved(s.expert);
  s.y.dispose();
}
