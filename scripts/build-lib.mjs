// Builds the npm package's JavaScript: compiles src/ to dist/ (ES modules and .d.ts files, tsconfig.build.json) and
// copies the files the compiled code reads at run time. Runs on `npm run build` and before `npm pack` (prepack).
//
// - The sources import each other with `.ts` extensions; tsc rewrites them to `.js` in the emitted JavaScript
//   (rewriteRelativeImportExtensions). It leaves them in the .d.ts files, so this script rewrites those too, so that
//   a user's TypeScript resolves the declarations whatever its own settings.
// - The engine's Wasm kernels stay in build/ (src/engine/runtime.ts reads `../../build/*.wasm` relative to itself,
//   which from dist/engine/ is the package's build/); they are built here when missing or stale.
// - src/engine/pool-worker.mjs is plain JavaScript loaded by URL next to pool.ts: copied beside dist/engine/pool.js.
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const dist = join(root, 'dist');
const quiet = process.argv.includes('--quiet');
const log = (s) => { if (!quiet) console.log(`build-lib: ${s}`); };

function run(args, what) {
  const r = spawnSync(process.execPath, args, { cwd: root, stdio: 'inherit' });
  if (r.status !== 0) {
    console.error(`build-lib: ${what} failed (exit ${r.status ?? r.signal})`);
    process.exit(r.status ?? 1);
  }
}

const tsc = join(root, 'node_modules', 'typescript', 'bin', 'tsc');
if (!existsSync(tsc)) {
  console.error('build-lib: typescript is not installed (a devDependency); run npm ci in the checkout');
  process.exit(1);
}

// 1. The Wasm kernels (no-op when build/ is newer than assembly/).
run([join(root, 'scripts', 'build-wasm.mjs')], 'build-wasm');
for (const f of ['longrun.wasm', 'longrun.relaxed.wasm']) {
  if (!existsSync(join(root, 'build', f))) { console.error(`build-lib: build/${f} is missing after build-wasm`); process.exit(1); }
}

// 2. A clean compile: stale files from deleted sources must not ship.
rmSync(dist, { recursive: true, force: true });
run([tsc, '-p', join(root, 'tsconfig.build.json')], 'tsc -p tsconfig.build.json');

// 3. Run-time files that are not TypeScript.
const copied = [];
function copyAssets(dir) {
  for (const name of readdirSync(dir)) {
    const from = join(dir, name);
    if (statSync(from).isDirectory()) { copyAssets(from); continue; }
    if (!/\.(mjs|cjs|json)$/.test(name)) continue;
    const to = join(dist, relative(join(root, 'src'), from));
    copyFileSync(from, to);
    copied.push(relative(root, to));
  }
}
copyAssets(join(root, 'src'));

// 4. `.ts` → `.js` in the declarations' relative import specifiers (`from './x.ts'`, `import('./x.ts')`).
let rewritten = 0;
function rewriteDeclarations(dir) {
  for (const name of readdirSync(dir)) {
    const file = join(dir, name);
    if (statSync(file).isDirectory()) { rewriteDeclarations(file); continue; }
    if (!name.endsWith('.d.ts')) continue;
    const text = readFileSync(file, 'utf8');
    const next = text.replace(/(from\s+|import\s*\(\s*|import\s+)(['"])(\.{1,2}\/[^'"]*?)\.ts\2/g, (_m, head, q, path) => `${head}${q}${path}.js${q}`);
    if (next !== text) { writeFileSync(file, next); rewritten++; }
  }
}
rewriteDeclarations(dist);

if (!existsSync(join(dist, 'index.js')) || !existsSync(join(dist, 'index.d.ts'))) {
  console.error('build-lib: dist/index.js or dist/index.d.ts is missing (is src/index.ts there?)');
  process.exit(1);
}
if (!existsSync(join(dist, 'cli', 'main.js'))) { console.error('build-lib: dist/cli/main.js is missing'); process.exit(1); }
log(`compiled src/ to dist/ (${copied.length} run-time files copied: ${copied.join(', ') || 'none'}; ${rewritten} declaration files' imports rewritten)`);
