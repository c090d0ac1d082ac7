import type { Command } from 'commander';
import { dashboardScreenshot } from '../serve/dashboard/screenshot.ts';
import { startDashboard } from '../serve/dashboard/server.ts';
import { outFile } from './out-file.ts';

export function register(program: Command): void {
  program
    .command('dashboard')
    .description('web page for a run folder: its stages, held-out reward by GRPO step and wall time beside the baselines, training panels, and a trajectory viewer (before / after side by side)')
    .argument('<run-dir>', 'a `longrun demo` / `longrun train` run (sft/, grpo/ stages), a `longrun eval --out` folder, or a folder of such runs')
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--port <n>', 'port (0 picks a free one)', (v) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 0) throw new Error(`--port must be a non-negative integer, got ${JSON.stringify(v)}`);
      return n;
    }, 8080)
    .option('--screenshot <png>', 'write the page as headless Chromium draws it to this PNG and exit')
    .option('--chromium <path>', 'Chromium executable for --screenshot')
    .option('--width <px>', 'viewport width for --screenshot', (v) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 320) throw new Error(`--width must be an integer ≥ 320, got ${JSON.stringify(v)}`);
      return n;
    }, 1280)
    .action(async (runDir: string, opts: { host: string; port: number; screenshot?: string; chromium?: string; width: number }) => {
      if (opts.screenshot !== undefined) {
        await dashboardScreenshot({ runDir, out: outFile(opts.screenshot), chromium: opts.chromium, width: opts.width });
        console.error(`wrote ${opts.screenshot}`);
        return;
      }
      const handle = await startDashboard({ runDir, host: opts.host, port: opts.port, log: (l) => console.error(l) });
      await new Promise<void>((resolve) => {
        const stop = () => void handle.close().then(resolve);
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
    });
}
