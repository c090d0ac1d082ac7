/**
 * Cross-checks against Python's reference libraries (`.ci/requirements-interop.txt`; CI installs them into a venv and
 * sets LONGRUN_PYTHON): the `safetensors` package reads what we write and we read what it writes; gguf-py's tensor
 * table for the gpt-oss architecture lists every tensor name we export. Without LONGRUN_PYTHON they are skipped
 * (with the reason) where python3 lacks the packages; with it, a missing package fails.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { presetConfig } from '../../src/model/config.ts';
import { paramShapes } from '../../src/model/params.ts';
import { exportGguf, readGguf, readSafetensors, writeSafetensors, type NamedTensor } from '../../src/model/checkpoint/index.ts';
import { assertPython, runPython as python, skipWithoutPython } from '../helpers/python.ts';
import { randomF32, tempDir } from './checkpoint-helpers.ts';

const tmp = tempDir('python-check');
after(tmp.cleanup);


describe('Python reference libraries', () => {
  it('safetensors (Python) reads our files and we read its files', { skip: skipWithoutPython(['numpy', 'safetensors.numpy']) }, () => {
    assertPython(['numpy', 'safetensors.numpy']);
    const ours = join(tmp.dir, 'ours.safetensors');
    const tensors = new Map<string, NamedTensor>([
      ['f32', { dtype: 'F32', shape: [2, 3], data: randomF32(6, 1) }],
      ['f64', { dtype: 'F64', shape: [3], data: Float64Array.of(1.5, -2, 1e-300) }],
      ['i64', { dtype: 'I64', shape: [2], data: BigInt64Array.of(-(2n ** 40n), 7n) }],
      ['u8', { dtype: 'U8', shape: [4], data: Uint8Array.of(0, 1, 254, 255) }],
      ['i32', { dtype: 'I32', shape: [1, 1], data: Int32Array.of(-5) }],
    ]);
    writeSafetensors(ours, tensors, { format: 'pt' });
    const seen = JSON.parse(python([
      'import sys, json', 'from safetensors.numpy import load_file', 'd = load_file(sys.argv[1])',
      'print(json.dumps({k: {"dtype": str(v.dtype), "shape": list(v.shape), "values": [str(x) for x in v.flatten().tolist()]} for k, v in d.items()}))',
    ].join('\n'), ours)) as Record<string, { dtype: string; shape: number[]; values: string[] }>;
    assert.deepEqual(Object.keys(seen).sort(), [...tensors.keys()].sort());
    for (const [name, t] of tensors) {
      assert.deepEqual(seen[name].shape, t.shape, name);
      const mine = Array.from(t.data as ArrayLike<number | bigint>, (v) => (typeof v === 'bigint' ? v.toString() : v));
      seen[name].values.forEach((v, i) => assert.equal(Number(v), Number(mine[i]), `${name}[${i}]`));
    }

    const theirs = join(tmp.dir, 'theirs.safetensors');
    python([
      'import sys, numpy as np', 'from safetensors.numpy import save_file',
      'save_file({"b": np.arange(6, dtype=np.float16).reshape(2, 3) / 4, "a": np.array([[1, -2]], dtype=np.int16), "z": np.zeros((0,), dtype=np.float32)}, sys.argv[1], metadata={"k": "v"})',
    ].join('\n'), theirs);
    const back = readSafetensors(theirs);
    assert.deepEqual(back.metadata, { k: 'v' });
    assert.deepEqual(back.tensors.get('a'), { dtype: 'I16', shape: [1, 2], data: Int16Array.of(1, -2) });
    const b = back.tensors.get('b')!;
    assert.equal(b.dtype, 'F16');
    assert.deepEqual(b.shape, [2, 3]);
    assert.deepEqual(back.tensors.get('z')!.shape, [0]);
  });

  it('every exported GGUF tensor is one gguf-py lists for the gpt-oss architecture', { skip: skipWithoutPython(['gguf']) }, () => {
    assertPython(['gguf']);
    const config = presetConfig('tiny-1m', { vocab_size: 32 });
    const params = new Map([...paramShapes(config)].map(([n, s]) => [n, { dtype: 'F32' as const, shape: s, data: randomF32(s.reduce((a, b) => a * b, 1), 3) }]));
    const path = join(tmp.dir, 'names.gguf');
    exportGguf(path, config, params);
    const known = new Set(python([
      'import json', 'from gguf.constants import MODEL_ARCH, MODEL_TENSORS, TENSOR_NAMES, MODEL_ARCH_NAMES',
      'assert MODEL_ARCH_NAMES[MODEL_ARCH.GPT_OSS] == "gpt-oss"',
      'print(json.dumps([TENSOR_NAMES[t] for t in MODEL_TENSORS[MODEL_ARCH.GPT_OSS]]))',
    ].join('\n')).trim().replace(/^\[|\]$/g, '').split(', ').map((s) => JSON.parse(s) as string));
    const names = readGguf(path).tensors.map((t) => t.name.replace(/\.(weight|bias)$/, '').replace(/^blk\.\d+\./, 'blk.{bid}.'));
    for (const n of names) assert.ok(known.has(n), `${n} is not a gpt-oss tensor in gguf-py`);
    for (const k of known) assert.ok(names.includes(k) || k === 'blk.{bid}.ffn_gate_up_exps', `gguf-py's ${k} is not exported`);
  });
});
