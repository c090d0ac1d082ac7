import type { Command } from 'commander';
import { startDashboard } from '../serve/dashboard/server.ts';

export function register(program: Command): void {
  program
    .command('dashboard')
    .description('web page for a run folder: training curves (metrics JSONL) and a trajectory viewer')
    .argument('<run-dir>', 'folder with metrics*.jsonl and/or trajectories*.jsonl (e.g. a `longrun eval --out` folder)')
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--port <n>', 'port (0 picks a free one)', (v) => {
      const n = Number(v);
      if (!Number.isInteger(n) || n < 0) throw new Error(`--port must be a non-negative integer, got ${JSON.stringify(v)}`);
      return n;
    }, 8080)
    .action(async (runDir: string, opts: { host: string; port: number }) => {
      const handle = await startDashboard({ runDir, host: opts.host, port: opts.port, log: (l) => console.error(l) });
      await new Promise<void>((resolve) => {
        const stop = () => void handle.close().then(resolve);
        process.once('SIGINT', stop);
        process.once('SIGTERM', stop);
      });
    });
}
