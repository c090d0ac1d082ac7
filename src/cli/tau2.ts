import type { Command } from 'commander';
import { registerExec } from './tau2-exec.ts';
import { registerReplay } from './tau2-replay.ts';

export function register(program: Command): void {
  const tau2 = program.command('tau2').description('τ²-bench retail: run tools and replay tasks');
  registerExec(tau2);
  registerReplay(tau2);
}
