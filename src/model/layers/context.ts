/**
 * What every layer needs besides its parameters: the kernel backend and which attention implementation to call.
 * 'wasm' = engine Wasm kernels + src/attention's `flexAttention`; 'reference' = the engine's float64-accumulating
 * TypeScript backend + src/attention's `blockwiseAttention` (the oracle for gradient checks).
 */
import type { Backend } from '../../engine/index.ts';

export type Impl = 'wasm' | 'reference';

/**
 * The attention algorithm on the 'wasm' path: 'flex' (blockwise, O(T) memory) or 'eager' (every [heads, T, T]
 * score/probability matrix materialised, as Hugging Face's eager gpt-oss path; the baseline for ablations; band
 * masks only, i.e. causal or sliding window without packed documents).
 */
export type AttentionKind = 'flex' | 'eager';

export interface LayerContext {
  readonly backend: Backend;
  readonly impl: Impl;
  readonly attention: AttentionKind;
  /** Tile size for attention block masks. */
  readonly attnBlock: number;
}

/** Accounting tags used by the model (memory reports group by them). */
export const TAG = {
  params: 'model.params',
  grads: 'model.grads',
  act: 'model.act',
  temp: 'model.temp',
  logits: 'model.logits',
  lora: 'model.lora',
  kv: 'model.kvcache',
} as const;
