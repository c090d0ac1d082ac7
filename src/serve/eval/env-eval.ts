/**
 * `longrun eval --config RUN --checkpoint DIR`: a checkpoint on the env of the run file that trained it — an env
 * defined with defineEnv (`env:`: a module of yours, or the id of one) — with the agent loop of training, token for
 * token: the env's instructions and tools (a model folder's `longrun.json` or the run file's policy and GRPO rollout
 * settings decide the chat format, tokenizer, sampling and limits), `--trials` seeded episodes per task of `--split`
 * (default: the run's validation split, else its training split). The folder gets `longrun eval`'s files
 * (`config.json`, `trajectories.jsonl` one line per episode, `results.json`; re-running resumes) and `summary.json`:
 * the mean reward per task ± its standard error, per family, and with `--baseline` (another eval folder, or a model
 * folder evaluated the same way into OUT/baseline) the difference paired over the tasks both played.
 * Rewards are the env's, on whatever scale its reward function returns.
 */
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join, relative, resolve } from 'node:path';
import { createChatFormat } from '../../llm/formats.ts';
import { loadTokenizer } from '../../llm/load-tokenizer.ts';
import type { ToolSpec } from '../../llm/messages.ts';
import { loadModel } from '../../model/checkpoint/index.ts';
import { readConfigFile } from '../../recipes/config-file.ts';
import { readModelSettings } from '../../recipes/model-settings.ts';
import { compactToolSpecs } from '../../recipes/retail/prepare.ts';
import { parseStagesRunFile, runEnvDefinition, type RunFile } from '../../recipes/train-setup.ts';
import type { TrainerConfig } from '../../rl/config.ts';
import { createStepModelEngine } from '../../rollout/model-engine.ts';
import type { AnyEnvDefinition } from '../../tooluse/api/index.ts';
import { meanStdErr } from '../../tooluse/metrics.ts';
import type { Task } from '../../tooluse/tasks.ts';
import { TokenLoopEvalAgent } from './checkpoint-agent.ts';
import { runEval, type EvalEnv, type EvalSummary } from './runner.ts';
import type { EpisodeRecord } from './trajectory-log.ts';

export interface EnvEvalOptions {
  /** The run file (YAML or JSON) whose `env:` section names the env. */
  config: string;
  checkpoint: string;
  out: string;
  split?: string;
  trials: number;
  seed: number;
  concurrency: number;
  /** An eval folder of the same tasks, or a model folder to evaluate the same way. */
  baseline?: string;
  tokenizer?: string;
  chatFormat?: string;
  temperature?: number;
  maxTurns?: number;
  maxResponseTokens?: number;
  maxTokens?: number;
  saveTokens?: boolean;
  onEpisode?: (record: EpisodeRecord, progress: { done: number; total: number }) => void;
}

export interface PerTask {
  taskId: string;
  family?: string;
  reward: number;
  trials: number;
}

export interface PairedComparison {
  baseline: string;
  tasks: number;
  meanReward: number;
  stdErr: number;
  baselineMeanReward: number;
  baselineStdErr: number;
  /** Mean over tasks of (checkpoint − baseline) per-task mean rewards, and its standard error. */
  difference: number;
  differenceStdErr: number;
  perTask: { taskId: string; reward: number; baseline: number; difference: number }[];
}

export interface EnvEvalSummary {
  env: string;
  split: string;
  /** The evaluated model folder, relative to the working directory. */
  checkpoint: string;
  out: string;
  episodes: number;
  envErrors: number;
  tasks: number;
  trials: number;
  meanReward: number | null;
  stdErr: number | null;
  byFamily: Record<string, { tasks: number; meanReward: number; stdErr: number }>;
  perTask: PerTask[];
  baseline?: PairedComparison;
  eval: EvalSummary;
}

/** The defined env of a run file's `env:` section (the module loaded, or the id looked up). */
export async function runFileEnv(run: RunFile, where: string): Promise<AnyEnvDefinition> {
  const e = run.env;
  if (!e) throw new Error(`${where}: eval --config needs a run on an env defined with defineEnv (an env: section) or a retail-synth run; this run's task is ${run.task}`);
  return runEnvDefinition(e);
}

/** Mean reward per task (over its trials) of the finished episodes. */
export function perTaskRewards(records: readonly EpisodeRecord[], familyOf: (taskId: string) => string | undefined = () => undefined): PerTask[] {
  const by = new Map<string, number[]>();
  for (const r of records) if (r.status === 'ok' && r.reward !== null) by.set(r.taskId, [...(by.get(r.taskId) ?? []), r.reward]);
  return [...by].map(([taskId, rs]) => {
    const family = familyOf(taskId);
    return { taskId, ...(family !== undefined ? { family } : {}), reward: rs.reduce((a, b) => a + b, 0) / rs.length, trials: rs.length };
  });
}

/** The difference of two evaluations paired over the tasks both finished: mean of per-task differences ± s.e. */
export function pairedComparison(ours: readonly PerTask[], theirs: readonly PerTask[], baseline: string): PairedComparison {
  const other = new Map(theirs.map((t) => [t.taskId, t.reward]));
  const both = ours.filter((t) => other.has(t.taskId));
  if (both.length === 0) throw new Error(`--baseline ${baseline}: no task in common with this evaluation (it played ${theirs.map((t) => t.taskId).slice(0, 5).join(', ') || 'none'})`);
  const perTask = both.map((t) => ({ taskId: t.taskId, reward: t.reward, baseline: other.get(t.taskId)!, difference: t.reward - other.get(t.taskId)! }));
  const a = meanStdErr(perTask.map((t) => t.reward));
  const b = meanStdErr(perTask.map((t) => t.baseline));
  const d = meanStdErr(perTask.map((t) => t.difference));
  return { baseline, tasks: both.length, meanReward: a.mean, stdErr: a.stdErr, baselineMeanReward: b.mean, baselineStdErr: b.stdErr, difference: d.mean, differenceStdErr: d.stdErr, perTask };
}

function readEpisodes(dir: string): EpisodeRecord[] {
  const file = join(dir, 'trajectories.jsonl');
  return readFileSync(file, 'utf8').split('\n').filter((l) => l.trim() !== '').map((l, i) => {
    try {
      return JSON.parse(l) as EpisodeRecord;
    } catch (e) {
      throw new Error(`${file}:${i + 1}: not JSON (${(e as Error).message})`, { cause: e });
    }
  });
}

const isModelFolder = (dir: string) => existsSync(join(dir, 'config.json')) && readdirSync(dir).some((f) => f.endsWith('.safetensors'));

/** The agent settings: flags, then the model folder's longrun.json, then the run file's policy and GRPO rollout. */
function agentSettings(o: EnvEvalOptions, dir: string, run: RunFile, trainer: TrainerConfig | null, def: AnyEnvDefinition) {
  const s = readModelSettings(dir)?.settings;
  const r = trainer?.rollout;
  const tokenizer = o.tokenizer
    ?? (s ? (s.tokenizer === 'o200k_harmony' ? s.tokenizer : join(dir, s.tokenizer)) : undefined)
    ?? (existsSync(join(dir, 'tokenizer.json')) ? join(dir, 'tokenizer.json') : run.policy.tokenizer);
  if (!tokenizer) throw new Error(`${dir} has no tokenizer.json and the run file names no policy.tokenizer; pass --tokenizer FILE|o200k_harmony`);
  const topP = s?.topP ?? r?.topP ?? 1;
  const topK = s?.topK ?? r?.topK ?? -1;
  return {
    chatFormat: o.chatFormat ?? s?.chatFormat ?? run.policy.format,
    tokenizer,
    tools: s?.tools ?? 'full',
    temperature: o.temperature ?? s?.temperature ?? trainer?.trainer.valTemperature ?? 0,
    topP,
    topK,
    maxTurns: o.maxTurns ?? s?.maxTurns ?? r?.maxTurns ?? def.maxTurns,
    maxResponseTokens: o.maxResponseTokens ?? s?.maxResponseTokens ?? r?.maxResponseTokens ?? null,
    maxTokensPerTurn: o.maxTokens ?? s?.maxTokensPerTurn ?? r?.maxTokensPerTurn ?? null,
    onParseError: s?.onParseError ?? r?.onParseError ?? 'send-text',
    from: s ? 'longrun.json' : 'run file',
  };
}

async function evalCheckpoint(o: EnvEvalOptions, dir: string, out: string, run: RunFile, trainer: TrainerConfig | null, def: AnyEnvDefinition, split: string, tasks: readonly { id: string }[]): Promise<EvalSummary> {
  const a = agentSettings(o, dir, run, trainer, def);
  const format = createChatFormat(a.chatFormat, loadTokenizer(a.tokenizer));
  const model = loadModel(dir, { grads: false });
  const contextLength = model.config.max_position_embeddings;
  const engine = createStepModelEngine(model, { maxBatchSize: Math.max(1, o.concurrency), sessionCapacity: contextLength });
  const agent = new TokenLoopEvalAgent({
    name: `checkpoint:${basename(dir)}`,
    engine,
    format,
    contextLength,
    maxSteps: a.maxTurns,
    greeting: def.spec.greeting ?? null,
    ...(a.tools === 'compact' ? { tools: (envTools: readonly ToolSpec[]) => compactToolSpecs(envTools) } : {}),
    sampling: { temperature: a.temperature, ...(a.topP < 1 ? { topP: a.topP } : {}), ...(a.topK > 0 ? { topK: a.topK } : {}) },
    maxTurns: a.maxTurns,
    maxResponseTokens: a.maxResponseTokens ?? undefined,
    maxTokensPerTurn: a.maxTokensPerTurn ?? undefined,
    onParseError: a.onParseError,
    saveTokens: o.saveTokens,
  });
  const agentSettingsRecord = { ...a, tokenizer: a.tokenizer === 'o200k_harmony' ? a.tokenizer : basename(a.tokenizer) };
  const config = {
    agent: agent.name,
    checkpoint: resolve(dir),
    env: def.id,
    envModule: run.env?.module ?? null,
    runFile: o.config,
    split,
    taskIds: tasks.map((t) => t.id),
    trials: o.trials,
    seed: o.seed,
    agentSettings: agentSettingsRecord,
  };
  return runEval({
    makeEnv: () => def.makeEnv({ split, tasks }) as unknown as EvalEnv,
    tasks: tasks as readonly Task[],
    agent,
    trials: o.trials,
    seed: o.seed,
    concurrency: o.concurrency,
    maxSteps: a.maxTurns,
    maxErrors: 0,
    outDir: out,
    config,
    identityKeys: ['agent', 'checkpoint', 'env', 'split', 'taskIds', 'trials', 'seed', 'agentSettings'],
    resultsExtra: { env: def.id, split },
    onEpisode: o.onEpisode,
  });
}

/** Runs the evaluation (and the baseline's, when it is a model folder) and writes OUT/summary.json. */
export async function evalRunFileEnv(o: EnvEvalOptions): Promise<EnvEvalSummary> {
  const raw = readConfigFile(o.config, '--config');
  const { run, trainer } = parseStagesRunFile(raw);
  const def = await runFileEnv(run, o.config);
  const split = o.split ?? run.env?.valSplit ?? run.env?.split ?? 'train';
  const tasks = await def.tasks(split);
  const family = new Map(tasks.map((t) => [t.id, def.familyOf(t)]));
  const familyOf = (id: string) => family.get(id);
  if (!isModelFolder(o.checkpoint)) throw new Error(`--checkpoint ${o.checkpoint}: not a model folder (config.json and .safetensors weights)`);
  const summary = await evalCheckpoint(o, o.checkpoint, o.out, run, trainer, def, split, tasks);
  const records = readEpisodes(o.out);
  const perTask = perTaskRewards(records, familyOf);
  const overall = perTask.length ? meanStdErr(perTask.map((t) => t.reward)) : null;
  const byFamily: EnvEvalSummary['byFamily'] = {};
  for (const f of [...new Set(perTask.map((t) => t.family).filter((x): x is string => x !== undefined))].sort()) {
    const m = meanStdErr(perTask.filter((t) => t.family === f).map((t) => t.reward));
    byFamily[f] = { tasks: perTask.filter((t) => t.family === f).length, meanReward: m.mean, stdErr: m.stdErr };
  }
  let baseline: PairedComparison | undefined;
  if (o.baseline !== undefined) {
    let baseRecords: EpisodeRecord[];
    if (existsSync(join(o.baseline, 'trajectories.jsonl'))) baseRecords = readEpisodes(o.baseline);
    else if (isModelFolder(o.baseline)) {
      const baseOut = join(o.out, 'baseline');
      await evalCheckpoint({ ...o, tokenizer: o.tokenizer, onEpisode: undefined }, o.baseline, baseOut, run, trainer, def, split, tasks);
      baseRecords = readEpisodes(baseOut);
    } else throw new Error(`--baseline ${o.baseline}: neither an eval folder (trajectories.jsonl) nor a model folder (config.json and .safetensors weights)`);
    baseline = pairedComparison(perTask, perTaskRewards(baseRecords), o.baseline);
  }
  const result: EnvEvalSummary = {
    // Relative to the working directory, as the command's other paths: a summary committed beside a run names no machine path.
    env: def.id, split, checkpoint: relative(process.cwd(), resolve(o.checkpoint)) || '.', out: o.out,
    episodes: summary.finished, envErrors: summary.infrastructureErrors, tasks: perTask.length, trials: o.trials,
    meanReward: overall?.mean ?? null, stdErr: overall?.stdErr ?? null, byFamily, perTask,
    ...(baseline ? { baseline } : {}),
    eval: summary,
  };
  writeFileSync(join(o.out, 'summary.json'), JSON.stringify(result, null, 2) + '\n');
  return result;
}

const f4 = (x: number) => x.toFixed(4);
const signed = (x: number) => `${x >= 0 ? '+' : ''}${x.toFixed(4)}`;

export function formatEnvEvalSummary(s: EnvEvalSummary): string {
  const lines = [`env ${s.env}, split ${s.split}: ${s.episodes} episodes over ${s.tasks} tasks (${s.trials} per task)${s.envErrors ? `, ${s.envErrors} env error(s) left out (re-run with the same --out to retry)` : ''}`];
  lines.push(s.meanReward === null ? 'mean reward: no finished episode' : `mean reward ${f4(s.meanReward)} ± ${f4(s.stdErr!)} (standard error over tasks)`);
  const fams = Object.entries(s.byFamily);
  if (fams.length) lines.push('by family: ' + fams.map(([f, m]) => `${f} ${f4(m.meanReward)} ± ${f4(m.stdErr)} (${m.tasks} tasks)`).join(', '));
  const b = s.baseline;
  if (b) {
    lines.push(`baseline ${b.baseline}: ${f4(b.baselineMeanReward)} ± ${f4(b.baselineStdErr)} on the ${b.tasks} tasks both played`);
    lines.push(`difference (checkpoint − baseline), paired over ${b.tasks} tasks: ${signed(b.difference)} ± ${f4(b.differenceStdErr)}`);
    for (const t of b.perTask) lines.push(`  task ${t.taskId}: ${f4(t.reward)} vs ${f4(t.baseline)} (${signed(t.difference)})`);
  }
  lines.push(`episodes: ${join(s.out, 'trajectories.jsonl')}, summary: ${join(s.out, 'summary.json')}`);
  return lines.join('\n');
}
