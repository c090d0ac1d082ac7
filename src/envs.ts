/**
 * Registers every built-in environment with the gym registry. Entry points (CLI, servers, tests) call this once.
 * The gym helper adds toy envs here; the retail envs come from src/domains/retail/register.ts.
 */
export function registerBuiltinEnvs(): void {
  // filled in as the environment layers land
}
