// Entry point of the Wasm build: every kernel module is re-exported here. Multi-threaded kernels take
// (tid, nthreads, ...) first; the JS runtime (src/engine/runtime.ts) runs them on its thread pool.
export * from './runtime';
export * from './matmul';
export * from './elementwise';
export * from './activation';
export * from './reduce';
export * from './softmax';
export * from './norm';
export * from './adamw';
export * from './rows';
export * from './attention';
export * from './decode';
