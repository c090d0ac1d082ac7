/**
 * Registers every built-in environment with the gym registry: the toy envs and the τ²-bench retail envs.
 * Entry points (CLI, servers, tests) call this once; calling it again is harmless (already registered ids are left
 * alone).
 */
import { registerRetailEnvs } from './domains/retail/register.ts';
import { GuessNumberEnv } from './gym/envs/guess-number.ts';
import { ReverseTextEnv } from './gym/envs/reverse-text.ts';
import { expectKwargs } from './gym/registry/kwargs.ts';
import { register, registry } from './gym/registry/registry.ts';
import type { EnvSpecInit } from './gym/registry/spec.ts';

const TOY_ENVS: EnvSpecInit[] = [
  {
    id: 'GuessNumber-v0',
    entryPoint: (kw) => (expectKwargs('GuessNumberEnv', kw, ['n']), new GuessNumberEnv(kw)),
    maxEpisodeSteps: 10,
    rewardThreshold: 1,
  },
  {
    id: 'ReverseText-v0',
    entryPoint: (kw) => (expectKwargs('ReverseTextEnv', kw, ['numWords', 'maxWordLength']), new ReverseTextEnv(kw)),
  },
];

export function registerBuiltinEnvs(): void {
  for (const init of TOY_ENVS) if (!registry.has(init.id)) register(init);
  registerRetailEnvs();
}
