/**
 * The Python that the interop tests (safetensors, gguf-py) run: `LONGRUN_PYTHON` when set (`.ci/run` points it at a
 * venv built from `.ci/requirements-interop.txt`), else `python3`. Where LONGRUN_PYTHON is set, or under CI (`CI=true`),
 * a missing package fails the test instead of skipping it, so CI cannot silently lose the cross-checks (and
 * `npm run test:unit`, scripts/test-unit.ts, fails on any skip anywhere).
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';

export const PYTHON = process.env.LONGRUN_PYTHON || 'python3';
/** Under CI (`CI=true`) or with LONGRUN_PYTHON set, a missing module fails the test instead of skipping it. */
const required = Boolean(process.env.LONGRUN_PYTHON) || process.env.CI === 'true' || process.env.CI === '1';

/** Null when `PYTHON` imports every module, else why not. */
export function missingPython(modules: readonly string[]): string | null {
  const out = spawnSync(PYTHON, ['-c', modules.map((m) => `import ${m}`).join('\n')], { encoding: 'utf8' });
  if (out.error) return `${PYTHON} is not available (${out.error.message})`;
  if (out.status !== 0) return `${PYTHON} lacks ${modules.join(', ')} (pip install -r .ci/requirements-interop.txt): ${out.stderr.trim().split('\n').at(-1)}`;
  return null;
}

/** `skip` option for an interop test: the reason where Python lacks the modules, unless LONGRUN_PYTHON demands them. */
export function skipWithoutPython(modules: readonly string[]): string | false {
  const why = missingPython(modules);
  return why !== null && !required ? why : false;
}

/** First line of an interop test: with LONGRUN_PYTHON set, a missing module is a failure that says what to install. */
export function assertPython(modules: readonly string[]): void {
  const why = missingPython(modules);
  assert.equal(why, null, why ?? '');
}

/** Runs `script` with `PYTHON -c`, asserts exit 0, returns stdout. */
export function runPython(script: string, ...args: string[]): string {
  const out = spawnSync(PYTHON, ['-c', script, ...args], { encoding: 'utf8' });
  assert.equal(out.status, 0, out.stderr || String(out.error));
  return out.stdout;
}
