import assert from 'node:assert/strict';
import { test } from 'node:test';
import { checkEnv, Discrete, Env, EnvCheckError, formatCheckReport, make, register, type CheckEnvReport, type ResetOptions, type ResetResult, type StepResult } from '../../src/gym/index.ts';
import { CounterEnv, RandomStartEnv } from './toy-envs.ts';

function failed(report: CheckEnvReport): string[] {
  return report.checks.filter((c) => c.status === 'fail').map((c) => c.name);
}

test('a correct env passes every check', async () => {
  const report = await checkEnv(new RandomStartEnv());
  assert.equal(report.ok, true, formatCheckReport(report));
  assert.deepEqual(report.errors, []);
  assert.ok(report.checks.find((c) => c.name === 'close is idempotent')?.status === 'skip', 'no spec → close check skipped');
  assert.ok(report.warnings.some((w) => /Not able to test alternative render modes/.test(w)));
});

test('wrong observation type fails (obs not in the observation space)', async () => {
  class WrongObs extends RandomStartEnv {
    override async reset(o: ResetOptions = {}): Promise<ResetResult<number>> {
      await super.reset(o);
      return ['zero' as unknown as number, {}];
    }
  }
  const report = await checkEnv(new WrongObs(), { throwOnError: false });
  assert.equal(report.ok, false);
  assert.ok(failed(report).includes('reset seed determinism'));
  assert.ok(report.errors.some((e) => /not within the observation space/.test(e)));
  assert.ok(report.warnings.some((w) => /should be an integer number, actual type: string/.test(w)));
});

test('non-deterministic seeding fails', async () => {
  let counter = 0;
  class IgnoresSeed extends RandomStartEnv {
    override async reset(o: ResetOptions = {}): Promise<ResetResult<number>> {
      await super.reset(o);
      counter += 1;
      return [counter % 1000, {}];
    }
  }
  const report = await checkEnv(new IgnoresSeed(), { throwOnError: false });
  assert.ok(report.errors.some((e) => /reset seed determinism: Using `env.reset\(\{seed: 123\}\)` is non-deterministic/.test(e)), report.errors.join('\n'));

  class NoSuperReset extends Env<number, number> {
    readonly observationSpace = new Discrete(2);
    readonly actionSpace = new Discrete(2);
    override async reset(): Promise<ResetResult<number>> {
      return [0, {}];
    }
    async step(): Promise<StepResult<number>> {
      return [0, 0, false, false, {}];
    }
  }
  const r2 = await checkEnv(new NoSuperReset(), { throwOnError: false });
  assert.ok(r2.errors.some((e) => /does not call `super.reset\(\{seed\}\)`/.test(e)), r2.errors.join('\n'));

  class NondeterministicStep extends RandomStartEnv {
    override async step(a: number): Promise<StepResult<number>> {
      counter += 1;
      return [(this.state + a + counter) % 1000, 0, false, false, {}];
    }
  }
  const r3 = await checkEnv(new NondeterministicStep(), { throwOnError: false });
  assert.deepEqual(failed(r3), ['step determinism']);
  assert.match(r3.errors[0]!, /Deterministic step observations are not equivalent/);
});

test('bad info fails', async () => {
  class ArrayInfo extends RandomStartEnv {
    override async reset(o: ResetOptions = {}): Promise<ResetResult<number>> {
      await super.reset(o);
      return [0, [] as unknown as Record<string, unknown>];
    }
  }
  const report = await checkEnv(new ArrayInfo(), { throwOnError: false });
  assert.ok(report.errors.some((e) => /second element returned by `env.reset\(\)` was not an object, actual type: Array/.test(e)));
  assert.ok(report.checks.some((c) => c.status === 'skip' && /earlier fatal/.test(c.message ?? '')), 'later checks are skipped after a fatal failure');

  class StepInfoString extends RandomStartEnv {
    override async step(): Promise<StepResult<number>> {
      return [0, 0, false, false, 'info' as unknown as Record<string, unknown>];
    }
  }
  const r2 = await checkEnv(new StepInfoString(), { throwOnError: false });
  assert.ok(r2.errors.some((e) => /`info` returned by `step\(\)` must be an object/.test(e)));
});

test('step returning the wrong arity fails', async () => {
  class OldApi extends RandomStartEnv {
    override async step(): Promise<StepResult<number>> {
      return [0, 0, false, {}] as unknown as StepResult<number>;
    }
  }
  const report = await checkEnv(new OldApi(), { throwOnError: false });
  assert.ok(report.errors.some((e) => /five element array.*actual number of elements returned: 4/.test(e)), report.errors.join('\n'));
});

test('checkEnv throws EnvCheckError with the report by default', async () => {
  await assert.rejects(
    () => checkEnv({ reset: () => 1 } as unknown as Env),
    (e: unknown) => e instanceof EnvCheckError && /must inherit from the Env class/.test((e as Error).message) && (e as EnvCheckError & { report: CheckEnvReport }).report.ok === false,
  );
});

test('render and close checks use the spec; wrapped envs get a warning', async () => {
  class BadRender extends CounterEnv {
    override async render(): Promise<string | null> {
      return 42 as unknown as string;
    }
  }
  register({ id: 'BadRender-v0', entryPoint: (kw) => new BadRender(kw) });
  const wrapped = make('BadRender-v0');
  const report = await checkEnv(wrapped, { throwOnError: false });
  assert.ok(report.warnings.some((w) => /ANSI rendering should produce a string, got number/.test(w)));
  assert.ok(report.warnings.some((w) => /different from the unwrapped version/.test(w)));

  class CloseTwiceFails extends CounterEnv {
    private closed = false;
    override async close(): Promise<void> {
      if (this.closed) throw new Error('already closed');
      this.closed = true;
    }
  }
  register({ id: 'CloseTwice-v0', entryPoint: (kw) => new CloseTwiceFails(kw) });
  const r2 = await checkEnv(make('CloseTwice-v0').unwrapped, { throwOnError: false });
  assert.deepEqual(failed(r2), ['close is idempotent']);
  assert.match(r2.errors[0]!, /should be allowed, but it raised an exception: already closed/);
  const r3 = await checkEnv(make('CloseTwice-v0').unwrapped, { skipCloseCheck: true, skipRenderCheck: true });
  assert.ok(r3.ok);

  register({ id: 'Flaky-v0', entryPoint: () => new RandomStartEnv(), nondeterministic: true });
  const r4 = await checkEnv(make('Flaky-v0').unwrapped);
  assert.ok(r4.checks.some((c) => c.name === 'step determinism' && c.status === 'skip'), 'nondeterministic specs skip determinism checks');
});
