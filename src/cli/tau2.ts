import type { Command } from 'commander';
import { registerReplay } from './tau2-replay.ts';

export function register(program: Command): void {
  const tau2 = program.command('tau2').description('τ²-bench retail: run tools and replay tasks');
  registerReplay(tau2);
}
