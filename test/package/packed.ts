/**
 * The packed package, installed as a user would: `npm pack` (which builds dist/ through the prepack script) into a
 * folder outside the repository, then `npm install --omit=dev <tarball> zod` into a fresh folder beside it, with
 * production dependencies only. Shared by the test files that need it (test/package/, test/docs/): the install is
 * keyed by a hash of everything that goes into the package, made once under the system's temp folder, and reused
 * by later test files and runs until a source file changes. Test files running at once wait for the one that builds.
 * Needs the npm registry (for longrun's dependencies).
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { REPO_ROOT } from '../helpers/paths.ts';

export interface PackedInstall {
  /** The consumer folder: package.json, node_modules/longrun (and its production dependencies only). */
  dir: string;
  /** The installed `longrun` command (node_modules/.bin/longrun). */
  bin: string;
  /** The tarball `npm pack` wrote. */
  tarball: string;
}

/** The inputs of the package: a change to any of them makes a new install. */
function packageInputs(): string[] {
  const files = ['package.json', 'package-lock.json', 'bin/longrun', 'tsconfig.json', 'tsconfig.build.json', 'scripts/build-lib.mjs', 'scripts/build-wasm.mjs', 'README.md'];
  const walk = (dir: string): void => {
    if (!existsSync(join(REPO_ROOT, dir))) return;
    for (const name of readdirSync(join(REPO_ROOT, dir)).sort()) {
      const rel = `${dir}/${name}`;
      if (statSync(join(REPO_ROOT, rel)).isDirectory()) walk(rel);
      else files.push(rel);
    }
  };
  walk('src');
  walk('assembly');
  return files.filter((f) => existsSync(join(REPO_ROOT, f)));
}

function inputsKey(): string {
  const h = createHash('sha256');
  for (const f of packageInputs()) h.update(f).update('\0').update(readFileSync(join(REPO_ROOT, f))).update('\0');
  h.update(process.version);
  return h.digest('hex').slice(0, 16);
}

function run(cmd: string, args: string[], cwd: string, what: string, timeoutMs: number): SpawnSyncReturns<string> {
  const r = spawnSync(cmd, args, {
    cwd, encoding: 'utf8', timeout: timeoutMs, maxBuffer: 64 * 1024 * 1024,
    // An `npm test` parent passes npm_config_* settings (e.g. its own prefix) that must not steer these commands.
    env: Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_'))),
  });
  if (r.status !== 0) throw new Error(`${what} failed (exit ${r.status ?? r.signal}${r.error ? `, ${r.error.message}` : ''}):\n${r.stdout}\n${r.stderr}`);
  return r;
}

function build(root: string): PackedInstall {
  const packDir = join(root, 'pack');
  const dir = join(root, 'app');
  rmSync(packDir, { recursive: true, force: true });
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(packDir, { recursive: true });
  mkdirSync(dir, { recursive: true });
  const packed = run('npm', ['pack', '--json', '--pack-destination', packDir], REPO_ROOT, 'npm pack', 8 * 60_000);
  const info = JSON.parse(packed.stdout.slice(packed.stdout.indexOf('['))) as { filename: string }[];
  const tarball = join(packDir, info[0]!.filename);
  if (!existsSync(tarball)) throw new Error(`npm pack reported ${info[0]!.filename} but ${tarball} does not exist`);
  // The consumer: an ES-module project of its own, with longrun's zod (env modules import it) and nothing else.
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> };
  writeFileSync(join(dir, 'package.json'), `${JSON.stringify({ name: 'longrun-consumer', private: true, type: 'module' }, null, 2)}\n`);
  run('npm', ['install', '--omit=dev', '--no-audit', '--no-fund', tarball, `zod@${pkg.dependencies.zod}`], dir, `npm install ${tarball}`, 8 * 60_000);
  const bin = join(dir, 'node_modules', '.bin', 'longrun');
  if (!existsSync(bin)) throw new Error(`npm install put no longrun command at ${bin}`);
  return { dir, bin, tarball };
}

/** Removes other keys' installs (an hour old or more) so the temp folder does not fill up. */
function prune(base: string, keep: string): void {
  for (const name of readdirSync(base)) {
    if (!name.startsWith('longrun-pack-') || name === keep || name.endsWith('.lock')) continue;
    const ready = join(base, name, 'ready.json');
    if (existsSync(ready) && Date.now() - statSync(ready).mtimeMs > 3600_000) rmSync(join(base, name), { recursive: true, force: true });
  }
}

/** The packed and installed package for the repository as it is now (built once per source state). */
export async function packedInstall(): Promise<PackedInstall> {
  const base = tmpdir();
  const name = `longrun-pack-${inputsKey()}`;
  const root = join(base, name);
  const ready = join(root, 'ready.json');
  const lock = `${root}.lock`;
  const deadline = Date.now() + 15 * 60_000;
  while (Date.now() < deadline) {
    if (existsSync(ready)) return JSON.parse(readFileSync(ready, 'utf8')) as PackedInstall;
    try {
      mkdirSync(lock);
    } catch {
      // Another test file is building this install (or died doing it: a lock older than 12 minutes is stale).
      if (existsSync(lock) && Date.now() - statSync(lock).mtimeMs > 12 * 60_000) rmSync(lock, { recursive: true, force: true });
      await sleep(1000);
      continue;
    }
    try {
      prune(base, name);
      const made = build(root);
      writeFileSync(ready, JSON.stringify(made));
      return made;
    } finally {
      rmSync(lock, { recursive: true, force: true });
    }
  }
  throw new Error(`packedInstall: timed out waiting for ${lock}`);
}

/** Runs the installed `longrun` with plain Node in `cwd` (the consumer folder unless given). */
export function runLongrun(install: PackedInstall, args: string[], options: { cwd?: string; timeoutMs?: number } = {}): { code: number | null; out: string; stdout: string } {
  const r = spawnSync(process.execPath, [install.bin, ...args], {
    cwd: options.cwd ?? install.dir, encoding: 'utf8', timeout: options.timeoutMs ?? 120_000, maxBuffer: 64 * 1024 * 1024,
    env: { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.toLowerCase().startsWith('npm_'))), NODE_OPTIONS: '' },
  });
  return { code: r.status, out: `${r.stdout}${r.stderr}${r.error ? `\n${r.error.message}` : ''}`, stdout: r.stdout };
}

/** `git status --porcelain` of the repository (tracked changes and untracked files), to show a test changed none. */
export function repoStatus(): string {
  return run('git', ['status', '--porcelain', '--untracked-files=all'], REPO_ROOT, 'git status', 60_000).stdout;
}
