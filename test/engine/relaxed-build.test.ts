import { spawnSync } from 'node:child_process';
import assert from 'node:assert/strict';
import { test } from 'node:test';

// The relaxed-SIMD build is opt-in (src/engine/runtime.ts): it must still pass the kernel checks when chosen. Each
// case runs in a child process, since a runtime's build is fixed when it starts.
function node(args: string[], env: Record<string, string>) {
  const base = { ...process.env };
  delete base.NODE_TEST_CONTEXT; // else a child `node --test` reports to this runner instead of printing TAP
  return spawnSync(process.execPath, ['--import', 'tsx', ...args], { encoding: 'utf8', env: { ...base, ...env }, maxBuffer: 1 << 24 });
}

const PROBE = "import { initRuntime, shutdownRuntime } from './src/engine/runtime.ts'; const rt = initRuntime(); console.log(JSON.stringify({ relaxed: rt.relaxed })); await shutdownRuntime();";

test('the plain build is the default; LONGRUN_RELAXED_SIMD=1 loads the relaxed one; other values are refused', () => {
  const plain = node(['--input-type=module', '-e', PROBE], { LONGRUN_RELAXED_SIMD: '' });
  assert.equal(plain.status, 0, plain.stderr);
  assert.deepEqual(JSON.parse(plain.stdout.trim()), { relaxed: false });
  const relaxed = node(['--input-type=module', '-e', PROBE], { LONGRUN_RELAXED_SIMD: '1' });
  assert.equal(relaxed.status, 0, relaxed.stderr);
  assert.deepEqual(JSON.parse(relaxed.stdout.trim()), { relaxed: true });
  const bad = node(['--input-type=module', '-e', PROBE], { LONGRUN_RELAXED_SIMD: 'yes' });
  assert.notEqual(bad.status, 0);
  assert.match(bad.stderr, /LONGRUN_RELAXED_SIMD must be 0 or 1, got 'yes'/);
});

test('the relaxed build passes the matmul and flex-attention kernel tests', () => {
  const r = node(['--test', 'test/engine/matmul.test.ts', 'test/attention/wasm.test.ts'], { LONGRUN_RELAXED_SIMD: '1' });
  assert.equal(r.status, 0, r.stdout.slice(-3000) + r.stderr.slice(-2000));
  assert.match(r.stdout, /# fail 0/);
  assert.doesNotMatch(r.stdout, /# pass 0\b/);
});
