import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { Command } from 'commander';
import { stringify } from 'yaml';
import { register as registerModel } from '../../src/cli/model.ts';
import { resolveCheckpointOptions, type EvalCommandOptions } from '../../src/cli/eval.ts';
import { generateTaskSet, readTaskSet, writeTaskSet } from '../../src/domains/retail/synth/taskset.ts';
import {
  agentPrompt,
  MODEL_SETTINGS_FILE,
  readModelSettings,
  settingsFromRun,
  writeModelSettings,
  type ModelSettingsInput,
} from '../../src/recipes/model-settings.ts';
import { COMPACT_RETAIL_POLICY, conversationDefaults } from '../../src/recipes/retail/prepare.ts';
import { DONE_TOOL_SCHEMA } from '../../src/tooluse/env.ts';

const valid: ModelSettingsInput = {
  format: 'longrun-model-settings', version: 1, chatFormat: 'harmony', policy: 'compact', tools: 'compact', temperature: 1, maxTurns: 24, maxResponseTokens: 4608, maxTokensPerTurn: 160,
};

describe('model settings (longrun.json)', () => {
  let dir: string;
  let trainDir: string;
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'longrun-settings-'));
    trainDir = join(dir, 'train');
    writeTaskSet(trainDir, generateTaskSet({ worldSeed: 5, taskSeed: 6, count: 2, sizes: { products: 20, users: 20, orders: 40 }, difficulty: 1, split: 'train' }), COMPACT_RETAIL_POLICY);
  });
  after(() => rmSync(dir, { recursive: true, force: true }));

  const folder = (name: string, content?: string) => {
    const d = join(dir, name);
    mkdirSync(d, { recursive: true });
    if (content !== undefined) writeFileSync(join(d, MODEL_SETTINGS_FILE), content);
    return d;
  };

  it('round-trips with defaults filled in; a folder without the file has none', () => {
    const d = folder('ok');
    writeModelSettings(d, valid);
    const back = readModelSettings(d)!.settings;
    assert.equal(back.tokenizer, 'tokenizer.json');
    assert.equal(back.toolSet, 'v1');
    assert.equal(back.user, 'scripted');
    assert.equal(back.maxSteps, 200);
    assert.equal(back.onParseError, 'send-text');
    assert.equal(readModelSettings(folder('none')), null);
  });

  it('refuses a corrupt file, another format, an unknown version and a bad field, naming the file', () => {
    const file = (d: string) => join(d, MODEL_SETTINGS_FILE).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
    const corrupt = folder('corrupt', '{"format": "longrun-model-settings", ');
    assert.throws(() => readModelSettings(corrupt), new RegExp(`^Error: ${file(corrupt)}: not valid JSON`));
    const other = folder('other', JSON.stringify({ format: 'something-else', version: 1 }));
    assert.throws(() => readModelSettings(other), new RegExp(`${file(other)}: not a longrun model-settings file`));
    const future = folder('future', JSON.stringify({ ...valid, version: 2 }));
    assert.throws(() => readModelSettings(future), new RegExp(`${file(future)}: model settings version 2 is not supported \\(this longrun reads version 1\\)`));
    const bad = folder('bad', JSON.stringify({ ...valid, tools: 'fancy', extra: 1 }));
    assert.throws(() => readModelSettings(bad), (e: Error) => e.message.startsWith(`${join(bad, MODEL_SETTINGS_FILE)}: invalid model settings`) && /tools:/.test(e.message) && /extra/.test(e.message));
    const array = folder('array', '[]');
    assert.throws(() => readModelSettings(array), /must be a JSON object/);
  });

  it('the compact prompt is the one buildRun gives the rollouts (τ² agent prompt, compact tools with done last)', () => {
    const set = readTaskSet(trainDir);
    const expected = conversationDefaults(set, 'compact');
    const p = agentPrompt('compact', 'compact');
    assert.equal(p.systemPrompt, expected.systemPrompt);
    const envTools = [...set.domain.tools.map((t) => t.schema), DONE_TOOL_SCHEMA];
    assert.deepEqual(p.tools(envTools), expected.tools);
    assert.equal(p.tools(envTools).at(-1)!.function.name, 'done');
    assert.deepEqual(agentPrompt({ text: 'Be nice.' }, 'full').tools(envTools), envTools);
    assert.match(agentPrompt({ text: 'Be nice.' }, 'full').systemPrompt, /<policy>\nBe nice\.\n<\/policy>/);
  });

  it('from a run file: GRPO limits and validation temperature; inline text for a policy that is not the compact one', () => {
    const run = {
      task: 'retail-synth', retail: { tasks: { dataDir: trainDir, tools: 'compact', maxSteps: 150 } },
      policy: { type: 'gpt-oss', preset: 'tiny-1m', tokenizer: 'o200k_harmony', format: 'hermes' },
      grpo: { data: { trainBatchSize: 1 }, rollout: { maxTurns: 12, maxResponseTokens: 2000, maxTokensPerTurn: 100, topK: 20 }, trainer: { totalSteps: 1, valTemperature: 0.7 } },
    };
    const s = settingsFromRun(run, { runFile: 'presets/x.yaml' });
    assert.deepEqual(
      { chatFormat: s.chatFormat, tokenizer: s.tokenizer, policy: s.policy, tools: s.tools, temperature: s.temperature, topK: s.topK, maxTurns: s.maxTurns, maxResponseTokens: s.maxResponseTokens, maxTokensPerTurn: s.maxTokensPerTurn, maxSteps: s.maxSteps, source: s.source },
      { chatFormat: 'hermes', tokenizer: 'o200k_harmony', policy: 'compact', tools: 'compact', temperature: 0.7, topK: 20, maxTurns: 12, maxResponseTokens: 2000, maxTokensPerTurn: 100, maxSteps: 150, source: { runFile: 'presets/x.yaml' } },
    );
    const custom = join(dir, 'custom');
    writeTaskSet(custom, generateTaskSet({ worldSeed: 7, taskSeed: 8, count: 1, sizes: { products: 20, users: 20, orders: 40 }, difficulty: 1, split: 'train' }), 'Only cancel orders.');
    assert.deepEqual(settingsFromRun({ ...run, retail: { tasks: { ...run.retail.tasks, dataDir: custom } } }).policy, { text: 'Only cancel orders.' });
    // Without the task folder, the data stage (retail.prepare) names the policy.
    const prepared = { ...run, retail: { tasks: { ...run.retail.tasks, dataDir: join(dir, 'gone') }, prepare: { dir: join(dir, 'gone-data'), tasks: { train: 1, validation: 1, policy: 'compact' }, tokenizer: { vocabSize: 300 } } } };
    assert.equal(settingsFromRun(prepared).policy, 'compact');
  });

  it('refuses runs it cannot describe, saying what is missing', () => {
    const base = { task: 'retail-synth', retail: { tasks: { dataDir: trainDir, tools: 'compact' } }, policy: { type: 'gpt-oss', preset: 'tiny-1m', tokenizer: 'o200k_harmony' } };
    assert.throws(() => settingsFromRun(base, { runFile: 'base.yaml' }), /base\.yaml has no grpo section .*give --max-turns, --max-response-tokens, --temperature/);
    assert.equal(settingsFromRun(base, { overrides: { maxTurns: 8, maxResponseTokens: 900, temperature: 1 } }).maxTurns, 8);
    assert.throws(() => settingsFromRun({ task: 'toy', policy: base.policy }, { runFile: 'toy.yaml' }), /task retail-synth runs .*task is toy/);
    assert.throws(() => settingsFromRun({ ...base, retail: { tasks: { dataDir: join(dir, 'missing') } } }, { overrides: { maxTurns: 1, maxResponseTokens: 1, temperature: 1 } }), /cannot tell the policy text: .*missing.*policy\.md does not exist/);
  });

  it('`longrun model settings` writes the file into the model folder; an existing different one needs --force', async () => {
    const model = folder('model');
    writeFileSync(join(model, 'config.json'), '{}');
    writeFileSync(join(dir, 'tok.json'), '{"fake": true}');
    const runFile = join(dir, 'base.yaml');
    writeFileSync(runFile, stringify({ task: 'retail-synth', retail: { tasks: { dataDir: trainDir, tools: 'compact' } }, policy: { type: 'gpt-oss', preset: 'tiny-1m', tokenizer: join(dir, 'tok.json') } }));
    const cli = (extra: string[]) => {
      const program = new Command().exitOverride();
      registerModel(program);
      return program.parseAsync(['node', 'longrun', 'model', 'settings', '--checkpoint', model, '--from-run', runFile, ...extra]);
    };
    const log = console.log;
    const printed: string[] = [];
    console.log = (...a: unknown[]) => printed.push(a.join(' '));
    try {
      await cli(['--temperature', '1', '--max-turns', '20', '--max-response-tokens', '3000']);
      assert.equal(readModelSettings(model)!.settings.maxTurns, 20);
      assert.equal(readFileSync(join(model, 'tokenizer.json'), 'utf8'), '{"fake": true}');
      await assert.rejects(cli(['--temperature', '1', '--max-turns', '30', '--max-response-tokens', '3000']), /already holds other settings \(maxTurns differ\); pass --force/);
      await cli(['--temperature', '1', '--max-turns', '30', '--max-response-tokens', '3000', '--force']);
      assert.equal(readModelSettings(model)!.settings.maxTurns, 30);
    } finally {
      console.log = log;
    }
    assert.ok(printed.some((l) => /wrote .*longrun\.json: chat format harmony, policy compact, tools compact/.test(l)), printed.join('\n'));
  });

  it('eval: the file gives the defaults, explicit flags win, and the run says which is which', () => {
    const model = folder('eval-model');
    writeModelSettings(model, { ...valid, maxSteps: 120 });
    const opts = { agent: 'checkpoint', checkpoint: model, taskSet: 'v1', user: 'ticket', trials: 1, concurrency: 1, maxRequests: 8, timeout: 120, maxRetries: 4, maxSteps: 200, maxErrors: 10, seed: 300, out: join(dir, 'o'), progress: false, maxTurns: 9 } as EvalCommandOptions;
    const { options, lines } = resolveCheckpointOptions(opts, (k) => k === 'maxTurns' || k === 'agent' || k === 'checkpoint');
    assert.equal(options.user, 'scripted');
    assert.equal(options.maxSteps, 120);
    assert.equal(options.maxTurns, 9);
    assert.equal(options.checkpointAgent!.maxTurns, 9);
    assert.equal(options.checkpointAgent!.maxTokensPerTurn, 160);
    assert.equal(options.checkpointAgent!.sampling.temperature, 1);
    assert.equal(options.tokenizer, join(model, 'tokenizer.json'));
    assert.match(lines[0]!, /settings from .*longrun\.json: .*user scripted.*max steps 120.*policy compact, tools compact; overridden by flags: max turns$/);
    // Without a file: the task set's prompt, and a line that says so.
    const bare = resolveCheckpointOptions({ ...opts, checkpoint: folder('bare') }, (k) => k === 'agent' || k === 'checkpoint');
    assert.equal(bare.options.checkpointAgent!.systemPrompt, undefined);
    assert.match(bare.lines[0]!, /no .*longrun\.json: the task set.s policy\.md and the tools in full/);
    assert.throws(() => resolveCheckpointOptions({ ...opts, agent: 'openai', tools: 'compact' }, (k) => k === 'tools'), /--tools apply to --agent checkpoint only/);
    assert.throws(() => resolveCheckpointOptions({ ...opts, tools: 'fancy' }, (k) => k === 'tools'), /--tools must be full or compact/);
  });
});
