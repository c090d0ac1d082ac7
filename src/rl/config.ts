/**
 * Trainer configuration, validated with zod; the names follow verl's config keys in camelCase (verl.md §5), and the
 * defaults are verl's unless a comment says why not. Batch sizes: `trainBatchSize` and `ppoMiniBatchSize` count
 * PROMPTS (tasks), `ppoMicroBatchSize` counts TRAJECTORIES, as in verl.
 */
import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';
import { KL_PENALTY_TYPES } from './kl.ts';

const klType = z.string().refine((s) => KL_PENALTY_TYPES.includes(s), { message: `must be one of ${KL_PENALTY_TYPES.join(', ')}` });

export const TrainerConfigSchema = z.object({
  data: z.object({
    /** Prompts (tasks) per step: `data.train_batch_size`. */
    trainBatchSize: z.number().int().positive(),
    /** Prompts per generation round with dynamic sampling: `data.gen_batch_size` (default trainBatchSize). */
    genBatchSize: z.number().int().positive().optional(),
  }).strict(),
  rollout: z.object({
    /** Samples per prompt: `rollout.n`. */
    n: z.number().int().positive().default(8),
    temperature: z.number().min(0).default(1),
    topP: z.number().gt(0).max(1).default(1),
    /** −1 = off. */
    topK: z.number().int().default(-1),
    /** `multi_turn.max_assistant_turns`. */
    maxTurns: z.number().int().positive().default(8),
    /** R: token budget after the prompt (model + observation tokens), `rollout.response_length`. */
    maxResponseTokens: z.number().int().positive().default(1024),
    maxTokensPerTurn: z.number().int().positive().optional(),
    /** Episodes in flight at once. */
    concurrency: z.number().int().positive().default(8),
    onParseError: z.enum(['send-text', 'terminate']).default('send-text'),
  }).strict().default({ n: 8, temperature: 1, topP: 1, topK: -1, maxTurns: 8, maxResponseTokens: 1024, concurrency: 8, onParseError: 'send-text' }),
  actor: z.object({
    /** Prompts per optimizer step: `ppo_mini_batch_size` (default: the whole batch, one step). */
    ppoMiniBatchSize: z.number().int().positive().optional(),
    /** Trajectories per forward/backward: `ppo_micro_batch_size_per_gpu` (default: the whole mini-batch). */
    ppoMicroBatchSize: z.number().int().positive().optional(),
    /**
     * Dynamic batch size (`use_dynamic_bsz` + `ppo_max_token_len_per_gpu`): micro-batches by token budget instead of
     * count — ceil(tokens / budget) workload-balanced groups, each micro-batch's gradient scaled by its share of rows.
     */
    ppoMaxTokenLenPerMicro: z.number().int().positive().optional(),
    ppoEpochs: z.number().int().positive().default(1),
    /** `grad_clip` (verl default 1.0). */
    gradClip: z.number().default(1),
    policyLoss: z.enum(['vanilla', 'gspo']).default('vanilla'),
    clipRatio: z.number().min(0).default(0.2),
    clipRatioLow: z.number().min(0).optional(),
    clipRatioHigh: z.number().min(0).optional(),
    clipRatioC: z.number().gt(1).default(3),
    lossAggMode: z.enum(['token-mean', 'seq-mean-token-sum', 'seq-mean-token-mean', 'seq-mean-token-sum-norm']).default('token-mean'),
    lossScaleFactor: z.number().positive().optional(),
    entropyCoeff: z.number().default(0),
    useKlLoss: z.boolean().default(false),
    klLossCoef: z.number().min(0).default(0.001),
    klLossType: klType.default('low_var_kl'),
  }).strict().default({ ppoEpochs: 1, gradClip: 1, policyLoss: 'vanilla', clipRatio: 0.2, clipRatioC: 3, lossAggMode: 'token-mean', entropyCoeff: 0, useKlLoss: false, klLossCoef: 0.001, klLossType: 'low_var_kl' }),
  algorithm: z.object({
    advEstimator: z.enum(['grpo', 'rloo']).default('grpo'),
    /** false = Dr.GRPO. */
    normAdvByStdInGrpo: z.boolean().default(true),
    useKlInReward: z.boolean().default(false),
    klPenalty: klType.default('kl'),
    /** Fixed β of `kl_ctrl`. */
    klCoef: z.number().min(0).default(0.001),
    filterGroups: z.object({
      enable: z.boolean().default(false),
      metric: z.enum(['reward', 'success']).default('reward'),
      /** ≤ 0: unlimited. */
      maxNumGenBatches: z.number().int().default(10),
    }).strict().default({ enable: false, metric: 'reward', maxNumGenBatches: 10 }),
    /** Rollout correction (verl.md §4.8): needs the engine's log-probs. */
    rolloutCorrection: z.object({
      /** Truncated importance weights π_old/π_rollout per token or per sequence, multiplied into the PG loss. */
      rolloutIs: z.enum(['token', 'sequence']).nullable().default(null),
      /** `rollout_is_threshold`. */
      threshold: z.number().positive().default(2),
      /** Use the rollout log-probs as π_old and skip the old-log-prob forward. */
      bypassMode: z.boolean().default(false),
    }).strict().default({ rolloutIs: null, threshold: 2, bypassMode: false }),
    overlongBuffer: z.object({
      enable: z.boolean().default(false),
      len: z.number().int().positive().default(256),
      penaltyFactor: z.number().min(0).default(1),
    }).strict().default({ enable: false, len: 256, penaltyFactor: 1 }),
    /**
     * Partial credit for training only: an episode whose task reward r is below 1 earns `weight` × the share of the
     * task's gold actions it matched (τ²'s action check: right tool, right arguments), r' = r + (1 − r) · weight · f.
     * Validation keeps the task reward. Gives groups different rewards before the policy solves a task outright.
     */
    actionCredit: z.object({
      enable: z.boolean().default(false),
      weight: z.number().min(0).max(1).default(0.5),
      /**
       * 'all' gold actions; only the 'writes' (no credit for reads such as the identity lookups); or 'writes-graded':
       * a matched write 1, a call of the right write tool with other arguments ½.
       */
      actions: z.enum(['all', 'writes', 'writes-graded']).default('all'),
    }).strict().default({ enable: false, weight: 0.5, actions: 'all' }),
  }).strict().default({ advEstimator: 'grpo', normAdvByStdInGrpo: true, useKlInReward: false, klPenalty: 'kl', klCoef: 0.001, filterGroups: { enable: false, metric: 'reward', maxNumGenBatches: 10 }, rolloutCorrection: { rolloutIs: null, threshold: 2, bypassMode: false }, overlongBuffer: { enable: false, len: 256, penaltyFactor: 1 }, actionCredit: { enable: false, weight: 0.5, actions: 'all' } }),
  trainer: z.object({
    totalSteps: z.number().int().positive(),
    seed: z.number().int().min(0).default(0),
    /** Validate every N steps (0: never; also once before training when > 0 and `valBeforeTrain`). */
    testFreq: z.number().int().min(0).default(0),
    /** verl's `val_before_train`: false skips the step-0 validation (e.g. when it was measured already). */
    valBeforeTrain: z.boolean().default(true),
    /** Samples per validation task (pass^k up to k = valN). */
    valN: z.number().int().positive().default(4),
    valTemperature: z.number().min(0).default(1),
    /** Checkpoint every N steps (0: never). */
    saveFreq: z.number().int().min(0).default(0),
    checkpointDir: z.string().optional(),
    /** Resume from the latest checkpoint in checkpointDir when there is one. */
    resume: z.boolean().default(true),
    /** JSONL metrics file (one line per step and per validation). */
    metricsFile: z.string().optional(),
    /** JSONL with one line per episode (training and validation): task, family, reward, token counts, turns, errors. */
    episodesFile: z.string().optional(),
    progress: z.boolean().default(false),
  }).strict(),
}).strict();

export type TrainerConfig = z.infer<typeof TrainerConfigSchema>;
export type TrainerConfigInput = z.input<typeof TrainerConfigSchema>;

/** Validates a config object; errors list every bad field with its path. */
export function parseTrainerConfig(raw: unknown): TrainerConfig {
  const r = TrainerConfigSchema.safeParse(raw);
  if (!r.success) {
    const lines = r.error.issues.map((i) => `  ${i.path.join('.') || '(root)'}: ${i.message}`);
    throw new Error(`invalid trainer config:\n${lines.join('\n')}`);
  }
  const c = r.data;
  const mini = c.actor.ppoMiniBatchSize ?? c.data.trainBatchSize;
  if (mini > c.data.trainBatchSize) throw new Error(`invalid trainer config:\n  actor.ppoMiniBatchSize (${mini}) exceeds data.trainBatchSize (${c.data.trainBatchSize})`);
  const micro = c.actor.ppoMicroBatchSize;
  if (micro !== undefined && (mini * c.rollout.n) % micro !== 0) throw new Error(`invalid trainer config:\n  actor.ppoMicroBatchSize (${micro}) must divide the mini-batch of ${mini}×${c.rollout.n} = ${mini * c.rollout.n} trajectories`);
  if (c.algorithm.overlongBuffer.enable && c.algorithm.overlongBuffer.len > c.rollout.maxResponseTokens) throw new Error('invalid trainer config:\n  algorithm.overlongBuffer.len exceeds rollout.maxResponseTokens');
  return c;
}

/** Reads a YAML (or JSON) config file. The trainer section lives under `grpo:` when the file also holds other stages. */
export function loadTrainerConfigFile(path: string): { config: TrainerConfig; raw: Record<string, unknown> } {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (e) {
    throw new Error(`cannot read config file ${path}: ${(e as Error).message}`, { cause: e });
  }
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (e) {
    throw new Error(`config file ${path} is not valid YAML: ${(e as Error).message}`, { cause: e });
  }
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error(`config file ${path} must hold a mapping`);
  const obj = raw as Record<string, unknown>;
  return { config: parseTrainerConfig(obj.grpo ?? obj), raw: obj };
}
