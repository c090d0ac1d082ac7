/**
 * `longrun eval --config RUN --checkpoint DIR [--baseline DIR]`, `longrun model settings` and the dashboard on a run
 * whose env is a module of the user's (test/fixtures/envs/counter.ts: rewards 2 or minus the distance to the target,
 * not in [0, 1]). Two random tiny checkpoints play it through the agent loop of training; every number printed and
 * written is checked against the per-episode file.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { stringify } from 'yaml';
import { BpeTokenizer } from '../../src/llm/bpe.ts';
import { saveModel } from '../../src/model/checkpoint/model-io.ts';
import { presetConfig } from '../../src/model/config.ts';
import { GptOssModel } from '../../src/model/model.ts';
import { readModelSettings } from '../../src/recipes/model-settings.ts';
import { buildOverview } from '../../src/serve/dashboard/overview.ts';
import { REPO_ROOT } from '../helpers/paths.ts';

const run = promisify(execFile);
const MODULE = 'test/fixtures/envs/counter.ts';
type Row = Record<string, any>;
const jsonl = (path: string): Row[] => readFileSync(path, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Row);
const cli = (...args: string[]) => run(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], { cwd: REPO_ROOT, maxBuffer: 16 << 20 });

function mean(xs: readonly number[]): number {
  return xs.reduce((a, b) => a + b, 0) / xs.length;
}
function stdErr(xs: readonly number[]): number {
  const m = mean(xs);
  return xs.length > 1 ? Math.sqrt(xs.reduce((a, x) => a + (x - m) ** 2, 0) / (xs.length - 1) / xs.length) : 0;
}
/** Mean reward per task of an eval folder's episodes. */
function perTask(dir: string): Map<string, number> {
  const by = new Map<string, number[]>();
  for (const r of jsonl(join(dir, 'trajectories.jsonl'))) by.set(r.taskId, [...(by.get(r.taskId) ?? []), r.reward]);
  return new Map([...by].map(([k, v]) => [k, mean(v)]));
}

describe('longrun eval --config on an env module', () => {
  let dir: string;
  let runFile: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'longrun-env-eval-'));
    const corpus = 'You operate a counter that starts at 0. Use the tools to change and read it. Bring the counter to 4 with add, then tell me its value. add read n integer';
    const bpe = BpeTokenizer.train(corpus.repeat(4), { vocabSize: 400 });
    for (const [name, seed] of [['a', 1], ['b', 2]] as const) {
      const model = new GptOssModel(presetConfig('tiny-1m', { vocab_size: bpe.vocabSize, max_position_embeddings: 2048 }), { seed, grads: false });
      saveModel(join(dir, name), model);
      model.dispose();
      bpe.save(join(dir, name, 'tokenizer.json'));
    }
    runFile = join(dir, 'run.yaml');
    writeFileSync(runFile, stringify({
      env: { module: MODULE, split: 'train', valSplit: 'test' },
      policy: { type: 'gpt-oss', checkpoint: join(dir, 'a'), tokenizer: join(dir, 'a', 'tokenizer.json'), format: 'harmony' },
      grpo: { data: { trainBatchSize: 2 }, rollout: { maxTurns: 3, maxResponseTokens: 256, maxTokensPerTurn: 12 }, trainer: { totalSteps: 1, valTemperature: 0 } },
    }));
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  it('plays each task of the validation split k times, prints mean ± s.e. and the difference paired with a baseline model', { timeout: 240_000 }, async () => {
    const out = join(dir, 'eval-a');
    const { stdout } = await cli('eval', '--config', runFile, '--checkpoint', join(dir, 'a'), '--trials', '2', '--baseline', join(dir, 'b'), '--out', out, '--no-progress');
    const episodes = jsonl(join(out, 'trajectories.jsonl'));
    assert.deepEqual(episodes.map((e) => `${e.taskId}#${e.trial}`).sort(), ['h4#0', 'h4#1', 'h7#0', 'h7#1']);
    for (const e of episodes) {
      assert.equal(e.status, 'ok');
      assert.equal(e.messages[0].role, 'user');
      assert.match(e.messages[0].content, /^Bring the counter to [47] with add/);
      // Ended by the env: its reward function's number; ended by the agent loop's own limits: 0, as in training.
      if (e.rewardInfo) assert.equal(e.reward, e.rewardInfo.reward);
      else assert.equal(e.reward, 0);
      assert.ok(Number.isFinite(e.reward) && e.reward <= 2, `reward ${e.reward}`);
      assert.ok(e.agentStats.turns >= 1 && e.agentStats.turns <= 3, 'the run file sets maxTurns 3');
    }
    const ours = perTask(out);
    const theirs = perTask(join(out, 'baseline'));
    assert.deepEqual([...theirs.keys()].sort(), ['h4', 'h7'], 'the baseline model was evaluated on the same tasks');
    const summary = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    const rewards = [...ours.values()];
    assert.equal(summary.env, 'fixture/counter-v0');
    assert.equal(summary.split, 'test');
    assert.equal(summary.episodes, 4);
    assert.ok(Math.abs(summary.meanReward - mean(rewards)) < 1e-12);
    assert.ok(Math.abs(summary.stdErr - stdErr(rewards)) < 1e-12);
    assert.deepEqual(Object.keys(summary.byFamily), ['large']);
    const diffs = ['h4', 'h7'].map((t) => ours.get(t)! - theirs.get(t)!);
    assert.ok(Math.abs(summary.baseline.difference - mean(diffs)) < 1e-12);
    assert.ok(Math.abs(summary.baseline.differenceStdErr - stdErr(diffs)) < 1e-12);
    assert.match(stdout, new RegExp(`mean reward ${summary.meanReward.toFixed(4)} ± ${summary.stdErr.toFixed(4)} \\(standard error over tasks\\)`));
    assert.match(stdout, new RegExp(`paired over 2 tasks: [+-]${Math.abs(mean(diffs)).toFixed(4).replace('.', '\\.')} ± ${stdErr(diffs).toFixed(4)}`));
    // The same seeds: the two models' episodes differ only by the model.
    const seeds = (d: string) => jsonl(join(d, 'trajectories.jsonl')).map((e) => `${e.taskId}#${e.trial}:${e.seed}`).sort();
    assert.deepEqual(seeds(out), seeds(join(out, 'baseline')));

    // A baseline given as an eval folder gives the same comparison; a re-run resumes without playing again.
    const again = await cli('eval', '--config', runFile, '--checkpoint', join(dir, 'a'), '--trials', '2', '--baseline', join(out, 'baseline'), '--out', out, '--no-progress');
    const summary2 = JSON.parse(readFileSync(join(out, 'summary.json'), 'utf8'));
    assert.equal(summary2.baseline.difference, summary.baseline.difference);
    assert.equal(summary2.eval.resumedEpisodes, 4);
    assert.equal(jsonl(join(out, 'trajectories.jsonl')).length, 4);
    assert.match(again.stdout, /difference \(checkpoint − baseline\)/);

    // The dashboard reads the folder: the eval as a baseline on the env's own reward scale, its episodes viewable.
    const ov = buildOverview(out);
    const evals = ov.headline.baselines.filter((b) => b.stage !== undefined);
    assert.ok(evals.some((b) => Math.abs(b.reward - JSON.parse(readFileSync(join(out, 'results.json'), 'utf8')).metrics.avgReward) < 1e-12), JSON.stringify(evals));
    assert.ok(ov.episodeSets.some((s) => s.file.endsWith('trajectories.jsonl') && s.episodes === 4));
  });

  it('refuses retail flags with --config and runs that name neither an env nor retail-synth', { timeout: 60_000 }, async () => {
    await assert.rejects(cli('eval', '--config', runFile, '--checkpoint', join(dir, 'a'), '--user', 'scripted', '--out', join(dir, 'x')), /--user applies to a τ² retail evaluation, not to --config/);
    await assert.rejects(cli('eval', '--config', runFile, '--out', join(dir, 'x')), /--config needs --checkpoint/);
    await assert.rejects(cli('eval', '--config', runFile, '--checkpoint', join(dir, 'a'), '--baseline', join(dir, 'nothing'), '--out', join(dir, 'y'), '--trials', '1'), /--baseline .*nothing: neither an eval folder/);
    const toy = join(dir, 'toy.yaml');
    writeFileSync(toy, stringify({ task: 'toy', policy: { type: 'tabular' } }));
    await assert.rejects(cli('eval', '--config', toy, '--checkpoint', join(dir, 'a')), /eval --config takes runs on an env defined with defineEnv/);
  });

  it('a retail-synth run file: the retail evaluation of its validation task set with the scripted user', { timeout: 180_000 }, async () => {
    const tasks = join(dir, 'synth');
    await cli('gen', 'tasks', '--seed', '5', '--count', '2', '--out', tasks);
    const retailRun = join(dir, 'retail.yaml');
    writeFileSync(retailRun, stringify({ task: 'retail-synth', retail: { tasks: { dataDir: tasks, valDir: tasks } }, policy: { type: 'gpt-oss', checkpoint: join(dir, 'a'), tokenizer: join(dir, 'a', 'tokenizer.json') } }));
    const out = join(dir, 'eval-retail');
    const { stdout } = await cli('eval', '--config', retailRun, '--checkpoint', join(dir, 'a'), '--trials', '1', '--max-tokens', '4', '--out', out, '--no-progress');
    assert.match(stdout, /retail-synth run: the scripted user on .*synth\/tasks\.json/);
    const config = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
    assert.deepEqual([config.user, config.tasksFile, config.trials, config.taskIds.length], ['scripted', join(tasks, 'tasks.json'), 1, 2]);
    assert.equal(jsonl(join(out, 'trajectories.jsonl')).length, 2);
    assert.match(stdout, /avg reward: /, 'the retail summary');
  });

  it('`longrun model settings` writes the settings of a run on an env module: the env instead of a policy text', { timeout: 60_000 }, async () => {
    const { stdout } = await cli('model', 'settings', '--checkpoint', join(dir, 'b'), '--from-run', runFile);
    assert.match(stdout, /the instructions of env test\/fixtures\/envs\/counter\.ts/);
    const found = readModelSettings(join(dir, 'b'));
    assert.ok(found);
    const s = found.settings;
    assert.deepEqual(s.env, { module: MODULE });
    assert.equal(s.policy, undefined);
    assert.equal(s.chatFormat, 'harmony');
    assert.deepEqual([s.maxTurns, s.maxResponseTokens, s.maxTokensPerTurn, s.temperature], [3, 256, 12, 0]);
    assert.ok(existsSync(join(dir, 'b', 'tokenizer.json')));
  });
});
