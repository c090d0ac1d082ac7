import type { Command } from 'commander';

export function register(_program: Command): void {
  // The `tau2` subcommands are added here.
}
