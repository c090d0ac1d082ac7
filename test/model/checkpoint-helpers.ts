/** Shared bits for the checkpoint tests: temp dirs, a seeded generator, raw safetensors files. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mulberry32 } from '../../src/engine/random.ts';

export function tempDir(label: string): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `longrun-${label}-`));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A seeded uniform stream in [0, 1) (the engine's mulberry32), so every "random" test input is reproducible. */
export const rng = mulberry32;

export function randomF32(n: number, seed: number, scale = 1): Float32Array {
  const r = rng(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = (r() * 2 - 1) * scale;
  return out;
}

/** Writes a safetensors file by hand: 8-byte length, the given header text (unpadded), then `data`. */
export function writeRawSafetensors(path: string, header: string | object, data: Uint8Array, headerLength?: number): void {
  const text = new TextEncoder().encode(typeof header === 'string' ? header : JSON.stringify(header));
  const out = new Uint8Array(8 + text.byteLength + data.byteLength);
  new DataView(out.buffer).setBigUint64(0, BigInt(headerLength ?? text.byteLength), true);
  out.set(text, 8);
  out.set(data, 8 + text.byteLength);
  writeFileSync(path, out);
}
