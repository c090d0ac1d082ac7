import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { registerBuiltinEnvs } from '../../src/envs.ts';
import { checkEnv, formatCheckReport, make, registeredIds, spec, type Env } from '../../src/gym/index.ts';
import { REPO_ROOT, TAU2_RETAIL_DIR } from '../helpers/paths.ts';

registerBuiltinEnvs();

/**
 * The checker tests API conformance, not scores, so a judge that marks every natural-language assertion unmet
 * stands in for the LLM judge that retail tasks graded on NL assertions require.
 */
const UNMET_JUDGE = {
  judge: async (request: { assertions: readonly string[] }) => request.assertions.map((a) => ({ expectedOutcome: a, reasoning: 'test stub', metExpectation: false })),
};

/** Retail envs read the τ²-bench data (and may need a judge); everything else needs no kwargs. */
function kwargsFor(id: string): Record<string, unknown> {
  if (!/retail|tau2/i.test(id)) return {};
  return { ...(spec(id).kwargs.dataDir === undefined ? { dataDir: TAU2_RETAIL_DIR } : {}), judge: UNMET_JUDGE };
}

test('registerBuiltinEnvs is idempotent and registers the toy envs', () => {
  registerBuiltinEnvs();
  registerBuiltinEnvs();
  const ids = registeredIds();
  assert.ok(ids.includes('GuessNumber-v0') && ids.includes('ReverseText-v0'));
  if (existsSync(join(REPO_ROOT, 'src', 'domains', 'retail', 'register.ts'))) {
    assert.ok(ids.some((id) => /retail/i.test(id)), 'retail envs are registered once register.ts exists');
  }
});

test('checkEnv passes on every registered env', async () => {
  for (const id of registeredIds()) {
    const env: Env = make(id, kwargsFor(id));
    try {
      const report = await checkEnv(env.unwrapped, { throwOnError: false });
      assert.ok(report.ok, formatCheckReport(report));
    } finally {
      await env.close();
    }
  }
});

test('toy env factories reject unknown kwargs like Python does', () => {
  assert.throws(() => make('GuessNumber-v0', { nn: 3 }), /GuessNumberEnv got unexpected keyword argument\(s\) 'nn'; it accepts n, renderMode/);
  assert.throws(() => make('ReverseText-v0', { numWords: 0 }), /numWords must be a positive integer/);
});

test('GuessNumber: seeded play is reproducible and binary search wins within the limit', async () => {
  const play = async (seed: number) => {
    const env = make<number, number>('GuessNumber-v0');
    const [obs] = await env.reset({ seed });
    let lo = 0;
    let hi = 15;
    const log: unknown[] = [obs];
    for (;;) {
      const guess = Math.floor((lo + hi) / 2);
      const [o, r, term, trunc] = await env.step(guess);
      log.push([guess, o, r, term, trunc]);
      if (o === 1) hi = guess - 1;
      if (o === 2) lo = guess + 1;
      if (term || trunc) return { log, reward: r, term };
    }
  };
  const a = await play(3);
  assert.deepEqual(await play(3), a);
  assert.equal(a.reward, 1);
  assert.equal(a.term, true);
  assert.ok(a.log.length <= 6, 'binary search over 16 numbers needs at most 5 guesses');
});

test('ReverseText: reward only at the end, Unicode reversal by code points', async () => {
  const env = make<string, string>('ReverseText-v0', { numWords: 2, renderMode: 'ansi' });
  let [word] = await env.reset({ seed: 11 });
  const rewards: number[] = [];
  let done = false;
  let turn = 0;
  while (!done) {
    const answer = turn === 0 ? Array.from(word).reverse().join('') : 'wrong';
    const [next, r, term] = await env.step(answer);
    rewards.push(r);
    word = next;
    done = term;
    turn += 1;
  }
  assert.deepEqual(rewards, [0, 0.5]);
  assert.match((await env.render()) as string, /answer: .* \(correct\)/);
  const unicode = make<string, string>('ReverseText-v0', { numWords: 1 });
  for (let seed = 0; seed < 40; seed++) {
    const [w] = await unicode.reset({ seed });
    if (Array.from(w).every((c) => c.codePointAt(0)! < 0x100)) continue;
    const [, r] = await unicode.step(Array.from(w).reverse().join(''));
    assert.equal(r, 1, `reversing ${w} by code points`);
    return;
  }
  assert.fail('no seed in 0..39 produced a non-Latin-1 word');
});
