/**
 * `longrun eval --agent checkpoint` on a shipped model folder shows the model the same tokens as the in-process
 * rollouts of the run file that trained it (buildRun + AgentLoop, as GRPO's validation),
 * for whole multi-turn episodes, and reports the same rewards. The model is a random tiny-1m with a BPE tokenizer
 * trained as prepare.ts trains one; the held-out task set carries τ²'s policy.md (as `longrun gen tasks` writes it)
 * while the run trained on the compact policy and compact tools, so only the model's longrun.json can get it right.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { stringify } from 'yaml';
import { evalCommand, type EvalCommandOptions } from '../../src/cli/eval.ts';
import { makeAgent, makeUser, runRollouts } from '../../src/domains/retail/synth/rollouts.ts';
import { generateTaskSet, readTaskSet, writeTaskSet } from '../../src/domains/retail/synth/taskset.ts';
import { saveModel } from '../../src/model/checkpoint/model-io.ts';
import { presetConfig } from '../../src/model/config.ts';
import { GptOssModel } from '../../src/model/model.ts';
import { MODEL_SETTINGS_FILE, readModelSettings, shipModelSettings } from '../../src/recipes/model-settings.ts';
import { COMPACT_RETAIL_POLICY, conversationDefaults } from '../../src/recipes/retail/prepare.ts';
import { buildRun, parseRunFile } from '../../src/recipes/train-setup.ts';
import { trainSftTokenizer, type TrajectoryRecord } from '../../src/rl/sft-data.ts';
import { AgentLoop, type Trajectory } from '../../src/rollout/agent-loop.ts';
import { pairSeed } from '../../src/serve/eval/runner.ts';
import { REPO_ROOT, TAU2_RETAIL_DIR } from '../helpers/paths.ts';

const TRIALS = 2;
const EVAL_SEED = 300;

interface Episode {
  taskId: string;
  trial: number;
  reward: number;
  tokens: { prompt: number[]; response: number[]; responseMask: number[] };
}

function readEpisodes(out: string): Map<string, Episode> {
  const lines = readFileSync(join(out, 'trajectories.jsonl'), 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Episode & { status: string });
  for (const l of lines) assert.equal(l.status, 'ok', JSON.stringify(l).slice(0, 400));
  return new Map(lines.map((l) => [`${l.taskId}#${l.trial}`, l]));
}

function assertSameEpisodes(evalEpisodes: Map<string, Episode>, inProcess: Map<string, Trajectory>): void {
  assert.equal(evalEpisodes.size, inProcess.size);
  for (const [key, t] of inProcess) {
    const e = evalEpisodes.get(key);
    assert.ok(e, `eval has no episode ${key}`);
    assert.deepEqual(e.tokens.prompt, t.promptIds, `${key}: the first-turn prompt differs`);
    assert.deepEqual(e.tokens.response, t.responseIds, `${key}: the episode's tokens after the prompt differ`);
    assert.deepEqual(e.tokens.responseMask, t.responseMask, `${key}: the response masks differ`);
    assert.equal(e.reward, t.reward, `${key}: rewards differ`);
  }
}

const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

describe('longrun eval --agent checkpoint reproduces the in-process rollouts of its run file', () => {
  let dir: string;
  let runFile: string;
  let raw: Record<string, any>;
  let shipped: string;
  let heldOut: string;

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'longrun-parity-'));
    const sizes = { products: 20, users: 30, orders: 60 };
    // failed_auth tasks score 1 when the agent writes nothing and the user ends the episode; cancel tasks score 0.
    const families = ['failed_auth', 'cancel'] as const;
    writeTaskSet(join(dir, 'train'), generateTaskSet({ worldSeed: 21, taskSeed: 22, count: 4, sizes, difficulty: 1, families, split: 'train' }), COMPACT_RETAIL_POLICY);
    heldOut = join(dir, 'heldout');
    writeTaskSet(heldOut, generateTaskSet({ worldSeed: 23, taskSeed: 24, count: 3, sizes, difficulty: 1, families, split: 'test' }), readFileSync(join(TAU2_RETAIL_DIR, 'policy.md'), 'utf8'));
    // The tokenizer as prepare.ts trains it: expert conversations rendered with the run's system prompt and tools.
    const train = readTaskSet(join(dir, 'train'));
    const records: TrajectoryRecord[] = [];
    await runRollouts({ domain: train.domain, tasks: train.tasks, agent: makeAgent('expert'), user: makeUser('scripted'), trials: 1, seed: 0, onEpisode: (t) => records.push(t as unknown as TrajectoryRecord) });
    const tokenizer = trainSftTokenizer(records, { vocabSize: 400, format: 'harmony', ...conversationDefaults(train, 'compact') });
    tokenizer.save(join(dir, 'tokenizer.json'));
    const model = new GptOssModel(presetConfig('tiny-1m', { vocab_size: tokenizer.vocabSize, max_position_embeddings: 4096 }), { seed: 3, grads: false });
    saveModel(join(dir, 'sft', 'model'), model);
    model.dispose();
    raw = {
      task: 'retail-synth',
      retail: { tasks: { dataDir: join(dir, 'train'), valDir: heldOut, maxSteps: 200, tools: 'compact' } },
      policy: { type: 'gpt-oss', checkpoint: join(dir, 'sft', 'model'), tokenizer: join(dir, 'tokenizer.json'), format: 'harmony' },
      engine: { type: 'in-process', batching: 'step', maxBatchSize: 4 },
      grpo: { data: { trainBatchSize: 1 }, rollout: { n: 2, temperature: 1, maxTurns: 5, maxResponseTokens: 1024, maxTokensPerTurn: 24 }, trainer: { totalSteps: 1, valTemperature: 1 } },
    };
    runFile = join(dir, 'run.yaml');
    writeFileSync(runFile, stringify(raw));
    shipped = join(dir, 'models', 'tiny');
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  /** The in-process path: the run file built as for training, the agent loop over GRPO's step-batching engine. */
  async function inProcess(temperature: number): Promise<Map<string, Trajectory>> {
    const { run, trainer } = parseRunFile(raw);
    const built = await buildRun(run);
    const r = trainer.rollout;
    const loop = new AgentLoop({ format: built.deps.format, engine: built.deps.engine, sampling: { temperature }, maxTurns: r.maxTurns, maxResponseTokens: r.maxResponseTokens, maxTokensPerTurn: r.maxTokensPerTurn, ...built.deps.loop });
    const out = new Map<string, Trajectory>();
    const env = built.deps.makeValEnv!();
    try {
      for (const taskId of built.deps.valTasks!) {
        for (let trial = 0; trial < TRIALS; trial++) out.set(`${taskId}#${trial}`, await loop.run(env, { seed: pairSeed(EVAL_SEED, taskId, trial), taskId }));
      }
    } finally {
      await built.deps.engine.close?.();
      built.model?.dispose();
    }
    return out;
  }

  it('`longrun model settings --out` ships the model with the run\'s prompt settings', () => {
    const r = shipModelSettings({ checkpoint: join(dir, 'sft', 'model'), runFile, out: shipped });
    const s = readModelSettings(shipped)!.settings;
    assert.equal(r.file, join(shipped, MODEL_SETTINGS_FILE));
    assert.deepEqual(
      { chatFormat: s.chatFormat, tokenizer: s.tokenizer, policy: s.policy, tools: s.tools, toolSet: s.toolSet, user: s.user, temperature: s.temperature, maxTurns: s.maxTurns, maxResponseTokens: s.maxResponseTokens, maxTokensPerTurn: s.maxTokensPerTurn, maxSteps: s.maxSteps },
      { chatFormat: 'harmony', tokenizer: 'tokenizer.json', policy: 'compact', tools: 'compact', toolSet: 'v1', user: 'scripted', temperature: 1, maxTurns: 5, maxResponseTokens: 1024, maxTokensPerTurn: 24, maxSteps: 200 },
    );
    assert.equal(s.source?.runFile, 'run.yaml', 'a path outside the working folder is written as its name only');
    assert.ok(readFileSync(join(shipped, 'tokenizer.json')).equals(readFileSync(join(dir, 'tokenizer.json'))), "the run's tokenizer was copied in");
    assert.ok(readFileSync(join(shipped, 'model.safetensors')).equals(readFileSync(join(dir, 'sft', 'model', 'model.safetensors'))));
    // Idempotent; a different tokenizer in the folder is refused.
    shipModelSettings({ checkpoint: join(dir, 'sft', 'model'), runFile, out: shipped });
    writeFileSync(join(dir, 'other-tokenizer.json'), '{}');
    assert.throws(() => shipModelSettings({ checkpoint: shipped, runFile: writeRun({ ...raw, policy: { ...raw.policy, tokenizer: join(dir, 'other-tokenizer.json') } }) }), /differs from the run's tokenizer/);
  });

  it('through the model server, with no flags but --tasks: the same tokens for every episode and the same mean reward at temperature 1 (seeded)', async () => {
    const out = join(dir, 'eval-t1');
    const args = ['--import', 'tsx', 'src/cli/main.ts', 'eval', '--agent', 'checkpoint', '--checkpoint', shipped, '--tasks', join(heldOut, 'tasks.json'), '--trials', String(TRIALS), '--out', out, '--save-tokens', '--no-progress', '--engine', 'server'];
    const res = await new Promise<{ code: number | null; out: string }>((resolve) => {
      const child = spawn(process.execPath, args, { cwd: REPO_ROOT, env: { ...process.env, OPENAI_API_KEY: '' } });
      let text = '';
      child.stdout.on('data', (d) => (text += d));
      child.stderr.on('data', (d) => (text += d));
      const t = setTimeout(() => child.kill('SIGKILL'), 60_000);
      child.on('close', (code) => {
        clearTimeout(t);
        resolve({ code, out: text });
      });
    });
    assert.equal(res.code, 0, res.out);
    assert.match(res.out, /settings from .*longrun\.json: chat format harmony, tokenizer tokenizer\.json, tool set v1, user scripted, temperature 1, max turns 5, max response tokens 1024, max tokens per turn 24, max steps 200, max errors 10, policy compact, tools compact/);
    const reference = await inProcess(1);
    const episodes = readEpisodes(out);
    assertSameEpisodes(episodes, reference);
    const results = JSON.parse(readFileSync(join(out, 'results.json'), 'utf8'));
    const refMean = mean([...reference.values()].map((t) => t.reward));
    assert.equal(results.metrics.avgReward, refMean);
    assert.ok(refMean > 0 && refMean < 1, `the task set should give mixed rewards, got ${refMean}`);
    assert.ok([...reference.values()].some((t) => t.numTurns > 2), 'episodes run several turns');
  });

  it('in process (the default engine), greedy (--temperature 0 on the command line wins over the file): the same tokens and rewards', async () => {
    const out = join(dir, 'eval-t0');
    const opts: EvalCommandOptions = {
      agent: 'checkpoint', checkpoint: shipped, tasks: join(heldOut, 'tasks.json'), trials: TRIALS, out, saveTokens: true, temperature: 0, progress: false,
      // commander's defaults for the flags not given
      taskSet: 'v1', user: 'ticket', concurrency: 1, maxRequests: 8, timeout: 120, maxRetries: 4, maxSteps: 200, maxErrors: 10, seed: EVAL_SEED,
    };
    const given = new Set(['agent', 'checkpoint', 'tasks', 'trials', 'out', 'saveTokens', 'temperature', 'progress']);
    const lines: string[] = [];
    const log = console.error;
    console.error = (...a: unknown[]) => lines.push(a.join(' '));
    let code: number;
    try {
      code = await evalCommand(opts, (k) => given.has(k));
    } finally {
      console.error = log;
    }
    assert.equal(code, 0, lines.join('\n'));
    assert.ok(lines.some((l) => /overridden by flags: temperature/.test(l)), lines.join('\n'));
    const reference = await inProcess(0);
    assertSameEpisodes(readEpisodes(out), reference);
    const config = JSON.parse(readFileSync(join(out, 'config.json'), 'utf8'));
    assert.equal(config.agentSettings.temperature, 0);
    assert.equal(config.agentSettings.policy, 'compact');
    await assert.rejects(evalCommand({ ...opts, out: join(dir, 'eval-bad'), engine: 'gpu' as never }, (k) => given.has(k)), /--engine must be one of in-process, server/);
  });

  function writeRun(file: Record<string, unknown>): string {
    const path = join(dir, `run-${Math.random().toString(36).slice(2)}.yaml`);
    writeFileSync(path, stringify(file));
    return path;
  }
});
