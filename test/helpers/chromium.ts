/**
 * The Chromium the dashboard's browser tests drive (playwright-core with the system browser): `LONGRUN_CHROMIUM` when
 * set, else the first of `chromium`, `chromium-browser`, `google-chrome-stable`, `google-chrome` found on PATH.
 * Under CI (`CI=true`) a missing browser fails those tests instead of skipping them, so CI cannot silently lose them.
 */
import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, join } from 'node:path';

const NAMES = ['chromium', 'chromium-browser', 'google-chrome-stable', 'google-chrome'];

function executable(path: string): boolean {
  try {
    accessSync(path, constants.X_OK);
    return statSync(path).isFile();
  } catch {
    return false;
  }
}

/** The Chromium executable, or undefined where none is installed. */
export function findChromium(env: NodeJS.ProcessEnv = process.env): string | undefined {
  if (env.LONGRUN_CHROMIUM) return env.LONGRUN_CHROMIUM;
  const dirs = (env.PATH ?? '').split(delimiter).filter(Boolean);
  for (const name of NAMES) {
    for (const dir of dirs) {
      const p = join(dir, name);
      if (executable(p)) return p;
    }
  }
  return undefined;
}

export const CHROMIUM = findChromium();
const onCi = process.env.CI === 'true' || process.env.CI === '1';
const MISSING = `no Chromium on PATH (looked for ${NAMES.join(', ')}; apt-get install chromium, or set LONGRUN_CHROMIUM)`;

/**
 * `skip` option for a browser test: false where Chromium is found, and under CI, where the test then fails in
 * `requireChromium`; elsewhere the reason (the unit-test runner, scripts/test-unit.ts, still fails on a skip).
 */
export const SKIP_WITHOUT_CHROMIUM: string | false = CHROMIUM || onCi ? false : MISSING;

/** The executable, or an error saying what to install (the first line of a browser test). */
export function requireChromium(): string {
  if (!CHROMIUM) throw new Error(`the dashboard's browser tests need Chromium: ${MISSING}`);
  return CHROMIUM;
}
