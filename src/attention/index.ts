/**
 * Sink-aware attention for gpt-oss-style models (learned per-head sink logits), FlexAttention style:
 * - masks.ts: mask functions (causal, sliding window of W keys including self, document packing, and/or)
 * - block-mask.ts: per query tile the full and partial kv tiles (analytic for the standard masks)
 * - wasm.ts: `flexAttention` on engine tensors, the Wasm SIMD fast path (forward + backward, O(T) memory)
 * - blockwise.ts: the same blockwise algorithm in plain TypeScript (float64 statistics; the reference)
 * - eager.ts: materialised form-A attention (float64 = the test oracle); eager-wasm.ts: the benchmark baseline
 * - decode.ts: decode / chunked prefill against a KV cache
 * Layouts and semantics: types.ts and ../shared/notes/sinks.md.
 */
export * from './masks.ts';
export * from './block-mask.ts';
export type * from './types.ts';
export { blockwiseAttention, blockwiseBackward, blockwiseForward } from './blockwise.ts';
export { eagerAttention, type EagerOptions, type MaterialiseHooks } from './eager.ts';
export { eagerAttentionWasm, EagerBudgetError, type EagerWasmOptions, type EagerWasmOutput } from './eager-wasm.ts';
export { flexAttention, type FlexWasmGrads, type FlexWasmOptions, type FlexWasmOutput } from './wasm.ts';
export { wasmAttention, wasmForward } from './wasm-arrays.ts';
export { decodeAttention, lookback, type DecodeOptions } from './decode.ts';
