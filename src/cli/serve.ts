import type { Command } from 'commander';

export function register(_program: Command): void {
  // The `serve` subcommands are added here.
}
