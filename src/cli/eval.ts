import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { SingleBar } from 'cli-progress';
import type { Command } from 'commander';
import { runEval, type EvalSummary } from '../serve/eval/runner.ts';
import { AGENT_KINDS, buildEval, USER_KINDS, type EvalCliOptions } from '../serve/eval/setup.ts';
import { FALLBACK_JUDGE_NAME } from '../tooluse/fallback-judge.ts';
import { CHECKPOINT_ENGINES, type CheckpointEngine, withCheckpointAgent, type CheckpointAgentSettings } from '../serve/eval/checkpoint-agent.ts';
import { evalRunFileEnv, formatEnvEvalSummary } from '../serve/eval/env-eval.ts';
import { readConfigFile } from '../recipes/config-file.ts';
import { parseStagesRunFile } from '../recipes/train-setup.ts';
import { evalFolderProposalTable, formatFamilyProposalTable } from '../recipes/retail/proposals.ts';
import { agentPrompt, describePolicy, MODEL_SETTINGS_FILE, policySettingFromFlag, readModelSettings, toolsInStyle, type ModelSettings, type PolicySetting } from '../recipes/model-settings.ts';
import { resolveModelFolder } from './checkpoint-arg.ts';

function int(name: string, min: number) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer >= ${min}, got ${JSON.stringify(v)}`);
    return n;
  };
}

function num(name: string) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a non-negative number, got ${JSON.stringify(v)}`);
    return n;
  };
}

export function formatSummary(s: EvalSummary): string {
  const lines = [`episodes: ${s.finished}/${s.planned} finished, ${s.infrastructureErrors} infrastructure error(s)${s.complete ? '' : ' (INCOMPLETE: re-run with the same --out to retry)'}`];
  if (s.metrics) {
    lines.push(`avg reward: ${s.metrics.avgReward.toFixed(4)} ± ${s.metrics.rewardStdErr.toFixed(4)} (standard error over tasks)   success rate: ${s.metrics.successRate.toFixed(4)}`);
    lines.push(`pass^k: ${Object.entries(s.metrics.passHatK).map(([k, v]) => `pass^${k}=${v.toFixed(4)}`).join('  ')}`);
    lines.push(`pass@k: ${Object.entries(s.metrics.passAtK).map(([k, v]) => `pass@${k}=${v.toFixed(4)}`).join('  ')}`);
  }
  lines.push(`terminations: ${Object.entries(s.terminations).map(([k, v]) => `${k}=${v}`).join('  ')}`);
  const u = s.usage;
  lines.push(`tokens (prompt/completion): agent ${u.agent.promptTokens}/${u.agent.completionTokens}, user ${u.user.promptTokens}/${u.user.completionTokens}, judge ${u.judge.promptTokens}/${u.judge.completionTokens}; retries ${u.agent.retries + u.user.retries + u.judge.retries}`);
  if (s.meanSteps !== null) lines.push(`mean steps: ${s.meanSteps.toFixed(1)}   wall: ${s.wallS.toFixed(1)} s${s.resumedEpisodes ? `   resumed: ${s.resumedEpisodes} episode(s) already done` : ''}`);
  return lines.join('\n');
}

export type EvalCommandOptions = EvalCliOptions & {
  progress: boolean;
  checkpoint?: string;
  tokenizer?: string;
  chatFormat?: string;
  /** --agent checkpoint: the policy text (compact | tau2 | FILE) and tool-schema style (full | compact). */
  policy?: string;
  tools?: string;
  maxTurns?: number;
  maxResponseTokens?: number;
  saveTokens?: boolean;
  /** --agent checkpoint: sample in this process (default) or through the loopback model server. */
  engine?: CheckpointEngine;
  /** --agent checkpoint: serve the checkpoint with its attention sinks ignored (ModelOptions.sinks 'ignore'; the sinks ablation). */
  ignoreSinks?: boolean;
  /** A run file: evaluate --checkpoint on its env (an env defined with defineEnv, or retail-synth's validation set). */
  config?: string;
  /** With --config: an eval folder of the same tasks, or a model folder to evaluate the same way. */
  baseline?: string;
};

/** The flags `--config` takes; the others describe a τ² retail evaluation. */
const CONFIG_FLAGS = new Set<string>(['config', 'checkpoint', 'split', 'trials', 'baseline', 'out', 'seed', 'concurrency', 'tokenizer', 'chatFormat', 'temperature', 'maxTurns', 'maxResponseTokens', 'maxTokens', 'saveTokens', 'progress']);

/**
 * `longrun eval --config RUN --checkpoint DIR`: the checkpoint on the run's env. An env defined with defineEnv is played
 * by env-eval.ts; a retail-synth run by the τ² retail evaluation on its validation task set with the scripted user.
 */
export async function evalConfigCommand(opts: EvalCommandOptions, explicit: ExplicitFlags, print: (line: string) => void = console.log): Promise<number> {
  const config = opts.config!;
  const given = (Object.keys(opts) as (keyof EvalCommandOptions)[]).filter((k) => explicit(k) && !CONFIG_FLAGS.has(k));
  if (given.length) throw new Error(`${given.map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(', ')} ${given.length > 1 ? 'apply' : 'applies'} to a τ² retail evaluation, not to --config (the run file names the env, its user and its reward)`);
  if (!opts.checkpoint) throw new Error('--config needs --checkpoint DIR (the model to evaluate)');
  const { run } = parseStagesRunFile(readConfigFile(config, '--config'));
  const out = opts.out ?? join('runs', 'eval', basename(resolve(opts.checkpoint)));
  // A GRPO or SFT checkpoint folder, or a run's `latest`, stands for the model folder in it.
  const { dir: checkpoint, note } = resolveModelFolder(opts.checkpoint);
  if (note) print(note);
  if (run.env === undefined) {
    if (run.task !== 'retail-synth') throw new Error(`--config ${config}: eval --config takes runs on an env defined with defineEnv (env:) or retail-synth runs; this run's task is ${run.task} (evaluate it with --task-set / --tasks)`);
    if (opts.baseline !== undefined) throw new Error('--baseline applies to runs on an env defined with defineEnv; compare retail eval folders with `longrun analyze compare`');
    const dir = run.retail?.tasks.valDir ?? run.retail?.tasks.dataDir;
    if (!dir) throw new Error(`--config ${config}: retail.tasks names no valDir or dataDir to evaluate on`);
    if (explicit('split')) throw new Error('--split applies to runs on an env defined with defineEnv (a retail-synth task set is one split)');
    print(`retail-synth run: the scripted user on ${join(dir, 'tasks.json')}`);
    // The model folder's own tokenizer and settings first (a GRPO checkpoint's policy/model has neither): the run's.
    const own = existsSync(join(checkpoint, 'tokenizer.json')) || readModelSettings(checkpoint) !== null;
    const retail: EvalCommandOptions = {
      ...opts, config: undefined, out, agent: 'checkpoint', checkpoint, tasks: join(dir, 'tasks.json'), user: 'scripted',
      tokenizer: opts.tokenizer ?? (own ? undefined : run.policy.tokenizer), chatFormat: opts.chatFormat ?? (own ? undefined : run.policy.format),
    };
    return evalCommand(retail, (k) => explicit(k) || k === 'tasks');
  }
  const summary = await evalRunFileEnv({
    config, checkpoint, out, split: opts.split, trials: opts.trials, seed: opts.seed, concurrency: opts.concurrency,
    baseline: baselineFolder(opts.baseline, print), tokenizer: opts.tokenizer, chatFormat: opts.chatFormat, temperature: opts.temperature, maxTurns: opts.maxTurns,
    maxResponseTokens: opts.maxResponseTokens, maxTokens: opts.maxTokens, saveTokens: opts.saveTokens,
    onEpisode: opts.progress ? (r, p) => console.error(`[${p.done}/${p.total}] task ${r.taskId} trial ${r.trial}: ${r.status === 'ok' ? `reward ${r.reward} (${r.terminationReason})` : `error: ${r.error}`}`) : undefined,
  });
  print(formatEnvEvalSummary(summary));
  return summary.eval.complete ? 0 : 2;
}

/** `--baseline`: an eval folder as it is; a model, GRPO or SFT checkpoint folder as the model folder in it. */
function baselineFolder(baseline: string | undefined, print: (line: string) => void): string | undefined {
  // A path that does not exist is left to the evaluation's own error (neither an eval folder nor a model folder).
  if (baseline === undefined || !existsSync(baseline) || existsSync(join(baseline, 'trajectories.jsonl'))) return baseline;
  const { dir, note } = resolveModelFolder(baseline, '--baseline');
  if (note) print(note);
  return dir;
}

/** Which option keys the command line gave (the rest are commander defaults or absent). */
export type ExplicitFlags = (key: keyof EvalCommandOptions) => boolean;

/**
 * `--agent checkpoint`: the model folder's longrun.json (when present) as defaults for the prompt and sampling flags,
 * explicit flags winning; `lines` says which settings came from where. Returns the options with the agent settings.
 */
export function resolveCheckpointOptions(opts: EvalCommandOptions, explicit: ExplicitFlags): { options: EvalCommandOptions & { checkpointAgent?: CheckpointAgentSettings }; lines: string[] } {
  const only = ['policy', 'tools', 'maxTurns', 'maxResponseTokens', 'saveTokens', 'ignoreSinks'] as const;
  if (opts.agent !== 'checkpoint') {
    const given = only.filter((k) => explicit(k));
    if (given.length) throw new Error(`${given.map((k) => `--${k.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`).join(', ')} apply to --agent checkpoint only`);
    return { options: opts, lines: [] };
  }
  if (!opts.checkpoint) throw new Error('--agent checkpoint needs --checkpoint DIR');
  // A run's folder (a GRPO step or checkpoint folder, an SFT output) resolves to its model; any other path is taken as
  // given (the loader then names what is missing).
  const c = opts.checkpoint;
  const runFolder = !existsSync(join(c, 'config.json')) && ['policy', 'latest', 'model', 'checkpoints'].some((f) => existsSync(join(c, f)));
  const asGiven = !runFolder;
  const resolved: { dir: string; note?: string } = asGiven ? { dir: c } : resolveModelFolder(c);
  const found = readModelSettings(resolved.dir);
  const s: Partial<ModelSettings> = found?.settings ?? {};
  const o: EvalCommandOptions = { ...opts, checkpoint: resolved.dir };
  const fromFile: string[] = [];
  const fromFlags: string[] = [];
  // Each setting: the option key, its value in the file, and how it is shown.
  const take = <K extends keyof EvalCommandOptions>(key: K, value: EvalCommandOptions[K] | undefined, label: string, show: string) => {
    if (explicit(key)) {
      if (value !== undefined) fromFlags.push(label);
      return;
    }
    if (value === undefined) return;
    o[key] = value;
    fromFile.push(`${label} ${show}`);
  };
  const dir = resolved.dir;
  const tokenizer = s.tokenizer === undefined ? undefined : s.tokenizer === 'o200k_harmony' ? s.tokenizer : join(dir, s.tokenizer);
  take('chatFormat', s.chatFormat, 'chat format', String(s.chatFormat));
  take('tokenizer', tokenizer, 'tokenizer', String(s.tokenizer));
  take('taskSet', s.toolSet, 'tool set', String(s.toolSet));
  take('user', s.user, 'user', String(s.user));
  take('temperature', s.temperature, 'temperature', String(s.temperature));
  take('maxTurns', s.maxTurns, 'max turns', String(s.maxTurns));
  take('maxResponseTokens', s.maxResponseTokens, 'max response tokens', String(s.maxResponseTokens));
  take('maxTokens', s.maxTokensPerTurn, 'max tokens per turn', String(s.maxTokensPerTurn));
  take('maxSteps', s.maxSteps, 'max steps', String(s.maxSteps));
  take('maxErrors', s.maxErrors, 'max errors', String(s.maxErrors));
  let policy: PolicySetting | undefined;
  if (explicit('policy') && o.policy !== undefined) {
    policy = policySettingFromFlag(o.policy);
    if (s.policy !== undefined) fromFlags.push('policy');
  } else if (s.policy !== undefined) {
    policy = s.policy;
    fromFile.push(`policy ${describePolicy(s.policy)}`);
  }
  const toolsFlag = explicit('tools') ? o.tools : undefined;
  if (toolsFlag !== undefined && toolsFlag !== 'full' && toolsFlag !== 'compact') throw new Error(`--tools must be full or compact, got ${JSON.stringify(toolsFlag)}`);
  const tools = toolsFlag ?? s.tools;
  if (toolsFlag !== undefined && s.tools !== undefined) fromFlags.push('tools');
  else if (toolsFlag === undefined && s.tools !== undefined) fromFile.push(`tools ${s.tools}`);
  const checkpointAgent: CheckpointAgentSettings = {
    // No policy setting: the env's system prompt (the task set's policy.md); no tool style: the env's tools as they are.
    ...(policy !== undefined ? { systemPrompt: agentPrompt(policy, 'full', o.data).systemPrompt } : {}),
    ...(tools !== undefined ? { tools: toolsInStyle(tools) } : {}),
    sampling: { temperature: o.temperature ?? 0, ...(s.topP !== undefined && s.topP < 1 ? { topP: s.topP } : {}), ...(s.topK !== undefined && s.topK > 0 ? { topK: s.topK } : {}) },
    maxTurns: o.maxTurns,
    maxResponseTokens: o.maxResponseTokens,
    maxTokensPerTurn: o.maxTokens,
    onParseError: s.onParseError,
    saveTokens: o.saveTokens,
  };
  const agentSettings = {
    chatFormat: o.chatFormat ?? 'harmony',
    policy: policy === undefined ? 'task set' : typeof policy === 'object' ? `text sha256:${createHash('sha256').update(policy.text).digest('hex').slice(0, 16)}` : policy,
    tools: tools ?? 'full',
    temperature: checkpointAgent.sampling.temperature,
    topP: checkpointAgent.sampling.topP ?? 1,
    topK: checkpointAgent.sampling.topK ?? -1,
    maxTurns: o.maxTurns ?? null,
    maxResponseTokens: o.maxResponseTokens ?? null,
    maxTokensPerTurn: o.maxTokens ?? null,
    onParseError: s.onParseError ?? 'send-text',
    // recorded only when set, so that earlier eval folders keep their identity
    ...(o.ignoreSinks ? { sinks: 'ignore' } : {}),
  };
  const lines: string[] = resolved.note ? [resolved.note] : [];
  if (found) lines.push(`settings from ${found.file}: ${fromFile.length ? fromFile.join(', ') : 'none used'}${fromFlags.length ? `; overridden by flags: ${fromFlags.join(', ')}` : ''}`);
  else lines.push(`no ${join(dir, MODEL_SETTINGS_FILE)}: ${policy === undefined ? "the task set's policy.md" : 'the --policy text'} and the tools ${tools === undefined ? 'in full' : tools}; write the model's settings with \`longrun model settings\``);
  return { options: { ...o, checkpointAgent, agentSettings }, lines };
}

export function evalCommand(opts: EvalCommandOptions, explicit: ExplicitFlags = (k) => opts[k] !== undefined): Promise<number> {
  const { options, lines } = resolveCheckpointOptions(opts, explicit);
  for (const l of lines) console.error(l);
  return withCheckpointAgent(options, (resolved) => runEvalCommand({ ...options, ...resolved }));
}

async function runEvalCommand(opts: EvalCommandOptions): Promise<number> {
  const { run, notes } = buildEval(opts);
  for (const n of notes) console.error(`note: ${n}`);
  const bar = opts.progress && process.stderr.isTTY ? new SingleBar({ format: 'eval [{bar}] {value}/{total} episodes | avg reward {avg} | {eta_formatted} left', stream: process.stderr }) : null;
  let rewardSum = 0;
  let finished = 0;
  const summary = await runEval({
    ...run,
    onStart: ({ total, alreadyDone }) => {
      if (alreadyDone) console.error(`resuming: ${alreadyDone}/${total} episode(s) already in ${opts.out}`);
      bar?.start(total, alreadyDone, { avg: '-' });
    },
    onEpisode: (r, p) => {
      if (r.status === 'ok') {
        rewardSum += r.reward ?? 0;
        finished++;
      } else {
        console.error(`\ntask ${r.taskId} trial ${r.trial}: infrastructure error: ${r.error}`);
      }
      if (bar) bar.update(p.done, { avg: finished ? (rewardSum / finished).toFixed(3) : '-' });
      else if (opts.progress) console.error(`[${p.done}/${p.total}] task ${r.taskId} trial ${r.trial}: ${r.status === 'ok' ? `reward ${r.reward} (${r.terminationReason})` : 'infrastructure error'}`);
    },
  });
  bar?.stop();
  console.log(formatSummary(summary));
  // The scripted customer says no to every proposal that is not its request: beside mean@1, the successes that needed
  // no second proposal (src/recipes/retail/proposals.ts), over every finished episode of the folder.
  if (opts.user === 'scripted' && summary.finished > 0) {
    console.log('by family: mean@1 and first-proposal success (a success with no proposal turned down); ± is the standard error over tasks');
    console.log(formatFamilyProposalTable(evalFolderProposalTable(opts.out)));
  }
  console.log(`results: ${opts.out}/results.json, trajectories: ${opts.out}/trajectories.jsonl`);
  return summary.complete ? 0 : 2;
}

export function register(program: Command): void {
  program
    .command('eval')
    .description("evaluate an agent on τ² retail (or generated tasks), or a checkpoint on a run file's env (--config): k trials per task, pass^k, resumable")
    .option('--out <dir>', 'output folder (results.json, trajectories.jsonl); re-running with it resumes (required but with --config)')
    .option('--config <run-file>', "with --checkpoint: evaluate the checkpoint on the run file's env (an env module of yours, or retail-synth's validation tasks)")
    .option('--baseline <dir>', 'with --config: an eval folder of the same tasks, or a model folder evaluated the same way; prints the paired difference')
    .option('--agent <kind>', `agent: ${AGENT_KINDS.join(' | ')} | checkpoint`, 'openai')
    .option('--checkpoint <dir>', 'with --agent checkpoint or --config: a model folder, an SFT checkpoint, a GRPO checkpoint step folder (its policy/model), or a GRPO checkpoint folder or its latest file (the newest step)')
    .option('--tokenizer <name|file>', 'with --agent checkpoint: o200k_harmony or a BPE file (default <checkpoint>/tokenizer.json)')
    .option('--chat-format <name>', 'with --agent checkpoint: harmony (default) or hermes')
    .option('--policy <compact|tau2|file>', "with --agent checkpoint: the policy text in the agent's system prompt (default: the task set's policy.md)")
    .option('--tools <style>', 'with --agent checkpoint: tool schemas in full (default) or compact (names and parameters only)')
    .option('--max-turns <n>', 'with --agent checkpoint: assistant turns per episode (default: --max-steps)', int('--max-turns', 1))
    .option('--max-response-tokens <n>', "with --agent checkpoint: token budget after the prompt (default: the model's context)", int('--max-response-tokens', 1))
    .option('--engine <where>', `with --agent checkpoint: ${CHECKPOINT_ENGINES.join(' | ')} (in-process keeps each episode's KV cache across turns; server goes through /v1/completions like an external model; the same tokens either way)`, 'in-process')
    .option('--save-tokens', "with --agent checkpoint: keep each episode's prompt and response token ids in trajectories.jsonl")
    .option('--ignore-sinks', "with --agent checkpoint (in-process): attention ignores the model's sink logits (as −∞), as an engine that drops them would serve it (the sinks ablation)")
    .option('--base-url <url>', 'OpenAI-compatible base URL of the agent model (e.g. http://127.0.0.1:8000/v1); key from OPENAI_API_KEY')
    .option('--model <name>', 'agent model name')
    .option('--temperature <t>', "sampling temperature for every LLM (default 0, as τ²; --agent checkpoint: the model's longrun.json)", num('--temperature'))
    .option('--max-tokens <n>', 'completion cap per LLM request (max_tokens; --agent checkpoint: sampled tokens per turn)', int('--max-tokens', 1))
    .option('--data <dir>', 'τ² retail data folder (default env LONGRUN_TAU2_RETAIL or ../shared/tau2/retail)')
    .option('--task-set <v>', 'τ² task set: v0 (DB × COMMUNICATE) or v1 (DB × NL assertions, needs a judge)', 'v1')
    .option('--split <name>', 'task split (default base; ignored for --tasks unless given)')
    .option('--tasks <file>', 'a generated tasks.json (its folder\'s db.json is used when present)')
    .option('--task-ids <ids>', 'comma-separated task ids to run')
    .option('--num-tasks <n>', 'only the first n tasks', int('--num-tasks', 1))
    .option('--trials <k>', 'trials per task (pass^1..k)', int('--trials', 1), 1)
    .option('--user <kind>', `user simulator: ${USER_KINDS.join(' | ')}`, 'ticket')
    .option('--user-base-url <url>', 'LLM user base URL (default: --base-url)')
    .option('--user-model <name>', 'LLM user model')
    .option('--user-guidelines <file>', "the user simulator's guidelines text (τ²'s simulation_guidelines.md for parity)")
    .option('--judge <kind>', `NL-assertion judge: llm | ${FALLBACK_JUDGE_NAME}`)
    .option('--judge-base-url <url>', 'judge base URL (default: --base-url)')
    .option('--judge-model <name>', 'judge model')
    .option('--concurrency <n>', 'episodes at once', int('--concurrency', 1), 1)
    .option('--max-requests <n>', 'LLM requests in flight across the run', int('--max-requests', 1), 8)
    .option('--timeout <s>', 'per-request timeout in seconds', num('--timeout'), 120)
    .option('--max-retries <n>', 'retries on 429/5xx/timeouts (exponential backoff with jitter)', int('--max-retries', 0), 4)
    .option('--max-steps <n>', 'episode step limit (τ² CLI: 200)', int('--max-steps', 1), 200)
    .option('--max-errors <n>', 'tool errors before the episode ends', int('--max-errors', 1), 10)
    .option('--max-refusals <n>', 'with --user scripted: proposals the customer turns down before it leaves (default: never leaves; 1 = the impatient customer, whom a wrong proposal loses)', int('--max-refusals', 1))
    .option('--seed <n>', 'run seed (per-episode seeds derive from it)', int('--seed', 0), 300)
    .option('--no-progress', 'no progress output')
    .addHelpText('after', [
      '',
      'With --agent checkpoint, the model is served on loopback and played token for token by the agent loop of training',
      "(as GRPO's rollouts). A model folder's longrun.json (written by `longrun model settings`) supplies the chat format,",
      'tokenizer, policy text, tool style, tool set, user, temperature and the turn/token/step limits; flags given on the',
      'command line win, and the run prints which settings came from the file.',
    ].join('\n'))
    .action(async (opts: EvalCommandOptions, cmd: Command) => {
      const explicit: ExplicitFlags = (k) => cmd.getOptionValueSource(k) === 'cli';
      if (opts.config !== undefined) {
        process.exitCode = await evalConfigCommand(opts, explicit);
        return;
      }
      if (opts.baseline !== undefined) throw new Error('--baseline applies to --config');
      if (opts.out === undefined) throw new Error("required option '--out <dir>' not specified");
      process.exitCode = await evalCommand(opts, explicit);
    });
}
