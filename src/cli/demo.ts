import type { Command } from 'commander';

export function register(_program: Command): void {
  // The `demo` subcommands are added here.
}
