/**
 * `checkEnv` mirrors Gymnasium's `check_env`, in the same order: Env subclass → wrapped warning → spaces →
 * deprecated `seed` method → reset passive check → reset seed determinism → reset `options` → step passive
 * check → step determinism → render checks (every declared mode, rebuilt from the spec) → double `close`.
 * Unlike Python's asserts it keeps going after a failed stage when later stages can still run, and returns a
 * report; it throws `EnvCheckError` (carrying the report) when there are errors unless `throwOnError: false`.
 */
import { Env } from '../env.ts';
import { dataEquivalence } from '../equivalence.ts';
import { EnvCheckError } from '../errors.ts';
import { captureWarnings, warn } from '../logger.ts';
import { make } from '../registry/registry.ts';
import { isPlainObject } from '../spaces/space.ts';
import { checkSpace, envRenderPassiveChecker, envResetPassiveChecker, envStepPassiveChecker } from './passive-checks.ts';

export interface CheckEnvOptions {
  skipRenderCheck?: boolean;
  skipCloseCheck?: boolean;
  /** Throw `EnvCheckError` when a check fails (default true); with false, inspect `report.ok`. */
  throwOnError?: boolean;
}

export interface CheckResult {
  name: string;
  status: 'pass' | 'fail' | 'skip';
  message?: string;
}

export interface CheckEnvReport {
  ok: boolean;
  env: string;
  checks: CheckResult[];
  errors: string[];
  warnings: string[];
}

class CheckFailure extends Error {}

function check(condition: unknown, message: string): asserts condition {
  if (!condition) throw new CheckFailure(message);
}

/** Formats a report for the terminal. */
export function formatCheckReport(report: CheckEnvReport): string {
  const lines = [`checkEnv ${report.env}: ${report.ok ? 'PASSED' : 'FAILED'}`];
  for (const c of report.checks) lines.push(`  [${c.status === 'pass' ? ' ok ' : c.status === 'fail' ? 'FAIL' : 'skip'}] ${c.name}${c.message ? ` — ${c.message}` : ''}`);
  if (report.warnings.length > 0) {
    lines.push(`  warnings (${report.warnings.length}):`);
    for (const w of report.warnings) lines.push(`    - ${w}`);
  }
  return lines.join('\n');
}

export async function checkEnv(env: Env, options: CheckEnvOptions = {}): Promise<CheckEnvReport> {
  const checks: CheckResult[] = [];
  let stop = false;
  const stage = async (name: string, fn: () => Promise<void> | void, fatal = false): Promise<void> => {
    if (stop) {
      checks.push({ name, status: 'skip', message: 'an earlier fatal check failed' });
      return;
    }
    try {
      await fn();
      checks.push({ name, status: 'pass' });
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      checks.push({ name, status: 'fail', message: e instanceof CheckFailure ? msg : `threw ${e instanceof Error ? e.name : 'error'}: ${msg}` });
      if (fatal) stop = true;
    }
  };
  const skip = (name: string, message: string): void => void checks.push({ name, status: 'skip', message });
  const nondeterministic = env instanceof Env && env.spec?.nondeterministic === true;

  const { warnings } = await captureWarnings(async () => {
    await stage(
      'is an Env',
      () => check(env instanceof Env, `The environment must inherit from the Env class (src/gym/env.ts), actual class: ${(env as object)?.constructor?.name ?? typeof env}.`),
      true,
    );
    await stage('wrapper warning', () => {
      if (env.unwrapped !== env) {
        warn(`The environment (${env}) is different from the unwrapped version (${env.unwrapped}). This could affect the environment checker as the environment most likely has a wrapper applied to it. We recommend using the raw environment for \`checkEnv\` using \`env.unwrapped\`.`);
      }
    });
    await stage('action space', () => checkSpace(env.actionSpace, 'action'), true);
    await stage('observation space', () => checkSpace(env.observationSpace, 'observation'), true);
    await stage('no deprecated seed()', () => {
      if (typeof (env as unknown as Record<string, unknown>).seed === 'function') {
        warn('Official support for the `seed` function is dropped. Standard practice is to reset environments using `env.reset({seed: <desired seed>})`.');
      }
    });
    await stage('reset returns [obs in space, info object]', () => envResetPassiveChecker(env).then(() => undefined), true);
    if (nondeterministic) skip('reset seed determinism', 'spec.nondeterministic is true');
    else await stage('reset seed determinism', () => checkResetSeedDeterminism(env));
    await stage('reset accepts options', async () => {
      try {
        await env.reset({ options: {} });
      } catch (e) {
        throw new CheckFailure(`The \`reset\` method does not accept an \`options\` argument: ${(e as Error).message}`);
      }
    });
    await stage('step returns [obs, reward, terminated, truncated, info]', async () => {
      await env.reset();
      await envStepPassiveChecker(env, env.actionSpace.sample());
    });
    if (nondeterministic) skip('step determinism', 'spec.nondeterministic is true');
    else await stage('step determinism', () => checkStepDeterminism(env));
    if (options.skipRenderCheck) skip('render', 'skipRenderCheck');
    else await stage('render', () => checkRender(env));
    if (options.skipCloseCheck) skip('close is idempotent', 'skipCloseCheck');
    else if (env.spec === null) skip('close is idempotent', 'the env has no spec to rebuild it from (make it through make())');
    else await stage('close is idempotent', () => checkClose(env));
  });

  const failed = checks.filter((c) => c.status === 'fail');
  const report: CheckEnvReport = {
    ok: failed.length === 0,
    env: env instanceof Env ? String(env) : String(env),
    checks,
    errors: failed.map((c) => `${c.name}: ${c.message}`),
    warnings: [...new Set(warnings)],
  };
  if (!report.ok && (options.throwOnError ?? true)) {
    const err = new EnvCheckError(`checkEnv found ${failed.length} error(s):\n${report.errors.map((e) => `  - ${e}`).join('\n')}`);
    (err as EnvCheckError & { report: CheckEnvReport }).report = report;
    throw err;
  }
  return report;
}

/** Reads the seed through a call so TypeScript does not narrow it across awaits. */
function seedOf(env: Env): number {
  return env.npRandomSeed;
}

async function checkResetSeedDeterminism(env: Env): Promise<void> {
  const inner = env.unwrapped;
  const [obs1] = await env.reset({ seed: 123 });
  check(env.observationSpace.contains(obs1), 'The observation returned by `env.reset({seed: 123})` is not within the observation space.');
  check(inner.hasRng, 'Expects the random number generator to have been generated given a seed was passed to reset. Most likely the environment reset function does not call `super.reset({seed})`.');
  const rngAfter123 = inner.npRandom.clone();
  check(seedOf(inner) === 123, `Expects npRandomSeed to be 123 after reset({seed: 123}), actual: ${seedOf(inner)}. Most likely the environment reset function does not call \`super.reset({seed})\`.`);
  const [obs2] = await env.reset();
  check(env.observationSpace.contains(obs2), 'The observation returned by `env.reset()` is not within the observation space.');
  check(seedOf(inner) === 123, 'Expects npRandomSeed to stay 123 after reset() without a seed. Most likely the environment reset function does not call `super.reset({seed})` or reseeds without being asked.');
  const [obs3] = await env.reset({ seed: 123 });
  check(env.observationSpace.contains(obs3), 'The observation returned by `env.reset({seed: 123})` is not within the observation space.');
  check(dataEquivalence(obs1, obs3), 'Using `env.reset({seed: 123})` is non-deterministic as the observations are not equivalent.');
  check(
    inner.npRandom.sameState(rngAfter123),
    'Mostly likely the environment reset function does not call `super.reset({seed})` as the random generators are not the same when the same seeds are passed to `env.reset`.',
  );
  const rngAfter123Again = inner.npRandom.clone();
  const [obs4] = await env.reset({ seed: 456 });
  check(env.observationSpace.contains(obs4), 'The observation returned by `env.reset({seed: 456})` is not within the observation space.');
  check(
    !inner.npRandom.sameState(rngAfter123Again),
    'Mostly likely the environment reset function does not call `super.reset({seed})` as the random number generators are not different when different seeds are passed to `env.reset`.',
  );
  check(seedOf(inner) === 456, `Expects npRandomSeed to be 456 after reset({seed: 456}), actual: ${seedOf(inner)}.`);
}

async function checkStepDeterminism(env: Env): Promise<void> {
  env.actionSpace.seed(123);
  const action = env.actionSpace.sample();
  await env.reset({ seed: 123 });
  const [obs0, rew0, term0, trunc0, info0] = await env.step(action);
  await env.reset({ seed: 123 });
  const [obs1, rew1, term1, trunc1, info1] = await env.step(action);
  check(env.observationSpace.contains(obs0) && env.observationSpace.contains(obs1), 'The observation returned by `env.step()` is not within the observation space.');
  check(dataEquivalence(obs0, obs1), 'Deterministic step observations are not equivalent for the same seed and action.');
  check(dataEquivalence(rew0, rew1), `Deterministic step rewards are not equivalent for the same seed and action: ${rew0} vs ${rew1}.`);
  check(term0 === term1, 'Deterministic step termination signals are not equivalent for the same seed and action.');
  check(trunc0 === false && trunc1 === false, 'Expects `truncated` to be false on the first step after a reset.');
  check(isPlainObject(info0) && dataEquivalence(info0, info1), 'Deterministic step info are not equivalent for the same seed and action.');
}

async function checkRender(env: Env): Promise<void> {
  if (env.renderMode !== null) await envRenderPassiveChecker(env);
  const spec = env.spec;
  if (spec === null) {
    warn('Not able to test alternative render modes due to the environment not having a spec. Try instantiating the environment through make().');
    return;
  }
  for (const mode of env.metadata.renderModes ?? []) {
    const fresh = make(spec, { renderMode: mode, disableEnvChecker: true });
    try {
      await fresh.reset();
      await envRenderPassiveChecker(fresh);
    } finally {
      await fresh.close();
    }
  }
}

async function checkClose(env: Env): Promise<void> {
  const fresh = make(env.spec!, { disableEnvChecker: true });
  await fresh.close();
  try {
    await fresh.close();
  } catch (e) {
    throw new CheckFailure(`Calling \`env.close()\` on the closed environment should be allowed, but it raised an exception: ${(e as Error).message}`);
  }
}
