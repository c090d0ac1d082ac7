import type { Command } from 'commander';

export function register(_program: Command): void {
  // The `gen` subcommands are added here.
}
