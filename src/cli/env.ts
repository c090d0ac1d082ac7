import type { Command } from 'commander';
import { registerBuiltinEnvs } from '../envs.ts';
import { checkEnv, formatCheckReport } from '../gym/checker/check-env.ts';
import { make, pprintRegistry, registeredIds } from '../gym/registry/registry.ts';

export interface EnvCheckCommandOptions {
  data?: string;
  kwargs?: string;
  skipRenderCheck?: boolean;
  skipCloseCheck?: boolean;
  json?: boolean;
}

/** `longrun env check`: prints the checkEnv report for a registered env and returns the exit code (0 ok, 1 failed). */
export async function envCheckCommand(id: string, opts: EnvCheckCommandOptions, print: (line: string) => void = console.log): Promise<number> {
  registerBuiltinEnvs();
  const kwargs = parseKwargs(opts.kwargs);
  if (opts.data !== undefined) kwargs.dataDir = opts.data;
  const instance = make(id, { ...kwargs, disableEnvChecker: true });
  try {
    const report = await checkEnv(instance.unwrapped, { skipRenderCheck: opts.skipRenderCheck, skipCloseCheck: opts.skipCloseCheck, throwOnError: false });
    print(opts.json ? JSON.stringify(report, null, 2) : formatCheckReport(report));
    return report.ok ? 0 : 1;
  } finally {
    await instance.close();
  }
}

function parseKwargs(json: string | undefined): Record<string, unknown> {
  if (json === undefined) return {};
  const parsed: unknown = JSON.parse(json);
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('--kwargs must be a JSON object');
  return parsed as Record<string, unknown>;
}

export function register(program: Command): void {
  const env = program.command('env').description('Gymnasium-style environments: list and check registered envs');

  env
    .command('list')
    .description('list registered environment ids')
    .option('--grouped', 'group by namespace, like Gymnasium pprint_registry')
    .action((opts: { grouped?: boolean }) => {
      registerBuiltinEnvs();
      if (opts.grouped) pprintRegistry();
      else for (const id of registeredIds()) console.log(id);
    });

  env
    .command('check')
    .argument('<id>', 'registered environment id, e.g. GuessNumber-v0')
    .description('run checkEnv (Gymnasium check_env semantics) on a registered env; exits 1 on failure')
    .option('--data <dir>', 'data directory, passed to the env as the dataDir kwarg')
    .option('--kwargs <json>', 'extra env kwargs as a JSON object')
    .option('--skip-render-check', 'skip the render checks')
    .option('--skip-close-check', 'skip the double-close check')
    .option('--json', 'print the report as JSON')
    .action(async (id: string, opts: EnvCheckCommandOptions) => {
      const code = await envCheckCommand(id, opts);
      if (code !== 0) process.exitCode = code;
    });
}
