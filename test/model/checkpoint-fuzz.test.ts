/** Damaged files (random truncation, random byte changes) must fail with a CheckpointError, never anything else. */
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { CheckpointError, readGguf, readGgufTensor, readSafetensors, writeGguf, writeSafetensors } from '../../src/model/checkpoint/index.ts';
import { randomF32, rng, tempDir } from './checkpoint-helpers.ts';

const tmp = tempDir('fuzz');
after(tmp.cleanup);

function damage(original: Buffer, seed: number, headerBytes: number): Buffer {
  const r = rng(seed);
  if (seed % 3 === 0) return original.subarray(0, Math.floor(r() * original.length));
  const copy = Buffer.from(original);
  const flips = 1 + Math.floor(r() * 4);
  for (let i = 0; i < flips; i++) copy[Math.floor(r() * Math.min(headerBytes, copy.length))] = Math.floor(r() * 256);
  return copy;
}

function expectCleanOutcome(fn: () => unknown, label: string): 'ok' | 'rejected' {
  try {
    fn();
    return 'ok';
  } catch (error) {
    assert.ok(error instanceof CheckpointError, `${label}: ${error instanceof Error ? `${error.name}: ${error.message}` : String(error)}`);
    return 'rejected';
  }
}

describe('damaged files', () => {
  it('safetensors: 300 random truncations and header corruptions all end in success or a CheckpointError', () => {
    const good = join(tmp.dir, 'good.safetensors');
    writeSafetensors(good, new Map([
      ['a', { dtype: 'F32' as const, shape: [4, 4], data: randomF32(16, 1) }],
      ['b', { dtype: 'BF16' as const, shape: [3], data: Uint16Array.of(1, 2, 3) }],
      ['c', { dtype: 'I64' as const, shape: [2], data: BigInt64Array.of(1n, 2n) }],
    ]), { note: 'x' });
    const bytes = readFileSync(good);
    const headerBytes = 8 + Number(bytes.readBigUInt64LE(0));
    const bad = join(tmp.dir, 'bad.safetensors');
    let rejected = 0;
    for (let seed = 1; seed <= 300; seed++) {
      writeFileSync(bad, damage(bytes, seed, headerBytes));
      if (expectCleanOutcome(() => readSafetensors(bad), `seed ${seed}`) === 'rejected') rejected++;
    }
    assert.ok(rejected > 200, `only ${rejected} of 300 damaged files were rejected`);
  });

  it('GGUF: 300 random truncations and header corruptions all end in success or a CheckpointError', () => {
    const good = join(tmp.dir, 'good.gguf');
    writeGguf(good, new Map([
      ['general.architecture', { type: 'string', value: 'x' }],
      ['a.list', { type: 'array', itemType: 'string', values: ['p', 'q', 'r'] }],
      ['a.n', { type: 'u32', value: 5 }],
    ]), [{ name: 't', shape: [2, 8], type: 'F32', data: randomF32(16, 2) }, { name: 'u', shape: [32], type: 'F16', data: randomF32(32, 3) }]);
    const bytes = readFileSync(good);
    const headerBytes = readGguf(good).dataStart;
    const bad = join(tmp.dir, 'bad.gguf');
    let rejected = 0;
    for (let seed = 1; seed <= 300; seed++) {
      writeFileSync(bad, damage(bytes, seed, headerBytes));
      const outcome = expectCleanOutcome(() => {
        const f = readGguf(bad);
        for (const t of f.tensors) if (t.type === 'F32' || t.type === 'F16' || t.type === 'BF16') readGgufTensor(f, t.name);
      }, `seed ${seed}`);
      if (outcome === 'rejected') rejected++;
    }
    assert.ok(rejected > 150, `only ${rejected} of 300 damaged files were rejected`);
  });
});
