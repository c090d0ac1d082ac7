/**
 * A run file names the τ² retail envs by id (`env: { id: longrun/retail-v1, split, valSplit, maxTasks, options }`):
 * the retail definitions are registered for `getEnvDefinition` lazily (no τ² data is read until one is looked up),
 * keeping the gym entry points with the retail kwargs (`make`, the env server). The run builds as `longrun train`
 * builds it, its env plays τ² gold replays to reward 1, and `eval --config` finds the same env.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { registerRetailEnvs, RETAIL_ENV_IDS } from '../../../src/domains/retail/register.ts';
import { make } from '../../../src/gym/registry/registry.ts';
import { BpeTokenizer } from '../../../src/llm/bpe.ts';
import { buildRun, parseRunFile, type BuiltRun } from '../../../src/recipes/train-setup.ts';
import { runFileEnv } from '../../../src/serve/eval/env-eval.ts';
import { checkKwargBounds } from '../../../src/serve/env-kwargs.ts';
import { definedEnvIds, getEnvDefinition } from '../../../src/tooluse/api/registry.ts';
import { ToolUseEnv } from '../../../src/tooluse/env.ts';
import { loadRetailTaskSet } from '../../../src/domains/retail/task-set.ts';
import type { Task } from '../../../src/tooluse/tasks.ts';
import { REPO_ROOT, TAU2_RETAIL_DIR } from '../../helpers/paths.ts';

const ID = RETAIL_ENV_IDS.v1;

describe('env: { id: longrun/retail-v1 } in a run file', () => {
  let dir: string;
  let tokenizer: string;
  const runFile = (env: Record<string, unknown>) => ({
    env: { id: ID, split: 'train', valSplit: 'test', maxTasks: 2, options: { dataDir: TAU2_RETAIL_DIR, judge: 'communicate-fallback' }, ...env },
    policy: { type: 'gpt-oss', preset: 'tiny-1m', modelConfig: { max_position_embeddings: 1024 }, tokenizer, format: 'harmony' },
    grpo: { data: { trainBatchSize: 2 }, rollout: { maxTurns: 2 }, trainer: { totalSteps: 1 } },
  });
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'longrun-retail-run-env-'));
    tokenizer = join(dir, 'tokenizer.json');
    BpeTokenizer.train('find the user by email, then get the order details and cancel the pending order '.repeat(8), { vocabSize: 300 }).save(tokenizer);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('builds as `longrun train` does, and its env plays τ² gold replays to reward 1', { timeout: 120_000 }, async () => {
    const { run } = parseRunFile(runFile({}));
    let built: BuiltRun | undefined;
    try {
      built = await buildRun(run);
      const { tasks: train } = loadRetailTaskSet({ dataDir: TAU2_RETAIL_DIR, version: 'v1', split: 'train' });
      const { tasks: test } = loadRetailTaskSet({ dataDir: TAU2_RETAIL_DIR, version: 'v1', split: 'test' });
      assert.deepEqual(built.deps.trainTasks, train.slice(0, 2).map((t) => t.id), 'env.maxTasks: the first two training tasks');
      assert.deepEqual(built.deps.valTasks, test.map((t) => t.id));
      assert.match(built.conversation!.systemPrompt, /retail/i, "τ²'s agent prompt with the retail policy");
      assert.deepEqual(built.conversation!.tools.map((t) => t.function.name).slice(-1), ['done']);
      assert.equal(built.conversation!.tools.length, 17, "v1's 16 tools and τ²'s done");
      let ones = 0;
      for (const task of train.slice(0, 2)) {
        const env = built.deps.makeEnv() as unknown as { reset(o: unknown): Promise<[unknown, Record<string, unknown>]>; step(a: unknown): Promise<[unknown, number, boolean, boolean, Record<string, unknown>]>; close(): Promise<void> | void };
        const [, info] = await env.reset({ seed: 0, options: { taskId: task.id } });
        assert.equal(info.taskId, task.id);
        let last: [unknown, number, boolean, boolean, Record<string, unknown>] | undefined;
        for (const a of (task as Task).evaluation_criteria?.actions ?? []) {
          last = await env.step({ toolCalls: [{ name: a.name, arguments: a.arguments }] });
          assert.equal(last[2] || last[3], false, `task ${task.id}: the episode goes on after ${a.name}`);
        }
        last = await env.step('done()');
        assert.equal(last[2], true, `task ${task.id} ends on done`);
        if (last[1] === 1) ones++;
        await env.close();
      }
      assert.equal(ones, 2, 'both gold replays score 1');
    } finally {
      await built?.close?.();
      built?.model?.dispose();
    }
  });

  it('keeps the retail gym entry points (their kwargs) and registers the definitions without reading τ² data', { timeout: 60_000 }, async () => {
    registerRetailEnvs();
    assert.ok(definedEnvIds({ all: true }).includes(ID) && definedEnvIds({ all: true }).includes(RETAIL_ENV_IDS.v0));
    assert.ok(!definedEnvIds().includes(ID), 'its gym entry point is not the definition’s: the env server treats it as retail');
    assert.doesNotThrow(() => checkKwargBounds(ID, { maxSteps: 5, allMessagesAsObservation: true }));
    const env = make(ID, { dataDir: TAU2_RETAIL_DIR, split: 'test', maxSteps: 20, judge: 'none' });
    assert.ok(env.unwrapped instanceof ToolUseEnv, 'make() still builds the retail ToolUseEnv with retail kwargs');
    await env.close();
    // Registration reads nothing: a process whose data folder does not exist registers the envs, and only a lookup fails.
    const script = "const { registerBuiltinEnvs } = await import('./src/envs.ts'); registerBuiltinEnvs(); const { getEnvDefinition } = await import('./src/tooluse/api/registry.ts'); try { getEnvDefinition('longrun/retail-v1'); } catch (e) { console.log('lookup: ' + e.message); }";
    const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: REPO_ROOT, env: { ...process.env, LONGRUN_TAU2_RETAIL: join(dir, 'no-such-data') } });
    assert.match(stdout, /^lookup: env longrun\/retail-v1: .*no-such-data/m);
  });

  it('checks env.options, and `eval --config` finds the same env with them', async () => {
    await assert.rejects(buildRun(parseRunFile(runFile({ options: { dataDirr: TAU2_RETAIL_DIR } })).run), /env\.options of longrun\/retail-v1: .*dataDirr.*\(known: dataDir, judge, maxSteps, maxErrors, enforceCommunicationProtocol\)/);
    assert.throws(() => parseRunFile(runFile({ export: 'x' })), /env\.export applies to env\.module/);
    const def = await runFileEnv(parseRunFile(runFile({ options: { dataDir: TAU2_RETAIL_DIR, maxSteps: 7, judge: 'none' } })).run, 'run.yaml');
    assert.equal(def.id, ID);
    assert.equal(def.spec.maxSteps, 7, 'the options made the definition');
    assert.equal(getEnvDefinition(ID, { judge: 'none', maxSteps: 7, dataDir: TAU2_RETAIL_DIR }), def, 'one definition per distinct options, in any key order');
    assert.deepEqual((await def.tasks('test')).map((t) => t.id), loadRetailTaskSet({ dataDir: TAU2_RETAIL_DIR, version: 'v1', split: 'test' }).tasks.map((t) => t.id));
  });
});
