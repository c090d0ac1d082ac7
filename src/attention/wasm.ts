/**
 * The fast path: sink-aware blockwise attention on engine tensors, run by the Wasm SIMD kernels of
 * assembly/attention.ts on the engine's thread pool. Inputs must live in Wasm memory (Tensor storage 'wasm').
 * Every buffer is an engine allocation, so memory accounting sees all of it:
 *   attn.out / attn.lse (forward results), attn.grad (dQ, dK, dV), attn.stats (sinks copy, D, dSinks),
 *   attn.blockmask, attn.scratch (per-thread tiles, and Kᵀ tile by tile, ≈ the size of K, during the forward).
 * Forward keeps nothing beyond O and the LSE; the backward needs q, k, v, O, LSE and dO.
 */
import { Tensor } from '../engine/tensor.ts';
import { getRuntime } from '../engine/runtime.ts';
import type { WasmRuntime } from '../engine/runtime.ts';
import { expectShape, validateAttention } from './validate.ts';
import { DESC_SLOTS, F, uploadBlockMask } from './wasm-layout.ts';
import type { AttentionOptions, AttentionShape, HeadTensor } from './types.ts';

export interface FlexWasmOptions extends Omit<AttentionOptions, 'sinks'> {
  readonly sinks?: Float32Array | Float64Array | null;
}

export interface FlexWasmGrads {
  readonly dq: Tensor;
  readonly dk: Tensor;
  readonly dv: Tensor;
  readonly dsinks: Float32Array | null;
}

export interface FlexWasmOutput {
  readonly o: Tensor;
  /** [Hq, T] sink-inclusive log-sum-exp. */
  readonly lse: Tensor;
  backward(dO: Tensor): FlexWasmGrads;
  /** Frees O and the LSE. */
  dispose(): void;
}

function view(name: string, t: Tensor): HeadTensor<Float32Array> {
  if (t.storageKind !== 'wasm') throw new Error(`flexAttention: ${name} must live in Wasm memory (Tensor storage 'wasm')`);
  return { data: t.data(), shape: t.shape };
}

/** Runs fn with a descriptor, the uploaded block mask and per-thread scratch; frees them afterwards. */
function withDescriptor(rt: WasmRuntime, sh: AttentionShape, options: FlexWasmOptions, sinksPtr: number, fn: (desc: Int32Array, descPtr: number, backwardPhases: number) => void): void {
  const bm = options.blockMask;
  const mask = uploadBlockMask(rt, bm);
  const per = Number(rt.exports.attnScratchBytes(bm.qBlock, bm.kvBlock, sh.d));
  const scratchPer = Math.ceil(per / 64) * 64;
  const scratch = rt.alloc(scratchPer * rt.threads, 64, 'attn.scratch');
  const descPtr = rt.alloc(DESC_SLOTS * 4, 16, 'attn.scratch');
  try {
    const desc = rt.i32(descPtr, DESC_SLOTS);
    desc.fill(0);
    desc[F.HQ] = sh.hq; desc[F.HKV] = sh.hkv; desc[F.T] = sh.t; desc[F.S] = sh.s; desc[F.D] = sh.d;
    new Float32Array(desc.buffer, desc.byteOffset, DESC_SLOTS)[F.SCALE] = sh.scale;
    desc[F.SINKS] = sinksPtr;
    desc[F.SCRATCH] = scratch; desc[F.SCRATCH_PER] = scratchPer;
    desc[F.COUNTER] = rt.workCounter; // zeroed by `parallel` before each job
    mask.fill(desc);
    fn(desc, descPtr, mask.backwardPhases);
  } finally {
    rt.free(descPtr);
    rt.free(scratch);
    mask.free();
  }
}

/** Sink-aware flex attention forward on the Wasm kernels; `.backward(dO)` runs the FA-2 style backward. */
export function flexAttention(q: Tensor, k: Tensor, v: Tensor, options: FlexWasmOptions): FlexWasmOutput {
  const rt = getRuntime();
  const sh = validateAttention(view('q', q), view('k', k), view('v', v), options as AttentionOptions);
  if (sh.d % 8 !== 0) throw new RangeError(`flexAttention (wasm): head dim ${sh.d} must be a multiple of 8; use blockwiseAttention for other sizes`);
  const o = Tensor.empty([sh.hq, sh.t, sh.d], { tag: 'attn.out' });
  const lse = Tensor.empty([sh.hq, sh.t], { tag: 'attn.lse' });
  const sinksIn = options.sinks ?? null;
  const sinks = sinksIn ? Tensor.from(sinksIn, [sh.hq], { tag: 'attn.stats' }) : null;
  const sinksPtr = sinks ? sinks.ptr : 0;
  withDescriptor(rt, sh, options, sinksPtr, (desc, descPtr) => {
    desc[F.Q] = q.ptr; desc[F.K] = k.ptr; desc[F.V] = v.ptr; desc[F.O] = o.ptr; desc[F.LSE] = lse.ptr;
    // Kᵀ of every kv head, written once and read by every query tile (tile by tile, zero-padded to a multiple of 8 keys)
    const kt = rt.alloc(sh.hkv * options.blockMask.numKvTiles * sh.d * (Math.ceil(options.blockMask.kvBlock / 8) * 8) * 4, 64, 'attn.scratch');
    try {
      desc[F.KT] = kt;
      rt.parallel('attnTransposeK', [descPtr]);
      rt.parallel('attnForward', [descPtr]);
    } finally {
      rt.free(kt);
    }
  });
  let disposed = false;
  return {
    o, lse,
    backward(dO: Tensor): FlexWasmGrads {
      if (disposed) throw new Error('flexAttention: backward after dispose()');
      expectShape('dO', view('dO', dO), [sh.hq, sh.t, sh.d]);
      const dq = Tensor.empty([sh.hq, sh.t, sh.d], { tag: 'attn.grad' });
      const dk = Tensor.empty([sh.hkv, sh.s, sh.d], { tag: 'attn.grad' });
      const dv = Tensor.empty([sh.hkv, sh.s, sh.d], { tag: 'attn.grad' });
      const D = Tensor.empty([sh.hq, sh.t], { tag: 'attn.stats' });
      const dsinksT = sinks ? Tensor.empty([sh.hq], { tag: 'attn.stats' }) : null;
      try {
        withDescriptor(rt, sh, options, sinksPtr, (desc, descPtr, phases) => {
          desc[F.Q] = q.ptr; desc[F.K] = k.ptr; desc[F.V] = v.ptr; desc[F.O] = o.ptr; desc[F.LSE] = lse.ptr;
          desc[F.DO] = dO.ptr; desc[F.DQ] = dq.ptr; desc[F.DK] = dk.ptr; desc[F.DV] = dv.ptr; desc[F.DD] = D.ptr;
          desc[F.DSINKS] = dsinksT ? dsinksT.ptr : 0;
          rt.parallel('attnBackwardPre', [descPtr]);
          for (let phase = 0; phase < phases; phase++) rt.parallel('attnBackward', [descPtr, phase]);
        });
        return { dq, dk, dv, dsinks: dsinksT ? dsinksT.toArray() : null };
      } finally {
        D.dispose();
        dsinksT?.dispose();
      }
    },
    dispose() {
      if (disposed) return;
      disposed = true;
      o.dispose();
      lse.dispose();
      sinks?.dispose();
    },
  };
}
