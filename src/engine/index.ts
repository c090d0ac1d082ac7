/** The compute engine's public surface. See README.md in this folder for the runtime contract. */
export { FreeListAllocator, type AllocatorStats } from './allocator.ts';
export { AdamW, type AdamWOptions, type ParamWithGrad } from './adamw.ts';
export type {
  Backend, CrossEntropyResult, MatmulOptions, OutOptions, ReduceColsOptions, RmsNormBackwardOptions, RmsNormGrads, RmsNormOptions,
  RmsNormResult, SwigluGrads, SwigluOptions,
} from './backend.ts';
export { allFinite, checkFinite, clipGradNorm, globalNorm } from './grad-utils.ts';
export {
  beginMemoryScope, engineMemory, formatBytes, measureMemory, memoryReport, resetPeak, MemoryAccounting, type MemoryReport,
  type MemoryScope, type ScopeReport, type TagReport,
} from './memory.ts';
export { Mulberry32Rng, mulberry32 } from './random.ts';
export { referenceBackend } from './reference-backend.ts';
export { getRuntime, hasRuntime, initRuntime, shutdownRuntime, WasmRuntime, type KernelFunction, type RuntimeOptions } from './runtime.ts';
export { formatShape, shapeSize, type Shape } from './shape.ts';
export { disposeAll, keepTensor, Tensor, tensorScope, type StorageKind, type TensorOptions } from './tensor.ts';
export { PARALLEL_THRESHOLDS, wasmBackend } from './wasm-backend.ts';

import type { Backend } from './backend.ts';
import { referenceBackend } from './reference-backend.ts';
import { wasmBackend } from './wasm-backend.ts';

/** A backend by name: 'wasm' (default) or 'reference'. */
export function getBackend(name: 'wasm' | 'reference' = 'wasm'): Backend {
  if (name === 'wasm') return wasmBackend;
  if (name === 'reference') return referenceBackend;
  throw new Error(`unknown backend '${String(name)}' (use 'wasm' or 'reference')`);
}
