// Builds the AssemblyScript kernels in assembly/ into build/*.wasm (a SIMD build, and a relaxed-SIMD build).
// Runs at install time (postinstall) and before the tests; skips work when the outputs are newer than the sources.
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const src = join(root, 'assembly');
const entry = join(src, 'index.ts');
const out = join(root, 'build');
const ifPresent = process.argv.includes('--if-present');

if (!existsSync(entry)) {
  if (ifPresent) process.exit(0);
  console.error('build-wasm: assembly/index.ts is missing');
  process.exit(1);
}
const asc = join(root, 'node_modules', 'assemblyscript', 'bin', 'asc.js');
if (!existsSync(asc)) {
  if (ifPresent) { console.warn('build-wasm: assemblyscript not installed yet; skipping'); process.exit(0); }
  console.error('build-wasm: assemblyscript is not installed; run npm ci');
  process.exit(1);
}

const newestSource = Math.max(...readdirSync(src).filter((f) => f.endsWith('.ts')).map((f) => statSync(join(src, f)).mtimeMs),
  statSync(fileURLToPath(import.meta.url)).mtimeMs);
mkdirSync(out, { recursive: true });

const common = ['--runtime', 'stub', '-O3', '--noAssert', '--enable', 'simd', '--enable', 'threads', '--importMemory', '--sharedMemory',
  '--initialMemory', '16', '--maximumMemory', '65536', '--memoryBase', '65536'];
const builds = [
  { file: 'longrun.wasm', extra: [] },
  { file: 'longrun.relaxed.wasm', extra: ['--enable', 'relaxed-simd', '--use', 'RELAXED=1'] },
];
for (const b of builds) {
  const target = join(out, b.file);
  if (existsSync(target) && statSync(target).mtimeMs > newestSource && !process.argv.includes('--force')) continue;
  const r = spawnSync(process.execPath, [asc, entry, '-o', target, ...common, ...b.extra], { stdio: 'inherit' });
  if (r.status !== 0) { console.error(`build-wasm: asc failed for ${b.file}`); process.exit(r.status ?? 1); }
  console.log(`build-wasm: wrote build/${b.file}`);
}
