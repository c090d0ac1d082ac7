/** Shared bits for the checkpoint tests: temp dirs, a seeded generator, raw safetensors files. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export function tempDir(label: string): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(join(tmpdir(), `longrun-${label}-`));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** mulberry32: small, seeded, good enough for test data. */
export function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

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
