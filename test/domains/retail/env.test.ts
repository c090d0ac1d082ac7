import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { checkEnv, formatCheckReport } from '../../../src/gym/checker/check-env.ts';
import { make } from '../../../src/gym/registry/registry.ts';
import { RETAIL_ENV_IDS, registerRetailEnvs } from '../../../src/domains/retail/register.ts';
import type { ToolUseEnv } from '../../../src/tooluse/env.ts';
import type { Judge, RewardInfo } from '../../../src/tooluse/evaluator.ts';
import { toFunctionalFormat } from '../../../src/tooluse/messages.ts';
import { getTask } from '../../../src/tooluse/tasks.ts';
import type { ToolUseAction, ToolUseObservation } from '../../../src/tooluse/spaces.ts';
import { TAU2_RETAIL_DIR } from '../../helpers/paths.ts';

registerRetailEnvs();

describe('longrun/retail envs', () => {
  it('play a v0 task with its gold actions as functional strings and score it 1', async () => {
    const env = make<ToolUseObservation, ToolUseAction>(RETAIL_ENV_IDS.v0, { dataDir: TAU2_RETAIL_DIR });
    const inner = env.unwrapped as ToolUseEnv;
    const [obs, info] = await env.reset({ seed: 0, options: { taskId: '0' } });
    assert.match(obs.text, /^user: You received your order #W2378156/);
    assert.equal((info.tools as unknown[]).length, 16); // 15 v0 tools + done
    const task = getTask(inner.tasks, '0');
    for (const action of task.evaluation_criteria!.actions!) {
      const [o, reward, terminated] = await env.step(toFunctionalFormat(action));
      assert.match(o.text, /^tool: /);
      assert.deepEqual([reward, terminated], [0, false]);
    }
    const [, reward, terminated, truncated, end] = await env.step('done()');
    assert.deepEqual([reward, terminated, truncated], [1, true, false]);
    assert.deepEqual((end.rewardInfo as RewardInfo).rewardBreakdown, { DB: 1, COMMUNICATE: 1 });
  });

  it('use the train/test split kwarg and pick tasks from it', async () => {
    const judge: Judge = { judge: async (req) => req.assertions.map((a) => ({ expectedOutcome: a, reasoning: 'stub', metExpectation: false })) };
    const env = make<ToolUseObservation, ToolUseAction>(RETAIL_ENV_IDS.v1, { dataDir: TAU2_RETAIL_DIR, split: 'test', judge });
    const inner = env.unwrapped as ToolUseEnv;
    assert.equal(inner.tasks.length, 40);
    const [, info] = await env.reset({ seed: 5 });
    assert.ok(inner.tasks.some((t) => t.id === info.taskId));
    // Task 36 has NL assertions; the stub judge fails them, so even the gold DB state scores 0 under v1.0.
    await env.reset({ options: { taskId: '36' } });
    for (const a of getTask(inner.tasks, '36').evaluation_criteria!.actions!) await env.step({ toolCalls: [{ name: a.name, arguments: a.arguments }] });
    const [, reward, , , end] = await env.step('done()');
    assert.equal(reward, 0);
    assert.deepEqual((end.rewardInfo as RewardInfo).rewardBreakdown, { DB: 1, NL_ASSERTION: 0 });
    assert.throws(() => make(RETAIL_ENV_IDS.v1, { dataDir: TAU2_RETAIL_DIR, split: 'dev' }), /Unknown task split 'dev'/);
    assert.throws(() => make(RETAIL_ENV_IDS.v1, { dataDir: TAU2_RETAIL_DIR, colour: 'red' }), /Unknown retail env kwargs: colour/);
  });

  it('pass checkEnv', async () => {
    const env = make(RETAIL_ENV_IDS.v0, { dataDir: TAU2_RETAIL_DIR, renderMode: 'ansi', disableEnvChecker: true });
    const report = await checkEnv(env.unwrapped, { throwOnError: false });
    assert.ok(report.ok, formatCheckReport(report));
  });

  it('grade v1 NL assertions with the communicate-fallback judge when no judge is given, and refuse them with judge none', async () => {
    const env = make<ToolUseObservation, ToolUseAction>(RETAIL_ENV_IDS.v1, { dataDir: TAU2_RETAIL_DIR });
    const inner = env.unwrapped as ToolUseEnv;
    // Task 36 has NL assertions and communicate_info; the gold actions alone say nothing to the user, so the
    // fallback judge (communicate rule) fails the assertions; saying every communicate_info string passes them.
    const task = getTask(inner.tasks, '36');
    const info = task.evaluation_criteria!.communicate_info ?? [];
    assert.ok(info.length > 0);
    for (const say of [false, true]) {
      await env.reset({ options: { taskId: '36' } });
      for (const a of task.evaluation_criteria!.actions!) await env.step({ toolCalls: [{ name: a.name, arguments: a.arguments }] });
      // The ticket user ends the episode (###STOP###) after an agent message that asks nothing.
      const [, reward, terminated, , end] = say ? await env.step({ content: `To confirm: ${info.join(', ')}.` }) : await env.step('done()');
      assert.equal(terminated, true);
      assert.equal(reward, say ? 1 : 0);
      assert.deepEqual((end.rewardInfo as RewardInfo).rewardBreakdown, { DB: 1, NL_ASSERTION: say ? 1 : 0 });
    }
    const strict = make<ToolUseObservation, ToolUseAction>(RETAIL_ENV_IDS.v1, { dataDir: TAU2_RETAIL_DIR, judge: 'none' });
    await assert.rejects(strict.reset({ options: { taskId: '36' } }), /judge/i);
  });
});
