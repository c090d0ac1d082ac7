/**
 * Builds a GRPO run from a YAML/JSON file (`longrun train --config FILE`). The file's sections:
 *
 * ```yaml
 * task: toy                      # toy | retail-v0 | retail-v1 (τ² retail, TicketUser) | retail-synth (scripted user)
 * env: { module: ./my-env.ts, export: myEnv, options: {...}, split: train, valSplit: val, maxTasks: 32 }
 *   # instead of task: an env defined with defineEnv (src/tooluse/api/): a module (.ts, .mts, .js, .mjs; the path is
 *   # relative to the working directory, like every path of a run file; options go to an export that is a function)
 *   # or the id of one registered before (`id:`), a built-in one included: `env: { id: longrun/retail-v1, split: base,
 *   # valSplit: test, options: { dataDir, judge, maxSteps, maxErrors } }` is the τ² retail definition (options:
 *   # RETAIL_RUN_OPTIONS, src/domains/retail/register.ts); with `id:` alone, options go to the registered definition
 * retail:                        # task retail-v0 | retail-v1 | retail-synth only: the retail recipe's knobs
 *   tasks: { dataDir: ../shared/tau2/retail, split: base, valSplit: test, maxTasks: 32 }
 *     # retail-synth: dataDir = a task-set folder from `longrun gen tasks` (training), valDir = another (validation)
 *   prepare: { dir, seed, tasks: {...}, expert: {...}, tokenizer: {...} }   # optional data stage, see prepare.ts
 *   curriculum: { outDir, stages: [...] }   # copy drills before SFT
 *   stream: {...}                # retail-synth: the SFT data as fresh conversations, instead of sft.data (stream.ts)
 *   drills: { copy, identity, address, write }   # mixed into the documents of sft.data
 *   # every key: src/recipes/retail/run-section.ts and src/recipes/README.md
 * policy:                        # tabular (toy only) | gpt-oss
 *   type: gpt-oss
 *   checkpoint: out/sft/model    # or `preset: tiny-1m` for a fresh model (vocabSize from the tokenizer)
 *   modelConfig: { max_position_embeddings: 8192 }   # preset overrides (a checkpoint: sliding_window, layer_types, max_position_embeddings only)
 *   sinks: exact                 # exact | ignore (attention without the sink logits: the sinks ablation)
 *   tokenizer: out/sft/tokenizer.json   # a BPE file, o200k_harmony or qwen3 (not needed for the toy task)
 *   format: harmony              # chat format: harmony | hermes | qwen3 (toy task: its own word format)
 *   lr: 1e-5
 *   reference: frozen-copy       # frozen-copy | adapters-off (built only when grpo has a KL loss or KL in the reward)
 * engine: { type: in-process, batching: step, maxBatchSize: 16 }   # or { type: openai, baseUrl, model }
 * backend: { type: tinker, baseUrl: http://127.0.0.1:8010, model: openai/gpt-oss-20b, lora: { rank: 32 } }
 *   # optional: the policy's weights live and train on a Tinker-compatible service (docs/tinker.md); SFT and GRPO
 * sft: { data: trajectories.jsonl, outDir: out/sft, config: { ... SftConfig } }   # optional stage before GRPO
 * grpo: { ... TrainerConfig, see config.ts }
 * rollout: { command: node my-agent.mjs, tasks: tasks.json, timeoutMs: 120000, reward: program }   # with task: program or env:
 *   # agent programs through the trajectory gateway are the rollouts (src/rollout/program-sampler.ts, docs/agent-programs.md)
 * ```
 */
import { isRetailTask, movedKeyErrors, RETAIL_TASKS, RetailSectionSchema, retailSectionConflicts, retailTaskOptions, type RetailTaskOptions } from './retail/run-section.ts';
import type { LoadedSynthTaskSet } from '../domains/retail/synth/taskset.ts';
import { z } from 'zod';
import type { ChatFormat, Tokenizer, ToolSpec } from '../llm/index.ts';
import { CHAT_FORMAT_NAMES, createChatFormat, loadTokenizer } from '../llm/index.ts';
import { presetConfig, type GptOssConfigInput } from '../model/config.ts';
import { GptOssModel } from '../model/model.ts';
import { loadModel, type WeightFreeConfig } from '../model/checkpoint/index.ts';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { listCheckpoints } from '../rl/sft-checkpoint.ts';
import type { AgentEnv } from '../rollout/agent-loop.ts';
import { withoutSessions, type InferenceEngine } from '../rollout/inference.ts';
import { createModelEngine, createStepModelEngine } from '../rollout/model-engine.ts';
import { OpenAICompatibleEngine } from '../rollout/openai-engine.ts';
import { GREETING } from '../tooluse/orchestrator.ts';
import { needsReferencePolicy, parseTrainerConfig, type TrainerConfig } from '../rl/config.ts';
import { GptOssPolicy } from '../rl/model-policy.ts';
import type { TrainingBackend } from '../rl/backend.ts';
import { BackendEngine, BackendPolicy } from '../rl/backend-policy.ts';
import type { Policy } from '../rl/policy.ts';
import { TinkerBackend } from '../rl/tinker/backend.ts';
import type { TrainerDeps } from '../rl/trainer.ts';
import { createToySetup } from './toy/toy-task.ts';
import { ProgramRolloutSection, startProgramRollouts } from '../rollout/program-sampler.ts';
import type { AnyEnvDefinition } from '../tooluse/api/define.ts';

export const RunFileSchema = z.object({
  /** `program`: agent programs run through the trajectory gateway are the rollouts (the `rollout:` section). */
  task: z.enum(['toy', 'retail-v0', 'retail-v1', 'retail-synth', 'program']).optional(),
  /** Instead of `task`: an env defined with the environment API (src/tooluse/api/), from a module or by id. */
  env: z.object({
    /** A .ts, .mts, .js or .mjs module, relative to the working directory. */
    module: z.string().min(1).optional(),
    /** A defined env's id (registered before, or by `module`, which then may register several). */
    id: z.string().min(1).optional(),
    /** The module's export (default: its default export, else its one env export). */
    export: z.string().min(1).optional(),
    /**
     * With `module`: passed to the export when it is a function returning the env. With `id` alone: to the registered
     * definition when it is made from options (the retail envs': dataDir, judge, maxSteps, maxErrors, …).
     */
    options: z.record(z.string(), z.unknown()).optional(),
    split: z.string().default('train'),
    valSplit: z.string().optional(),
    /** Use only the first N training tasks. */
    maxTasks: z.number().int().positive().optional(),
  }).strict().refine((e) => e.module !== undefined || e.id !== undefined, 'give env.module (a module of yours) or env.id (a defined env)')
    .refine((e) => e.module !== undefined || e.export === undefined, 'env.export applies to env.module').optional(),
  /**
   * The retail recipe's knobs (src/recipes/retail/run-section.ts): tasks, data stage, curriculum, stream, drills.
   * Only with task retail-v0, retail-v1 or retail-synth.
   */
  retail: RetailSectionSchema.optional(),
  policy: z.object({
    type: z.enum(['tabular', 'gpt-oss']),
    checkpoint: z.string().optional(),
    preset: z.string().optional(),
    /**
     * Overrides of the preset's config (e.g. max_position_embeddings for the long retail prompts); with a checkpoint,
     * only the keys that change no weight (sliding_window, layer_types, max_position_embeddings: the window ablation).
     */
    modelConfig: z.record(z.string(), z.unknown()).optional(),
    /**
     * 'ignore': attention treats the sink logits as −∞ everywhere (training, rollouts, validation); the sinks get no
     * gradient and are saved unchanged, so evaluate such a run's checkpoints with `eval --ignore-sinks`. The sinks
     * ablation (ModelOptions.sinks). Default 'exact'.
     */
    sinks: z.enum(['exact', 'ignore']).default('exact'),
    tokenizer: z.string().optional(),
    /** qwen3 needs tokenizer qwen3 (docs/tinker.md). */
    format: z.enum(CHAT_FORMAT_NAMES).default('harmony'),
    lr: z.number().positive().optional(),
    weightDecay: z.number().min(0).default(0.01),
    reference: z.enum(['frozen-copy', 'adapters-off']).default('frozen-copy'),
    seed: z.number().int().min(0).default(0),
    /** A fresh model (`preset`) starts lm_head as a copy of the embedding (ModelOptions.tiedInit). */
    tiedInit: z.boolean().default(false),
  }).strict(),
  engine: z.object({
    type: z.enum(['in-process', 'openai']).default('in-process'),
    /** In-process batching: per request batch ('request') or iteration-level continuous batching ('step'). */
    batching: z.enum(['request', 'step']).default('step'),
    maxBatchSize: z.number().int().positive().default(16),
    maxBatchTokens: z.number().int().positive().optional(),
    /** Step batching: KV positions reserved per trajectory so turns reuse the cache (default: the model's max positions). */
    sessionCapacity: z.number().int().positive().optional(),
    /**
     * 'keep': a trajectory's turns carry its session id, so an engine that keeps KV caches prefills only each turn's new
     * tokens; 'reprefill': every turn is a fresh request and the whole conversation is prefilled again (the plain
     * sampling loop; docs/results/ablations/, the rollout dataflow).
     */
    kvCache: z.enum(['keep', 'reprefill']).default('keep'),
    baseUrl: z.string().optional(),
    model: z.string().optional(),
    concurrency: z.number().int().positive().optional(),
  }).strict().prefault({}),
  /**
   * Where the policy's weights live and train; absent: in process. `type: tinker` is a Tinker-compatible service
   * (`longrun serve trainer`, the hosted Tinker API; src/rl/tinker/, the tinker SDK 0.38 protobuf wire format with a JSON fallback): the
   * GRPO/RFT actor update runs there as forward_backward + optim_step (backend-update.ts), the old log-probs are a
   * forward there, the rollouts sample there, checkpoints are saved there (`tinker-state.json` records the path).
   * The API key comes from the environment (`TINKER_API_KEY`), never from the run file.
   */
  backend: z.object({
    type: z.literal('tinker'),
    /** Default: env TINKER_BASE_URL, else the hosted service. */
    baseUrl: z.string().url().optional(),
    /** The server's base model name (`base_model`), e.g. openai/gpt-oss-20b. */
    model: z.string().min(1),
    /** LoRA adapters (the hosted service trains LoRA only); absent: every weight, where the server allows it. */
    lora: z.object({
      rank: z.number().int().min(1),
      /** Adapter initialisation seed (default policy.seed). */
      seed: z.number().int().min(0).optional(),
      trainAttn: z.boolean().default(true),
      trainMlp: z.boolean().default(true),
      trainUnembed: z.boolean().default(true),
    }).strict().optional(),
    /**
     * Adam's betas and ε sent with every optim_step. Defaults: the in-process AdamW's (0.9, 0.999, 1e-8), so a run
     * trains the same on either side; the learning rate and decoupled weight decay are policy.lr and policy.weightDecay.
     */
    /**
     * The wire format of forward_backward/forward: `protobuf` (default; the tinker SDK 0.38 format, JSON when the
     * server announces no protobuf) or `json` (the SDK ≤ 0.24.x format, for servers that speak only that).
     */
    wire: z.enum(['protobuf', 'json']).default('protobuf'),
    adam: z.object({
      beta1: z.number().min(0).lt(1).default(0.9),
      beta2: z.number().min(0).lt(1).default(0.999),
      eps: z.number().positive().default(1e-8),
    }).strict().prefault({}),
  }).strict().optional(),
  sft: z.object({
    /** Trajectories JSONL (`longrun rollout` output); for retail-synth, `retail.stream` instead. */
    data: z.string().optional(),
    /**
     * A checkpoint folder (weights, optimizer, trainer state: e.g. a committed one under models/) to continue from
     * when `outDir` holds no checkpoint yet, so a long run carries over to a machine without its runs/ folder.
     */
    resumeFrom: z.string().optional(),
    outDir: z.string(),
    config: z.record(z.string(), z.unknown()).default({}),
  }).strict().optional(),
  /** task program: the agent program run per rollout, its tasks and reward (src/rollout/program-sampler.ts, docs/agent-programs.md). */
  rollout: ProgramRolloutSection.optional(),
  grpo: z.unknown().optional(),
}).strict();

export type RunFile = z.infer<typeof RunFileSchema>;

/** A run file whose GRPO section may be absent (a run of the data, curriculum and SFT stages only, e.g. pretraining). */
export function parseStagesRunFile(raw: unknown): { run: RunFile; trainer: TrainerConfig | null } {
  const moved = movedKeyErrors(raw);
  if (moved.length) {
    const task = (raw as Record<string, unknown>).task;
    const note = isRetailTask(typeof task === 'string' ? task : undefined) ? [] : [`retail: goes with task ${RETAIL_TASKS.join(', ')} only${(raw as Record<string, unknown>).env !== undefined ? '; env: takes split, valSplit and maxTasks itself' : ''}`];
    throw new Error(`invalid run config (the retail recipe's knobs live in its retail: section):\n${[...moved, ...note].map((l) => `  ${l}`).join('\n')}`);
  }
  const r = RunFileSchema.safeParse(raw);
  if (!r.success) throw new Error(`invalid run config:\n${r.error.issues.map((i) => `  ${i.path.join('.') || '(root)'}: ${i.message}`).join('\n')}`);
  if ((r.data.task === undefined) === (r.data.env === undefined)) throw new Error('invalid run config:\n  task: give exactly one of task (a built-in task) and env (an env defined with defineEnv)');
  const retail = retailSectionConflicts(r.data);
  if (retail.length) throw new Error(`invalid run config:\n${retail.map((l) => `  ${l}`).join('\n')}`);
  const sft = r.data.sft;
  if (sft && sft.data === undefined && r.data.retail?.stream === undefined) throw new Error('invalid run config:\n  sft.data: the SFT stage needs a trajectories file (or, for task retail-synth, a stream of fresh conversations: retail.stream)');
  if (r.data.task === 'program' ? r.data.rollout === undefined : r.data.rollout !== undefined && r.data.env === undefined) throw new Error('invalid run config:\n  rollout: a rollout section (an agent program) goes with task: program or an env: section, and task program needs one');
  const trainer = r.data.grpo === undefined ? null : parseTrainerConfig(r.data.grpo);
  if (r.data.backend) {
    const bad = backendConflicts(r.data, trainer);
    if (bad.length) throw new Error(`invalid run config:\n${bad.map((l) => `  ${l}`).join('\n')}`);
  }
  return { run: r.data, trainer };
}

/** What a run on a training backend (`backend:`) cannot do, as `path: reason` lines. */
function backendConflicts(run: RunFile, trainer: TrainerConfig | null): string[] {
  const out: string[] = [];
  const why = 'the backend trains through Tinker\'s losses only (src/rl/backend-update.ts)';
  if (run.policy.type !== 'gpt-oss') out.push(`policy.type: a run on a training backend needs policy.type gpt-oss (its tokenizer and chat format), not ${run.policy.type}`);
  if (run.retail?.curriculum) out.push('retail.curriculum: the copy curriculum trains in process; run it without backend first, or drop it');
  if (run.engine.type === 'openai') out.push('engine.type: with a backend the rollouts sample on the backend; drop engine.type openai');
  if (run.engine.kvCache === 'reprefill') out.push('engine.kvCache: with a backend the rollouts sample on the backend, which takes whole contexts; drop engine.kvCache reprefill');
  if (trainer === null && !run.sft) out.push('grpo: a run on a training backend needs a grpo or an sft section');
  if (trainer !== null) {
    if (trainer.actor.useKlLoss) out.push(`grpo.actor.useKlLoss: ${why}; a KL loss needs a reference model`);
    if (trainer.algorithm.useKlInReward) out.push('grpo.algorithm.useKlInReward: a run on a training backend builds no reference model');
    if (trainer.actor.entropyCoeff !== 0) out.push(`grpo.actor.entropyCoeff: ${why}; no entropy bonus`);
    if (trainer.actor.policyLoss === 'gspo') out.push(`grpo.actor.policyLoss: ${why}; gspo has none (vanilla → ppo, sft → cross_entropy)`);
    if (trainer.rollout.temperature !== 1) out.push(`grpo.rollout.temperature: a training backend scores at temperature 1; got ${trainer.rollout.temperature}`);
  }
  return out;
}

export function parseRunFile(raw: unknown): { run: RunFile; trainer: TrainerConfig } {
  const { run, trainer } = parseStagesRunFile(raw);
  if (trainer === null) throw new Error('invalid run config:\n  grpo: the GRPO trainer section is required');
  return { run, trainer };
}

/**
 * A raw run file whose gpt-oss policy starts from `checkpoint` (a model folder or SFT checkpoint) instead of a preset,
 * with the data and SFT stages left out: for tools that evaluate or continue an existing run.
 */
export function runFileFromCheckpoint(raw: unknown, checkpoint: string, options: { keepSft?: boolean } = {}): Record<string, unknown> {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new Error('invalid run config: not a mapping');
  const file = { ...(raw as Record<string, unknown>) };
  const policy: Record<string, unknown> = { ...(file.policy as Record<string, unknown> | undefined), checkpoint };
  delete policy.preset;
  delete policy.modelConfig;
  // A checkpoint is past the data stage and the curriculum (running it again would train over the loaded weights);
  // the stream and the drills are the SFT stage's data.
  if (file.retail !== null && typeof file.retail === 'object' && !Array.isArray(file.retail)) {
    const retail = { ...(file.retail as Record<string, unknown>) };
    delete retail.prepare;
    delete retail.curriculum;
    if (!options.keepSft) {
      delete retail.stream;
      delete retail.drills;
    }
    file.retail = retail;
  }
  if (!options.keepSft) delete file.sft;
  return { ...file, policy };
}

export interface BuiltRun {
  deps: Omit<TrainerDeps, 'config' | 'log'>;
  /** Ends what the run holds open (a training backend's session). */
  close?: () => Promise<void>;
  /** The gpt-oss model, when the policy is one and trains in process (for the SFT stage). */
  model?: GptOssModel;
  /** The training backend the policy trains on (`backend:`), for the SFT stage. */
  backend?: TrainingBackend;
  tokenizer: Tokenizer;
  /** System prompt and tools the rollouts see, for rendering the SFT data the same way (retail-synth). */
  conversation?: { systemPrompt: string; tools: ToolSpec[] };
}

function engineFor(run: RunFile, model: GptOssModel | undefined, fallback: InferenceEngine | undefined): InferenceEngine {
  const engine = sessionEngineFor(run, model, fallback);
  return run.engine.kvCache === 'reprefill' ? withoutSessions(engine) : engine;
}

function sessionEngineFor(run: RunFile, model: GptOssModel | undefined, fallback: InferenceEngine | undefined): InferenceEngine {
  if (run.engine.type === 'openai') {
    if (!run.engine.baseUrl || !run.engine.model) throw new Error('engine.type openai needs engine.baseUrl and engine.model');
    return new OpenAICompatibleEngine({ baseUrl: run.engine.baseUrl, model: run.engine.model, concurrency: run.engine.concurrency });
  }
  if (model) {
    const o = { maxBatchSize: run.engine.maxBatchSize, maxBatchTokens: run.engine.maxBatchTokens, sessionCapacity: run.engine.sessionCapacity ?? model.config.max_position_embeddings };
    return run.engine.batching === 'step' ? createStepModelEngine(model, o) : createModelEngine(model, o);
  }
  if (fallback) return fallback;
  throw new Error('no in-process engine for this policy');
}

interface PolicyAndEngine {
  model?: GptOssModel;
  policy: Policy;
  engine: InferenceEngine;
  actorUpdate?: TrainerDeps['actorUpdate'];
  backend?: TrainingBackend;
  close?: () => Promise<void>;
}

/** The gpt-oss policy and its rollout engine: in process (`gptOss`), or on the run's training backend. */
async function policyAndEngine(run: RunFile, vocabSize: number): Promise<PolicyAndEngine> {
  const b = run.backend;
  if (!b) {
    const { model, policy } = gptOss(run, vocabSize);
    return { model, policy, engine: engineFor(run, model, undefined) };
  }
  const lora = b.lora && { rank: b.lora.rank, seed: b.lora.seed ?? run.policy.seed, train_attn: b.lora.trainAttn, train_mlp: b.lora.trainMlp, train_unembed: b.lora.trainUnembed };
  const backend = await TinkerBackend.create({ baseUrl: b.baseUrl, baseModel: b.model, lora, wire: b.wire });
  const policy = new BackendPolicy(backend, { learningRate: run.policy.lr ?? 1e-5, beta1: b.adam.beta1, beta2: b.adam.beta2, eps: b.adam.eps, weightDecay: run.policy.weightDecay });
  return { policy, engine: new BackendEngine(backend), actorUpdate: policy.actorUpdate(), backend, close: () => backend.close() };
}

/**
 * The folder the policy is loaded from: `policy.checkpoint`, or, when that folder is gone (a `runs/` folder made on
 * another machine) and the run's SFT stage continues from a checkpoint anyway (its own newest, or `sft.resumeFrom`),
 * that checkpoint: its weights replace the start's on resume, so the run is the same. (A KL reference is then built from
 * that checkpoint too, since the start's weights are gone.)
 */
export function policySource(run: RunFile): string | undefined {
  const p = run.policy.checkpoint;
  if (p === undefined || existsSync(p) || !run.sft) return p;
  const own = listCheckpoints(join(run.sft.outDir, 'checkpoints'));
  if (own.length > 0) return own[own.length - 1]!.dir;
  if (run.sft.resumeFrom !== undefined && sftResumeKind(run.sft.resumeFrom) !== null) return run.sft.resumeFrom;
  return p;
}

/**
 * What `sft.resumeFrom` holds: an SFT checkpoint (`trainer.json` beside the weights and optimizer state: the stage
 * continues at its step), a model folder (`config.json` and `.safetensors` weights: the stage starts from its weights
 * with a fresh optimizer at step 0), or neither (null).
 */
export function sftResumeKind(dir: string): 'checkpoint' | 'weights' | null {
  if (existsSync(join(dir, 'trainer.json'))) return 'checkpoint';
  if (existsSync(join(dir, 'config.json')) && statSync(dir).isDirectory() && readdirSync(dir).some((f) => f.endsWith('.safetensors'))) return 'weights';
  return null;
}

/**
 * The gpt-oss policy. The frozen reference copy (a second model in memory, and a forward per step) is built only when
 * the GRPO section has a KL term; without one the policy has no reference.
 */
function gptOss(run: RunFile, vocabSize: number): { model: GptOssModel; policy: Policy } {
  const p = { ...run.policy, checkpoint: policySource(run) };
  // A checkpoint's config takes only the keys that change no weight (loadModel refuses the others).
  const fromCheckpoint = { sinks: p.sinks, ...(p.modelConfig ? { config: p.modelConfig as WeightFreeConfig } : {}) };
  const build = () => {
    if (p.checkpoint) return loadModel(p.checkpoint, { grads: true, ...fromCheckpoint });
    if (!p.preset) throw new Error('policy.type gpt-oss needs policy.checkpoint or policy.preset');
    return new GptOssModel(presetConfig(p.preset, { ...(p.modelConfig as Partial<GptOssConfigInput> | undefined), vocab_size: vocabSize }), { seed: p.seed, tiedInit: p.tiedInit, sinks: p.sinks });
  };
  const model = build();
  if (model.config.vocab_size < vocabSize) throw new Error(`the model's vocabulary (${model.config.vocab_size}) is smaller than the tokenizer's (${vocabSize})`);
  let reference: GptOssModel | 'adapters-off' | null = null;
  if (run.grpo === undefined || needsReferencePolicy(parseTrainerConfig(run.grpo))) {
    if (p.reference === 'adapters-off') reference = 'adapters-off';
    else reference = p.checkpoint ? loadModel(p.checkpoint, { grads: false, ...fromCheckpoint }) : new GptOssModel(model.config, { seed: p.seed, grads: false, tiedInit: p.tiedInit, sinks: p.sinks });
  }
  return { model, policy: new GptOssPolicy(model, { optimizer: { lr: p.lr ?? 1e-5, weightDecay: p.weightDecay }, reference }) };
}

export async function buildRun(run: RunFile): Promise<BuiltRun> {
  if (run.rollout) return buildProgramRun(run);
  if (run.env) return buildEnvRun(run);
  if (run.task === 'toy') {
    const s = createToySetup({ lr: run.policy.type === 'tabular' ? run.policy.lr : undefined });
    const common = { format: s.format as ChatFormat, makeEnv: s.makeEnv as () => AgentEnv, trainTasks: s.taskIds, valTasks: s.taskIds, padId: s.padId };
    if (run.policy.type === 'tabular') return { deps: { ...common, policy: s.policy, engine: engineFor(run, undefined, s.engine) }, tokenizer: s.tokenizer };
    const { model, policy, engine, actorUpdate, backend, close } = await policyAndEngine(run, s.tokenizer.vocabSize);
    return { deps: { ...common, policy, engine, actorUpdate }, model, backend, tokenizer: s.tokenizer, close };
  }
  if (run.policy.type !== 'gpt-oss') throw new Error(`policy.type ${run.policy.type} only works with task: toy`);
  if (!run.policy.tokenizer) throw new Error('the retail task needs policy.tokenizer (a BPE file, o200k_harmony or qwen3)');
  if (run.task === 'retail-synth') return buildSynthRun(run);
  const { makeRetailEnv, loadRetailTaskSet } = await import('../domains/retail/register.ts');
  const version = run.task === 'retail-v0' ? 'v0' : 'v1';
  const tokenizer = loadTokenizer(run.policy.tokenizer);
  const format = createChatFormat(run.policy.format, tokenizer);
  const o = retailTaskOptions(run);
  const train = loadRetailTaskSet({ dataDir: o.dataDir, version, split: o.split }).tasks.slice(0, o.maxTasks);
  const val = o.valSplit ? loadRetailTaskSet({ dataDir: o.dataDir, version, split: o.valSplit }).tasks : undefined;
  const { model, policy, engine, actorUpdate, backend, close } = await policyAndEngine(run, tokenizer.vocabSize);
  const pad = padIdOf(tokenizer);
  return {
    close,
    deps: {
      policy,
      engine,
      actorUpdate,
      format,
      makeEnv: () => makeRetailEnv(version, { dataDir: o.dataDir, split: o.split }),
      trainTasks: train.map((t) => t.id),
      valTasks: val?.map((t) => t.id),
      makeValEnv: o.valSplit ? () => makeRetailEnv(version, { dataDir: o.dataDir, split: o.valSplit }) : undefined,
      padId: pad,
      loop: { greeting: GREETING },
    },
    model,
    backend,
    tokenizer,
  };
}

/**
 * The defined env of a run file's `env:` section: the module loaded (`options` to its export), then, when `id` names
 * another env (or there is no module), the registered definition of that id (`options` to it when there is no module;
 * the built-in envs' definitions, τ² retail's, are registered first).
 */
export async function runEnvDefinition(e: NonNullable<RunFile['env']>): Promise<AnyEnvDefinition> {
  const { loadEnvModule, getEnvDefinition } = await import('../tooluse/api/registry.ts');
  let def = e.module !== undefined ? await loadEnvModule(e.module, e.export, e.options) : undefined;
  if (e.id !== undefined && def?.id !== e.id) {
    (await import('../envs.ts')).registerBuiltinEnvs();
    def = getEnvDefinition(e.id, e.module === undefined ? e.options : undefined);
  }
  if (!def) throw new Error('env: give env.module or env.id');
  return def;
}

/**
 * An env defined with the environment API (src/tooluse/api/): its tasks, families, greeting, and the system prompt
 * and tools (when known without an episode, i.e. no tool sources) for rendering SFT data as the rollouts see it.
 */
async function buildEnvRun(run: RunFile): Promise<BuiltRun> {
  const e = run.env!;
  const def = await runEnvDefinition(e);
  if (run.policy.type !== 'gpt-oss') throw new Error(`policy.type ${run.policy.type} only works with task: toy; env ${def.id} needs policy.type gpt-oss`);
  if (!run.policy.tokenizer) throw new Error(`env ${def.id} needs policy.tokenizer (a BPE file, o200k_harmony or qwen3)`);
  const train = (await def.tasks(e.split)).slice(0, e.maxTasks);
  const val = e.valSplit !== undefined ? await def.tasks(e.valSplit) : undefined;
  const tokenizer = loadTokenizer(run.policy.tokenizer);
  const format = createChatFormat(run.policy.format, tokenizer);
  const { model, policy, engine, actorUpdate, backend, close } = await policyAndEngine(run, tokenizer.vocabSize);
  const pad = padIdOf(tokenizer);
  const families = new Map<string, string | undefined>([...train, ...(val ?? [])].map((t) => [t.id, def.familyOf(t)]));
  const tools = def.toolSpecs();
  const conversation = tools ? { systemPrompt: def.spec.instructions, tools } : undefined;
  const split = e.split;
  const valSplit = e.valSplit;
  return {
    close,
    deps: {
      policy,
      engine,
      actorUpdate,
      format,
      makeEnv: () => def.makeEnv({ split }),
      trainTasks: train.map((t) => t.id),
      valTasks: val?.map((t) => t.id),
      makeValEnv: valSplit !== undefined ? () => def.makeEnv({ split: valSplit }) : undefined,
      taskFamily: def.spec.family ? (id) => families.get(id) : undefined,
      padId: pad,
      loop: { ...(def.spec.greeting !== undefined ? { greeting: def.spec.greeting } : {}), ...conversation },
    },
    model,
    backend,
    tokenizer,
    conversation,
  };
}

/** Agent programs as the rollouts: the gateway serves the policy's engine and records what the programs sample. */
async function buildProgramRun(run: RunFile): Promise<BuiltRun> {
  if (run.policy.type !== 'gpt-oss') throw new Error(`agent programs need policy.type gpt-oss, not ${run.policy.type}`);
  if (!run.policy.tokenizer) throw new Error('agent programs need policy.tokenizer (a BPE file, o200k_harmony or qwen3)');
  // With an env: section, the env's tasks go to the programs and its reward can score them (program-env-reward.ts).
  let env: Parameters<typeof startProgramRollouts>[1]['env'];
  if (run.env) {
    const { envRewardFn } = await import('../rollout/program-env-reward.ts');
    const def = await runEnvDefinition(run.env);
    env = { tasks: (await def.tasks(run.env.split)).slice(0, run.env.maxTasks), valTasks: run.env.valSplit !== undefined ? await def.tasks(run.env.valSplit) : undefined, reward: envRewardFn(def) };
  }
  const tokenizer = loadTokenizer(run.policy.tokenizer);
  const format = createChatFormat(run.policy.format, tokenizer);
  const { model, policy, engine, actorUpdate, backend, close } = await policyAndEngine(run, tokenizer.vocabSize);
  const r = run.grpo === undefined ? undefined : parseTrainerConfig(run.grpo).rollout;
  const programs = await startProgramRollouts(run.rollout!, {
    engine, format, contextLength: model?.config.max_position_embeddings ?? 32_768, maxResponseTokens: r?.maxResponseTokens, maxTokensPerCall: r?.maxTokensPerTurn,
    topP: r?.topP, topK: r && r.topK > 0 ? r.topK : undefined, log: (line) => console.error(line), env,
  });
  return {
    close: async () => {
      await programs.close();
      await close?.();
    },
    deps: {
      policy, engine, actorUpdate, format, groupSampler: programs.sampler, trainTasks: programs.trainTasks, valTasks: programs.valTasks,
      makeEnv: () => {
        throw new Error('program rollouts are run by the agent program (rollout.command), not by an env loop');
      },
      padId: padIdOf(tokenizer),
    },
    model,
    backend,
    tokenizer,
  };
}

/** The id rows are padded with: the tokenizer's `<|endoftext|>`, else `<pad>`, else 0. */
function padIdOf(tokenizer: Tokenizer): number {
  return tokenizer.specialTokens.get('<|endoftext|>') ?? tokenizer.specialTokens.get('<pad>') ?? 0;
}

/** The GRPO training tasks of a synthetic task set: the first `maxTasks`, of the `trainFamilies` when given. */
function trainTasksOf(tasks: LoadedSynthTaskSet['tasks'], o: RetailTaskOptions): string[] {
  const families = o.trainFamilies ? new Set<string>(o.trainFamilies) : undefined;
  const kept = families ? tasks.filter((t) => families.has(t.longrun.family)) : tasks;
  if (kept.length === 0) throw new Error(`retail.tasks.trainFamilies ${JSON.stringify(o.trainFamilies)}: the training task set has no task of these families`);
  return kept.slice(0, o.maxTasks).map((t) => t.id);
}

/** Synthetic retail task sets (`longrun gen tasks`) played against the scripted user. */
async function buildSynthRun(run: RunFile): Promise<BuiltRun> {
  const { readTaskSet } = await import('../domains/retail/synth/taskset.ts');
  const { makeSynthRetailEnv } = await import('../domains/retail/synth/env.ts');
  const { conversationDefaults } = await import('./retail/prepare.ts');
  const o = retailTaskOptions(run);
  if (!o.dataDir) throw new Error('task retail-synth needs retail.tasks.dataDir (a task-set folder from `longrun gen tasks`)');
  if (!run.policy.tokenizer) throw new Error('the retail task needs policy.tokenizer (a BPE file, o200k_harmony or qwen3)');
  const trainSet = readTaskSet(o.dataDir);
  const valSet = o.valDir ? readTaskSet(o.valDir) : undefined;
  const tokenizer = loadTokenizer(run.policy.tokenizer);
  const format = createChatFormat(run.policy.format, tokenizer);
  const { model, policy, engine, actorUpdate, backend, close } = await policyAndEngine(run, tokenizer.vocabSize);
  const pad = padIdOf(tokenizer);
  const envOptions = { maxSteps: o.maxSteps };
  // The same system prompt and tool schemas for the SFT data and the rollouts (train and validation).
  const conversation = conversationDefaults(trainSet, o.tools);
  const families = new Map([...trainSet.tasks, ...(valSet?.tasks ?? [])].map((t) => [t.id, t.longrun.family]));
  return {
    close,
    deps: {
      policy,
      engine,
      actorUpdate,
      format,
      makeEnv: () => makeSynthRetailEnv(trainSet, { ...envOptions, maxRefusals: o.trainMaxRefusals }),
      trainTasks: trainTasksOf(trainSet.tasks, o),
      valTasks: valSet?.tasks.map((t) => t.id),
      makeValEnv: valSet ? () => makeSynthRetailEnv(valSet, envOptions) : undefined,
      taskFamily: (id) => families.get(id),
      padId: pad,
      loop: { greeting: GREETING, ...conversation },
    },
    model,
    backend,
    tokenizer,
    conversation,
  };
}
