import type { Command } from 'commander';

export function register(_program: Command): void {
  // The `env` subcommands are added here.
}
