/**
 * What every layer needs besides its parameters: the kernel backend and which attention implementation to call.
 * 'wasm' = engine Wasm kernels + src/attention's `flexAttention`; 'reference' = the engine's float64-accumulating
 * TypeScript backend + src/attention's `blockwiseAttention` (the oracle for gradient checks).
 */
import type { Backend } from '../../engine/index.ts';

export type Impl = 'wasm' | 'reference';

export interface LayerContext {
  readonly backend: Backend;
  readonly impl: Impl;
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
