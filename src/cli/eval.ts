import type { Command } from 'commander';

export function register(_program: Command): void {
  // The `eval` subcommands are added here.
}
