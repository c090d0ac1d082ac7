import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { calledToolNames, goldActionShare, withActionCredit } from '../../src/rl/action-credit.ts';
import { parseTrainerConfig } from '../../src/rl/config.ts';
import { GrpoTrainer } from '../../src/rl/trainer.ts';
import { createToySetup } from '../../src/recipes/toy/toy-task.ts';
import type { AgentEnv } from '../../src/rollout/agent-loop.ts';
import type { ActionCheck } from '../../src/tooluse/evaluator.ts';

describe('gold-action credit (training-only partial reward)', () => {
  /** One of the evaluator's gold-action checks (tooluse/evaluator.ts ActionCheck). */
  const check = (actionMatch: boolean, toolType: 'read' | 'write' | null = null, name = 'some_tool'): ActionCheck => ({ action: { action_id: name, requestor: 'assistant', name, arguments: {}, info: null, compare_args: null }, actionMatch, actionReward: actionMatch ? 1 : 0, toolType });

  it('reads the matched share of gold actions from the reward info', () => {
    const checks = (...m: boolean[]) => ({ actionChecks: m.map((actionMatch) => check(actionMatch)) });
    assert.equal(goldActionShare(checks(true, false, true, true)), 0.75);
    assert.equal(goldActionShare(checks(false)), 0);
    assert.equal(goldActionShare({ actionChecks: [] }), 0);
    assert.equal(goldActionShare({ actionChecks: null }), 0, 'a premature end has no action checks');
    assert.equal(goldActionShare(null), 0, 'an env that reported no reward info');
  });

  it("actions 'writes': only the gold writes count; no credit on tasks without one", () => {
    const info = { actionChecks: [check(true, 'read'), check(true, 'read'), check(false, 'write'), check(true, 'write')] };
    assert.equal(goldActionShare(info), 0.75);
    assert.equal(goldActionShare(info, 'all'), 0.75);
    assert.equal(goldActionShare(info, 'writes'), 0.5);
    assert.equal(goldActionShare({ actionChecks: [check(true, 'read')] }, 'writes'), 0, 'reads only: nothing to credit');
  });

  it("actions 'writes-graded': a matched write 1, the right write tool with other arguments ½", () => {
    const info = { actionChecks: [check(true, 'read', 'get_order_details'), check(false, 'write', 'cancel_pending_order'), check(true, 'write', 'modify_user_address')] };
    const called = calledToolNames([
      { role: 'assistant', toolCalls: [{ name: 'get_order_details' }, { name: 'cancel_pending_order' }] },
      { role: 'user', toolCalls: [{ name: 'modify_user_address' }] },
      { role: 'assistant', toolCalls: null },
    ]);
    assert.deepEqual([...called].sort(), ['cancel_pending_order', 'get_order_details'], 'the agent\'s calls only');
    assert.equal(goldActionShare(info, 'writes-graded', called), (0.5 + 1) / 2);
    assert.equal(goldActionShare(info, 'writes-graded', new Set()), 1 / 2, 'no call of the unmatched tool: no half credit');
    assert.equal(goldActionShare(info, 'writes', called), 1 / 2);
  });

  it('r + (1 − r) · w · f: full success stays 1, failures earn a share of w', () => {
    assert.equal(withActionCredit(1, 0.25, 0.5), 1);
    assert.equal(withActionCredit(0, 0.75, 0.5), 0.375);
    assert.equal(withActionCredit(0, 1, 0.5), 0.5);
    assert.equal(withActionCredit(0, 0.5, 0), 0);
    assert.equal(withActionCredit(0.5, 1, 0.5), 0.75);
    assert.throws(() => withActionCredit(0, 0.5, 1.5), /weight must be in \[0, 1\]/);
    assert.throws(() => withActionCredit(0, 2, 0.5), /share must be in \[0, 1\]/);
    assert.throws(() => parseTrainerConfig({ data: { trainBatchSize: 1 }, trainer: { totalSteps: 1 }, algorithm: { actionCredit: { enable: true, weight: 2 } } }), /weight/);
    assert.deepEqual(parseTrainerConfig({ data: { trainBatchSize: 1 }, trainer: { totalSteps: 1 } }).algorithm.actionCredit, { enable: false, weight: 0.5, actions: 'all' });
    assert.throws(() => parseTrainerConfig({ data: { trainBatchSize: 1 }, trainer: { totalSteps: 1 }, algorithm: { actionCredit: { enable: true, actions: 'reads' } } }), /actions/);
  });

  it('the trainer trains on the shaped reward and reports the gold-action share; validation keeps the task reward', async () => {
    // The toy env with action checks attached at episode end: every other episode matched 1 of 2 gold actions, the rest none.
    const run = async (enable: boolean) => {
      const s = createToySetup();
      let episode = 0;
      const makeEnv = (): AgentEnv => {
        const env = s.makeEnv() as AgentEnv;
        return {
          reset: (o) => env.reset(o),
          step: async (a) => {
            const [obs, r, term, trunc, info] = await env.step(a);
            if (!(term || trunc)) return [obs, r, term, trunc, info];
            const matched = episode++ % 2 === 0;
            return [obs, r, term, trunc, { ...info, rewardInfo: { ...(info.rewardInfo as object), actionChecks: [check(matched), check(false)] } }];
          },
        };
      };
      const config = parseTrainerConfig({
        data: { trainBatchSize: 4 }, rollout: { n: 8, maxTurns: 3, maxResponseTokens: 40, concurrency: 4 },
        algorithm: { actionCredit: { enable, weight: 0.4 } }, trainer: { totalSteps: 2, seed: 1, testFreq: 2, valN: 4 },
      });
      const t = new GrpoTrainer({ config, policy: s.policy, engine: s.engine, format: s.format, makeEnv, trainTasks: s.taskIds, valTasks: s.taskIds, padId: s.padId });
      return t.fit();
    };
    const on = await run(true);
    const off = await run(false);
    for (const h of on.history) {
      assert.ok(h['reward/gold_action_share'] > 0 && h['reward/gold_action_share'] < 0.5, `share ${h['reward/gold_action_share']}`);
      assert.ok(h['reward/shaped_mean'] > h['reward/mean'], 'failed episodes earned credit');
      assert.ok(h['reward/shaped_mean'] <= h['reward/mean'] + 0.4 * 0.5 + 1e-9);
    }
    assert.equal(off.history[0]['reward/shaped_mean'], off.history[0]['reward/mean']);
    // Step 1 is sampled from the same weights with the same seed: the same episodes, only the training reward differs.
    assert.equal(on.history[0]['reward/mean'], off.history[0]['reward/mean']);
    assert.equal(on.validations[0]['val/reward_mean'], off.validations[0]['val/reward_mean'], 'validation before training uses the task reward');
    assert.ok(on.validations.every((v) => v['val/reward_mean'] <= 1));
  });

  it('partial credit does not earn a full-size advantage: groups without a success get advantages of the credit\'s size', async () => {
    // Every episode fails the task (reward 0); every other one matched 1 of 2 gold actions: shaped rewards 0 or 0.2.
    const run = async (normAdvByStdInGrpo: boolean) => {
      const s = createToySetup();
      let episode = 0;
      const makeEnv = (): AgentEnv => {
        const env = s.makeEnv() as AgentEnv;
        return {
          reset: (o) => env.reset(o),
          step: async (a) => {
            const [obs, , term, trunc, info] = await env.step(a);
            if (!(term || trunc)) return [obs, 0, term, trunc, info];
            const matched = episode++ % 2 === 0;
            return [obs, 0, term, trunc, { ...info, rewardInfo: { ...(info.rewardInfo as object), actionChecks: [check(matched), check(false)] } }];
          },
        };
      };
      const config = parseTrainerConfig({
        data: { trainBatchSize: 4 }, rollout: { n: 8, maxTurns: 3, maxResponseTokens: 40, concurrency: 4 },
        algorithm: { normAdvByStdInGrpo, actionCredit: { enable: true, weight: 0.4 } }, trainer: { totalSteps: 1, seed: 1 },
      });
      const t = new GrpoTrainer({ config, policy: s.policy, engine: s.engine, format: s.format, makeEnv, trainTasks: s.taskIds, padId: s.padId });
      return (await t.fit()).history[0];
    };
    const grpo = await run(true);
    assert.equal(grpo['reward/mean'], 0);
    assert.ok(grpo['reward/shaped_mean'] > 0 && grpo['adv/zero_groups'] < 1, 'some groups differ by credit');
    assert.ok(grpo['adv/mean_abs'] > 0 && grpo['adv/mean_abs'] <= 0.2 / 2 + 1e-6, `|A| ${grpo['adv/mean_abs']}: at most half the 0.2 credit (float32 rewards)`);
    // The same as Dr.GRPO (no std normalisation) for these groups.
    assert.equal(grpo['adv/mean_abs'], (await run(false))['adv/mean_abs']);
  });

  it('trainer.valBeforeTrain: false skips the step-0 validation only', async () => {
    const s = createToySetup();
    const config = parseTrainerConfig({
      data: { trainBatchSize: 2 }, rollout: { n: 4, maxTurns: 3, maxResponseTokens: 40, concurrency: 4 },
      trainer: { totalSteps: 2, seed: 1, testFreq: 1, valN: 2, valBeforeTrain: false },
    });
    const t = new GrpoTrainer({ config, policy: s.policy, engine: s.engine, format: s.format, makeEnv: s.makeEnv, trainTasks: s.taskIds, valTasks: s.taskIds, padId: s.padId });
    const { validations } = await t.fit();
    assert.equal(validations.length, 2, 'after steps 1 and 2, not before training');
    assert.equal(parseTrainerConfig({ data: { trainBatchSize: 1 }, trainer: { totalSteps: 1 } }).trainer.valBeforeTrain, true);
  });
});
