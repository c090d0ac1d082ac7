/**
 * `longrun dashboard RUN_DIR --screenshot FILE.png`: the page as headless Chromium draws it (Debian's `chromium`,
 * driven by playwright-core, as `longrun plot` does), full length, after it has loaded every panel. A page error or
 * an error shown on the page fails it, so the picture is of a page that works.
 */
import { existsSync } from 'node:fs';
import { startDashboard } from './server.ts';

export interface ScreenshotOptions {
  runDir: string;
  out: string;
  /** Chromium executable; default /usr/bin/chromium or /usr/bin/chromium-browser. */
  chromium?: string;
  /** Viewport width in CSS pixels (the page is captured at its full height). */
  width?: number;
}

export function findChromium(path?: string): string {
  const exe = path ?? ['/usr/bin/chromium', '/usr/bin/chromium-browser'].find((p) => existsSync(p));
  if (!exe) throw new Error('the screenshot needs Chromium (apt-get install chromium, or --chromium PATH)');
  return exe;
}

export async function dashboardScreenshot(o: ScreenshotOptions): Promise<void> {
  const exe = findChromium(o.chromium);
  const handle = await startDashboard({ runDir: o.runDir, port: 0 });
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: exe, args: ['--no-sandbox'] });
  try {
    const page = await browser.newPage({ viewport: { width: o.width ?? 1280, height: 900 } });
    const errors: string[] = [];
    page.on('pageerror', (e) => errors.push(e.message));
    await page.goto(handle.url, { timeout: 30_000 });
    await page.waitForSelector('body[data-ready]', { timeout: 60_000 });
    const shown = (await page.locator('#errors').textContent()) ?? '';
    if (errors.length || shown || (await page.getAttribute('body', 'data-ready')) !== 'true') throw new Error(`the dashboard page failed: ${[...errors, shown].filter(Boolean).join('; ')}`);
    await page.screenshot({ path: o.out, fullPage: true });
  } finally {
    await browser.close();
    await handle.close();
  }
}
