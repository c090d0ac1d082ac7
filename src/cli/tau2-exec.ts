/** `longrun tau2 exec --data DIR`: tool calls as JSON on stdin, one JSON report on stdout. */
import { join } from 'node:path';
import type { Command } from 'commander';
import { createRetailDomain } from '../domains/retail/domain.ts';
import { parseExecInput, runExec } from '../domains/retail/exec.ts';
import { loadRetailDb } from '../domains/retail/load.ts';

export interface ExecCommandOptions {
  data: string;
  toolSet?: string;
  tau2Compat?: boolean;
}

async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

/** Parses `input`, runs the calls and returns the report line (throws with a clear message on bad input or data). */
export function execCommand(input: string, opts: ExecCommandOptions): string {
  const toolSet = opts.toolSet ?? 'v1';
  if (toolSet !== 'v0' && toolSet !== 'v1') throw new Error(`--tool-set must be v0 or v1, got ${toolSet}`);
  const calls = parseExecInput(input);
  // Only the DB matters for executing tools (the policy text is not used here), so only db.json is required.
  const domain = createRetailDomain({ db: loadRetailDb(join(opts.data, 'db.json')), policy: '' }, { toolSet, tau2Compat: opts.tau2Compat ?? true });
  return JSON.stringify(runExec(domain, calls));
}

export function registerExec(tau2: Command): void {
  tau2
    .command('exec')
    .description('run tool calls read from stdin ({"calls":[{"name","arguments"}]}) on a fresh retail DB; print outputs and the final DB hash')
    .requiredOption('--data <dir>', 'τ²-bench retail data folder (only its db.json is read)')
    .option('--tool-set <v0|v1>', "retail tool list: v1 (16 tools) or v0 (τ² v0.x's 15)", 'v1')
    .option('--no-tau2-compat', "fix τ²'s tool quirks instead of reproducing them")
    .action(async (opts: ExecCommandOptions) => {
      const line = execCommand(await readStdin(), opts);
      process.stdout.write(line + '\n');
    });
}
