/**
 * Typed access to the global `WebAssembly` object. The project's TypeScript config has no DOM lib, so the
 * WebAssembly types are not declared; this file declares the small part the engine uses, without adding globals.
 */
export interface WasmMemory {
  readonly buffer: SharedArrayBuffer | ArrayBuffer;
  grow(pages: number): number;
}

/** An opaque compiled module (postable to workers). */
export interface WasmModule {
  readonly __wasmModule?: never;
}

export interface WasmInstance {
  readonly exports: Record<string, unknown>;
}

interface WasmApi {
  validate(bytes: Uint8Array): boolean;
  Module: new (bytes: Uint8Array) => WasmModule;
  Instance: new (module: WasmModule, imports: Record<string, Record<string, unknown>>) => WasmInstance;
  Memory: new (descriptor: { initial: number; maximum: number; shared: boolean }) => WasmMemory;
}

export const wasmApi = (globalThis as unknown as { WebAssembly: WasmApi }).WebAssembly;
