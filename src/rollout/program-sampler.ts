/**
 * GRPO groups from agent programs: for each task of a step, n runs of the user's program (src/rollout/program-runner.ts)
 * against the trajectory gateway (src/serve/gateway.ts), each with its own rollout id, seed and the trainer's
 * sampling settings; the recorded rows become the trainer's trajectories (the `GroupSampler` hook of
 * src/rl/trainer.ts).
 *
 * A rollout's reward: the `reward` function's when one is configured (an env's reward over the recorded conversation,
 * or a module's), else the reward the program POSTed, else the `reward` of the last JSON line it printed. A rollout
 * the gateway cut short (response budget, call cap, context) scores 0 and trains, as the agent loop's truncated
 * episodes do.
 *
 * A failed rollout (the program could not start, crashed, timed out, never called the model, or left no reward where
 * one was needed, or the reward function threw) comes back as an `env_error` episode (no ids, the failure and the
 * end of its stderr in `envError`), which the trainer leaves out of its group and of the update, counts
 * (`rollout/env_errors`) and records; it is also written with its whole stderr tail to `failuresFile` and counted in
 * `programs/failed/<why>`. The other rollouts of the step train.
 *
 * A rollout split into several rows (the program edited its history, see gateway-recorder.ts) gives each row the
 * rollout's reward, and each row counts as a sample of its group in GRPO's mean and standard deviation, as
 * per-call transitions do in Agent Lightning; validation counts each rollout once (its last row).
 */
import { appendFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { z } from 'zod';
import type { ChatFormat } from '../llm/chat-format.ts';
import { startGateway, type GatewayHandle, type GatewaySampling, type RolloutRecord } from '../serve/gateway.ts';
import { readTasksFile } from '../tooluse/api/tasks-file.ts';
import type { InferenceEngine } from './inference.ts';
import type { GroupSampleRequest, GroupSampler, Metrics } from '../rl/trainer.ts';
import type { Trajectory } from './agent-loop.ts';
import type { RecordedRow } from './gateway-recorder.ts';
import { mapConcurrent, type SampledGroup } from './groups.ts';
import { runProgram, type ProgramResult, type ProgramSpec } from './program-runner.ts';

export interface ProgramTask {
  id: string;
  [k: string]: unknown;
}

export type RewardValue = number | { reward: number; info?: Record<string, unknown> };

/** A reward over the recorded rollout (e.g. an env's reward function); may be async. */
export type ProgramRewardFn = (ctx: { task: ProgramTask; record: RolloutRecord; result: ProgramResult; seed: number }) => RewardValue | Promise<RewardValue>;

export const FAILURE_KINDS = ['spawn_failed', 'timeout', 'crashed', 'no_model_calls', 'no_reward', 'reward_failed'] as const;
export type FailureKind = (typeof FAILURE_KINDS)[number];

export interface ProgramSamplerOptions {
  gateway: GatewayHandle;
  program: ProgramSpec;
  tasks: ReadonlyMap<string, ProgramTask>;
  /** `program`: the posted reward, else the last stdout JSON line's `reward`; a function: scores every rollout. */
  reward?: 'program' | ProgramRewardFn;
  /** Programs running at once (default 8). */
  concurrency?: number;
  /** Reward at or above this counts as success (default 1). */
  successThreshold?: number;
  topP?: number;
  topK?: number;
  /** The gateway's token, given to programs as OPENAI_API_KEY. */
  apiKey?: string;
  /** One JSON line per failed rollout (task, why, exit status, stderr tail). */
  failuresFile?: string;
  log?: (line: string) => void;
}

export interface RolloutOutcome {
  taskId: string;
  uid: string;
  sample: number;
  seed: number;
  record: RolloutRecord;
  result: ProgramResult;
  /** null for a failed rollout. */
  reward: number | null;
  rewardSource: 'post' | 'stdout' | 'function' | 'truncated' | null;
  rewardInfo?: Record<string, unknown>;
  failure: { kind: FailureKind; message: string } | null;
}

function rewardOf(v: unknown): { value: number; info?: Record<string, unknown> } | null {
  if (typeof v === 'number' && Number.isFinite(v)) return { value: v };
  if (v !== null && typeof v === 'object' && typeof (v as { reward?: unknown }).reward === 'number' && Number.isFinite((v as { reward: number }).reward)) {
    const info = (v as { info?: unknown }).info;
    return { value: (v as { reward: number }).reward, ...(info !== null && typeof info === 'object' ? { info: info as Record<string, unknown> } : {}) };
  }
  return null;
}

/** Runs one rollout: opens it, runs the program, finishes it, scores it. Never throws. */
export async function runProgramRollout(o: ProgramSamplerOptions, job: { task: ProgramTask; uid: string; sample: number; seed: number; sampling?: GatewaySampling }): Promise<RolloutOutcome> {
  const { id, baseUrl } = o.gateway.openRollout({ taskId: job.task.id, seed: job.seed, sampling: job.sampling });
  const result = await runProgram(o.program, { baseUrl, rolloutId: id, rewardUrl: `${o.gateway.url}/rollouts/${id}/reward`, task: job.task, apiKey: o.apiKey });
  const record = await o.gateway.finishRollout(id);
  const out: RolloutOutcome = { taskId: job.task.id, uid: job.uid, sample: job.sample, seed: job.seed, record, result, reward: null, rewardSource: null, failure: null };
  const fail = (kind: FailureKind, message: string): RolloutOutcome => ({ ...out, failure: { kind, message } });
  const stderr = result.stderrTail.trim() ? `; stderr ends: ${result.stderrTail.trim().slice(-400)}` : '';
  if (result.spawnError) return fail('spawn_failed', `could not start ${JSON.stringify(o.program.command)}: ${result.spawnError}`);
  if (result.timedOut) return fail('timeout', `the program ran past its time-out (${o.program.timeoutMs ?? 120_000} ms) and was killed${stderr}`);
  if (record.truncated && record.rows.length === 0) return fail('no_model_calls', `the gateway refused the program's first call: ${record.errors[0]?.message ?? record.truncated}`);
  if (record.truncated) return { ...out, reward: 0, rewardSource: 'truncated' };
  if (result.exitCode !== 0) return fail('crashed', `the program exited with ${result.exitCode !== null ? `status ${result.exitCode}` : `signal ${result.signal}`}${stderr}`);
  if (record.rows.length === 0) return fail('no_model_calls', `the program never got a completion from the gateway (${record.errors.length} refused requests${record.errors[0] ? `, first: ${record.errors[0].message}` : ''})`);
  // A configured reward function scores every rollout; else the program's own reward.
  if (typeof o.reward === 'function') {
    try {
      const r = rewardOf(await o.reward({ task: job.task, record, result, seed: job.seed }));
      if (!r) return fail('reward_failed', 'the reward function returned no finite number');
      return { ...out, reward: r.value, rewardSource: 'function', rewardInfo: r.info };
    } catch (err) {
      return fail('reward_failed', `the reward function threw: ${(err as Error).message}`);
    }
  }
  const posted = record.reward;
  if (posted) return { ...out, reward: posted.value, rewardSource: 'post', rewardInfo: posted.info };
  const printed = rewardOf(result.lastJson);
  if (printed) return { ...out, reward: printed.value, rewardSource: 'stdout', rewardInfo: printed.info };
  return fail('no_reward', 'the program neither POSTed a reward to LONGRUN_REWARD_URL nor printed {"reward": …} as its last stdout line');
}

/** A recorded row as the trainer's trajectory, with its rollout's reward. */
export function rowTrajectory(row: RecordedRow, o: RolloutOutcome, successThreshold: number): Trajectory {
  const reward = o.reward ?? 0;
  return {
    promptIds: row.promptIds, responseIds: row.responseIds, responseMask: row.responseMask, rolloutLogprobs: row.rolloutLogprobs,
    reward, success: reward >= successThreshold, rewardInfo: null,
    numTurns: row.calls, userTurns: 0, toolCalls: row.toolCalls, toolErrors: 0, parseErrors: row.parseErrors,
    terminationReason: o.record.truncated === 'max_response_tokens' ? 'max_response_tokens' : o.record.truncated ? 'aborted' : 'env_terminated',
    truncated: o.record.truncated !== null, taskId: o.taskId, seed: o.seed, messages: row.messages,
  };
}

/** A failed rollout as the trainer's `env_error` episode (no ids; the message names the failure and ends with stderr). */
export function failedTrajectory(o: RolloutOutcome): Trajectory {
  return {
    promptIds: [], responseIds: [], responseMask: [], rolloutLogprobs: [], reward: 0, success: false, rewardInfo: null,
    numTurns: o.record.calls.length, userTurns: 0, toolCalls: 0, toolErrors: 0, parseErrors: 0, terminationReason: 'env_error', truncated: true,
    taskId: o.taskId, seed: o.seed, messages: [], envError: `program rollout ${o.record.id}: ${o.failure!.kind}: ${o.failure!.message}`,
  };
}

/** Counts over a set of rollouts (sums, so DAPO's rounds add up): `programs/*`. */
export function outcomeMetrics(outcomes: readonly RolloutOutcome[]): Metrics {
  const m: Metrics = { 'programs/rollouts': outcomes.length, 'programs/failed': 0, 'programs/truncated': 0, 'programs/split_rollouts': 0, 'programs/rows': 0, 'programs/calls': 0 };
  for (const o of outcomes) {
    m['programs/calls'] += o.record.calls.length;
    if (o.failure) {
      m['programs/failed']++;
      m[`programs/failed/${o.failure.kind}`] = (m[`programs/failed/${o.failure.kind}`] ?? 0) + 1;
      continue;
    }
    if (o.record.truncated) m['programs/truncated']++;
    m['programs/rows'] += o.record.rows.length;
    if (o.record.rows.length > 1) m['programs/split_rollouts']++;
    for (const s of o.record.splits) m[`programs/split/${s.reason}`] = (m[`programs/split/${s.reason}`] ?? 0) + 1;
    if (o.rewardSource) m[`programs/reward_source/${o.rewardSource}`] = (m[`programs/reward_source/${o.rewardSource}`] ?? 0) + 1;
  }
  return m;
}

/** The trainer's `GroupSampler` over agent programs. */
export class ProgramGroupSampler implements GroupSampler {
  constructor(private readonly o: ProgramSamplerOptions) {}

  async sample(req: GroupSampleRequest): Promise<{ groups: SampledGroup[]; metrics: Metrics; outcomes: RolloutOutcome[] }> {
    const o = this.o;
    const jobs = req.groups.flatMap((g, gi) => {
      const task = o.tasks.get(g.taskId);
      if (!task) throw new Error(`program rollouts: no task ${JSON.stringify(g.taskId)} in the rollout task list`);
      return Array.from({ length: req.n }, (_, j) => ({ task, uid: g.uid, sample: j, seed: req.seed + gi * req.n + j }));
    });
    const sampling: GatewaySampling = { temperature: req.temperature, topP: o.topP, topK: o.topK };
    let done = 0;
    const outcomes = await mapConcurrent(jobs, o.concurrency ?? 8, async (job) => {
      const r = await runProgramRollout(o, { ...job, sampling });
      req.onProgress?.(++done, jobs.length);
      return r;
    });
    const failed = outcomes.filter((x) => x.failure);
    for (const f of failed) {
      o.log?.(`rollout ${f.record.id} (task ${f.taskId}, sample ${f.sample}) failed: ${f.failure!.kind}: ${f.failure!.message}`);
      if (o.failuresFile) {
        appendFileSync(o.failuresFile, `${JSON.stringify({
          kind: req.kind, taskId: f.taskId, sample: f.sample, rolloutId: f.record.id, termination: 'env_error', failure: f.failure!.kind, message: f.failure!.message,
          exitCode: f.result.exitCode, signal: f.result.signal, calls: f.record.calls.length, ms: Math.round(f.result.ms), stderrTail: f.result.stderrTail,
        })}\n`);
      }
    }
    const threshold = o.successThreshold ?? 1;
    // Failed rollouts go back as env_error episodes: the trainer leaves them out, counts and records them.
    const groups: SampledGroup[] = [];
    for (const g of req.groups) {
      const mine = outcomes.filter((x) => x.uid === g.uid);
      const trajectories = mine.flatMap((x) => {
        if (x.failure) return [failedTrajectory(x)];
        return req.kind === 'train' ? x.record.rows.map((row) => rowTrajectory(row, x, threshold)) : [rowTrajectory(x.record.rows.at(-1)!, x, threshold)];
      });
      groups.push({ uid: g.uid, taskId: g.taskId, trajectories });
    }
    return { groups, metrics: outcomeMetrics(outcomes), outcomes };
  }
}

/** The run file's `rollout:` section (`task: program`; src/recipes/train-setup.ts, docs/agent-programs.md). */
export const ProgramRolloutSection = z.object({
  /** An executable with `args`, or without `args` a shell command line (`node my-agent.mjs`). */
  command: z.string().min(1),
  args: z.array(z.string()).optional(),
  env: z.record(z.string(), z.string()).optional(),
  cwd: z.string().optional(),
  /** Per rollout; the program's process group is killed after it. */
  timeoutMs: z.number().int().positive().default(120_000),
  /**
   * Training tasks: a JSON array or JSONL file of objects with a string `id` (given to the program on stdin). With an
   * `env:` section instead, the env's tasks (its split and valSplit).
   */
  tasks: z.string().min(1).optional(),
  /** Validation tasks (default: the training tasks). */
  valTasks: z.string().optional(),
  /**
   * `program`: the reward the program POSTs or prints last. `env`: the `env:` section's reward function over the
   * recorded conversation (program-env-reward.ts). `{ module, export? }`: a JS/TS module whose export (default
   * `reward`, else the default export) scores each rollout (`ProgramRewardFn`).
   */
  reward: z.union([z.literal('program'), z.literal('env'), z.object({ module: z.string().min(1), export: z.string().optional() }).strict()]).default('program'),
  /** Programs running at once (default 8). */
  concurrency: z.number().int().positive().default(8),
  maxCallsPerRollout: z.number().int().positive().default(256),
  /** Longest prompt + completion of one call (default: the model's context, else 32768). */
  contextLength: z.number().int().positive().optional(),
  /** One JSON line per failed rollout; default none (failures are still logged and counted). */
  failuresFile: z.string().optional(),
  /** The gateway's port (default: any free one) and bearer token (default none, loopback only). */
  port: z.number().int().min(0).max(65535).default(0),
  token: z.string().optional(),
}).strict();
export type ProgramRolloutSection = z.infer<typeof ProgramRolloutSection>;

/** Loads a `{ module, export? }` reward function. */
export async function loadRewardFn(spec: { module: string; export?: string }): Promise<ProgramRewardFn> {
  const mod = (await import(pathToFileURL(resolve(spec.module)).href)) as Record<string, unknown>;
  const name = spec.export ?? ('reward' in mod ? 'reward' : 'default');
  const fn = mod[name];
  if (typeof fn !== 'function') throw new Error(`rollout.reward: ${spec.module} has no function export ${name} (exports: ${Object.keys(mod).join(', ') || 'none'})`);
  return fn as ProgramRewardFn;
}

export interface ProgramRollouts {
  gateway: GatewayHandle;
  sampler: ProgramGroupSampler;
  trainTasks: string[];
  valTasks?: string[];
  close(): Promise<void>;
}

/** Starts the gateway over `engine` and the sampler of a `rollout:` section. */
export async function startProgramRollouts(section: ProgramRolloutSection, o: {
  engine: InferenceEngine; format: ChatFormat; contextLength: number; maxResponseTokens?: number; maxTokensPerCall?: number; topP?: number; topK?: number; successThreshold?: number; log?: (line: string) => void;
  /** The run's `env:` section, loaded: its tasks when `section.tasks` is absent, its reward for `reward: env`. */
  env?: { tasks: ProgramTask[]; valTasks?: ProgramTask[]; reward: ProgramRewardFn };
}): Promise<ProgramRollouts> {
  if (!section.tasks && !o.env) throw new Error('rollout.tasks: give a tasks file (or an env: section whose tasks the programs run)');
  if (section.reward === 'env' && !o.env) throw new Error('rollout.reward: env needs an env: section (an env defined with defineEnv)');
  const train = section.tasks ? readTasksFile<ProgramTask>(section.tasks) : o.env!.tasks;
  const val = section.valTasks ? readTasksFile<ProgramTask>(section.valTasks) : section.tasks ? undefined : o.env!.valTasks;
  const tasks = new Map<string, ProgramTask>();
  for (const t of [...train, ...(val ?? [])]) {
    const seen = tasks.get(t.id);
    if (seen && JSON.stringify(seen) !== JSON.stringify(t)) throw new Error(`rollout: task id ${t.id} names different tasks in ${section.tasks} and ${section.valTasks}`);
    tasks.set(t.id, t);
  }
  const reward = section.reward === 'program' ? 'program' : section.reward === 'env' ? o.env!.reward : await loadRewardFn(section.reward);
  const gateway = await startGateway({
    engine: o.engine, format: o.format, contextLength: section.contextLength ?? o.contextLength, maxResponseTokens: o.maxResponseTokens,
    maxTokensPerCall: o.maxTokensPerCall, maxCallsPerRollout: section.maxCallsPerRollout, port: section.port, token: section.token ?? null, log: o.log,
  });
  const sampler = new ProgramGroupSampler({
    gateway, tasks, reward, concurrency: section.concurrency, successThreshold: o.successThreshold, topP: o.topP, topK: o.topK, apiKey: section.token,
    failuresFile: section.failuresFile, log: o.log,
    program: { command: section.command, args: section.args, env: section.env, cwd: section.cwd, timeoutMs: section.timeoutMs },
  });
  return { gateway, sampler, trainTasks: train.map((t) => t.id), valTasks: val?.map((t) => t.id), close: () => gateway.close() };
}
