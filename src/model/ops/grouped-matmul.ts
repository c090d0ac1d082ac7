/**
 * Grouped matmul for MoE experts (a "grouped GEMM"): for every expert e, C_e (+)= alpha·op(A_e)·op(B_e), where an
 * operand is either a row range of a 2-D tensor ('rows': rows offsets[e] … offsets[e+1] of a [R, X] tensor; the
 * tokens routed to expert e, gathered contiguously) or one matrix of a stacked 3-D tensor ('stack': t[e] of
 * [E, P, Q]; the expert's weights). No copies and no padding.
 *
 * The 'wasm' implementation calls the engine's `matmul` kernel on offset pointers through the runtime's public
 * `run` contract (same argument list as src/engine/wasm-backend.ts uses). The 'reference' implementation copies
 * each group into temporary tensors and calls the reference backend (float64 accumulation) — for tests.
 */
import { getRuntime, PARALLEL_THRESHOLDS, Tensor } from '../../engine/index.ts';
import { TAG, type LayerContext } from '../layers/context.ts';

export interface GroupOperand {
  t: Tensor;
  kind: 'rows' | 'stack';
}

export interface GroupedMatmulOptions {
  transA?: boolean;
  transB?: boolean;
  accumulate?: boolean;
  alpha?: number;
}

interface Slice {
  /** element offset into the tensor */
  offset: number;
  rows: number;
  cols: number;
}

function slice(op: GroupOperand, offsets: Int32Array, e: number, name: string): Slice {
  const s = op.t.shape;
  if (op.kind === 'rows') {
    if (s.length !== 2) throw new Error(`groupedMatmul: ${name} ('rows') must be 2-D, got [${s.join(', ')}]`);
    return { offset: offsets[e] * s[1], rows: offsets[e + 1] - offsets[e], cols: s[1] };
  }
  if (s.length !== 3 || s[0] !== offsets.length - 1) throw new Error(`groupedMatmul: ${name} ('stack') must be [${offsets.length - 1}, P, Q], got [${s.join(', ')}]`);
  return { offset: e * s[1] * s[2], rows: s[1], cols: s[2] };
}

export function groupedMatmul(ctx: LayerContext, a: GroupOperand, b: GroupOperand, out: GroupOperand, offsets: Int32Array, o: GroupedMatmulOptions = {}): void {
  const E = offsets.length - 1;
  const rt = ctx.impl === 'wasm' ? getRuntime() : null;
  for (let e = 0; e < E; e++) {
    const sa = slice(a, offsets, e, 'a'), sb = slice(b, offsets, e, 'b'), sc = slice(out, offsets, e, 'out');
    const M = o.transA ? sa.cols : sa.rows, K = o.transA ? sa.rows : sa.cols;
    const Kb = o.transB ? sb.cols : sb.rows, N = o.transB ? sb.rows : sb.cols;
    if (K !== Kb || sc.rows !== M || sc.cols !== N) {
      throw new Error(`groupedMatmul: group ${e}: op(a) ${M}×${K}, op(b) ${Kb}×${N}, out ${sc.rows}×${sc.cols} do not fit`);
    }
    if (M === 0 || N === 0) continue;
    if (K === 0) {
      if (!o.accumulate) out.t.data().fill(0, sc.offset, sc.offset + M * N);
      continue;
    }
    if (rt) {
      rt.run('matmul', [
        a.t.ptr + 4 * sa.offset, b.t.ptr + 4 * sb.offset, out.t.ptr + 4 * sc.offset, 1, M, N, K, 0, 0, 0,
        o.transA ? 1 : 0, o.transB ? 1 : 0, o.alpha ?? 1, o.accumulate ? 1 : 0, rt.matmulScratch, rt.workCounter,
      ], 2 * M * N * K, PARALLEL_THRESHOLDS.matmulFlops);
      continue;
    }
    const part = (t: Tensor, s: Slice) => Tensor.from(t.data().subarray(s.offset, s.offset + s.rows * s.cols), [s.rows, s.cols], { tag: TAG.temp });
    const ta = part(a.t, sa), tb = part(b.t, sb), tc = part(out.t, sc);
    ctx.backend.matmul(ta, tb, { transA: o.transA, transB: o.transB, accumulate: o.accumulate, alpha: o.alpha, out: tc });
    out.t.data().set(tc.data(), sc.offset);
    ta.dispose(); tb.dispose(); tc.dispose();
  }
}
