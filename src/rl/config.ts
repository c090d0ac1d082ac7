/**
 * Trainer configuration, validated with zod; the names follow verl's config keys in camelCase
 * (https://verl.readthedocs.io/en/latest/examples/config.html), and the defaults are verl's unless a comment says why
 * not. Each default is stated once, on its field: a section left out is parsed from `{}` (`prefault`). The names of
 * the estimators, losses, KL penalties and aggregations come from their registries (advantages.ts, policy-loss.ts,
 * kl.ts, aggregate.ts). Batch sizes: `trainBatchSize` and `ppoMiniBatchSize` count PROMPTS (tasks),
 * `ppoMicroBatchSize` counts TRAJECTORIES, as in verl. The formulas behind the knobs are in docs/grpo.md; knobs
 * marked "verl parity" exist so that a verl recipe translates key for key, and no committed run file uses them.
 */
import { z } from 'zod';
import { ADVANTAGE_ESTIMATOR_NAMES } from './advantages.ts';
import { LOSS_AGG_MODES } from './aggregate.ts';
import { KL_PENALTY_TYPES } from './kl.ts';
import { POLICY_LOSS_MODES } from './policy-loss.ts';

const klType = z.enum(KL_PENALTY_TYPES, { error: `must be one of ${KL_PENALTY_TYPES.join(', ')}` });

export const TrainerConfigSchema = z.object({
  data: z.object({
    /** Prompts (tasks) per step: `data.train_batch_size`. */
    trainBatchSize: z.number().int().positive(),
    /** Prompts per generation round with dynamic sampling: `data.gen_batch_size` (default trainBatchSize). */
    genBatchSize: z.number().int().positive().optional(),
    /**
     * Which training tasks a step gets. `shuffle` (default): seeded shuffled passes over the task list. `learnable`:
     * tasks drawn by kind (the trainer's `taskFamily`), each kind weighted by its share of the tasks times
     * (floor + u^power, u its estimated share of informative groups, rewards not all equal), so kinds the policy
     * always or never solves are seldom generated (src/rl/task-sampler.ts). `power` > 1 sharpens the preference.
     * `cost` > 0 divides each kind's weight by its relative tokens per group to that power (1: informative groups per
     * token, the rate a wall-clock budget buys).
     */
    sampling: z.object({
      mode: z.enum(['shuffle', 'learnable']).default('shuffle'),
      floor: z.number().positive().default(0.1),
      decay: z.number().gt(0).max(1).default(0.8),
      prior: z.number().positive().default(2),
      power: z.number().positive().max(8).default(1),
      cost: z.number().min(0).max(4).default(0),
    }).strict().default({ mode: 'shuffle', floor: 0.1, decay: 0.8, prior: 2, power: 1, cost: 0 }),
  }).strict(),
  rollout: z.object({
    /** Samples per prompt: `rollout.n`. */
    n: z.number().int().positive().default(8),
    temperature: z.number().min(0).default(1),
    topP: z.number().gt(0).max(1).default(1),
    /** −1 = off. verl parity. */
    topK: z.number().int().default(-1),
    /**
     * `multi_turn.max_assistant_turns`: model turns per episode, each tool call one (src/rollout/agent-loop.ts); an
     * episode still running after it ends `max_turns` with reward 0. 30 leaves room for retail episodes (up to ~10
     * replies to the user plus their tool calls); watch `rollout/truncated_share`.
     */
    maxTurns: z.number().int().positive().default(30),
    /** R: token budget after the prompt (model + observation tokens), `rollout.response_length`. */
    maxResponseTokens: z.number().int().positive().default(1024),
    maxTokensPerTurn: z.number().int().positive().optional(),
    /** Episodes in flight at once. */
    concurrency: z.number().int().positive().default(8),
    onParseError: z.enum(['send-text', 'terminate']).default('send-text'),
  }).strict().prefault({}),
  actor: z.object({
    /** Prompts per optimizer step: `ppo_mini_batch_size` (default: the whole batch, one step). */
    ppoMiniBatchSize: z.number().int().positive().optional(),
    /** Trajectories per forward/backward: `ppo_micro_batch_size_per_gpu` (default: the whole mini-batch). */
    ppoMicroBatchSize: z.number().int().positive().optional(),
    /**
     * Dynamic batch size (`use_dynamic_bsz` + `ppo_max_token_len_per_gpu`): micro-batches by token budget instead of
     * count — ceil(tokens / budget) workload-balanced groups. Either way the loss is divided by the mini-batch's token
     * or sequence count (aggregate.ts), so the split does not change the update.
     */
    ppoMaxTokenLenPerMicro: z.number().int().positive().optional(),
    /**
     * Passes over the batch per step (`ppo_epochs`). With more than one pass, or more than one mini-batch, the later
     * optimizer steps are off-policy and the PPO ratio and clip take effect; with one of each every step is a plain
     * policy-gradient step.
     */
    ppoEpochs: z.number().int().positive().default(1),
    /** `grad_clip` (verl default 1.0). */
    gradClip: z.number().default(1),
    /**
     * 'vanilla' PPO clip, 'gspo', or 'sft' (−log π per response token: rejection-sampling fine-tuning's loss; only
     * with `algorithm.advEstimator: 'rft'`, where it is the default and the only one accepted).
     */
    policyLoss: z.enum(POLICY_LOSS_MODES).default('vanilla'),
    clipRatio: z.number().min(0).default(0.2),
    clipRatioLow: z.number().min(0).optional(),
    clipRatioHigh: z.number().min(0).optional(),
    /** The dual-clip constant c of the vanilla loss. verl parity. */
    clipRatioC: z.number().gt(1).default(3),
    /** docs/grpo.md, "Aggregation"; `seq-mean-token-sum` is there for verl parity. */
    lossAggMode: z.enum(LOSS_AGG_MODES).default('token-mean'),
    /** seq-mean-token-sum-norm's constant (default: `rollout.maxResponseTokens`). verl parity. */
    lossScaleFactor: z.number().positive().optional(),
    entropyCoeff: z.number().default(0),
    /**
     * KL loss to the reference policy (GRPO's β·KL, DeepSeekMath arXiv 2402.03300). Off by default, as in DAPO
     * (arXiv 2503.14476, §2.3) and Dr.GRPO (arXiv 2503.20783); with it and `algorithm.useKlInReward` both off the
     * trainer computes no reference log-probs and `longrun train` builds no reference model.
     */
    useKlLoss: z.boolean().default(false),
    klLossCoef: z.number().min(0).default(0.001),
    klLossType: klType.default('low_var_kl'),
    /**
     * Skips the forward and backward of rows whose advantage is 0 on every response token when their gradient is
     * exactly zero: a policy loss proportional to the advantage ('vanilla', 'gspo'), no KL loss, no entropy bonus.
     * The aggregation denominators still count them (the update is the same, up to float summation order), and an
     * optimizer step is still taken for a mini-batch that has none left. GRPO's all-equal groups are such rows; with
     * half the groups all equal, half the update's compute. The PPO statistics (`actor/pg_clipfrac`, `actor/ppo_kl`)
     * are then token means over the scored rows.
     */
    skipZeroAdvantageRows: z.boolean().default(true),
  }).strict().prefault({}),
  algorithm: z.object({
    /**
     * 'grpo', 'rloo', or 'rft': online rejection-sampling fine-tuning (expert iteration; RAFT, arXiv 2304.06767;
     * STaR, arXiv 2203.14465), the baseline that shares this trainer's generation, validation, checkpoints and
     * metrics. Each step samples `rollout.n` episodes per task as GRPO does, keeps those whose episode (task) reward
     * is ≥ `rft.minReward`, drops the others from the batch before any forward, and takes an SFT step on the kept
     * ones: the gradient of −Σ_kept Σ_t m·log π / (kept response tokens of the mini-batch) with the default
     * `actor.lossAggMode` token-mean (the other modes weigh the kept sequences as they do for GRPO). No ratio, clip,
     * KL, baseline or std normalisation, and no old-log-prob or reference forward (π_old is the rollout's log-probs,
     * kept only for the `actor/ppo_kl` drift statistic). `actor.policyLoss` defaults to 'sft' and must be it; a KL
     * loss, KL in the reward, an entropy bonus, importance weights, group filtering, partial credit and the overlong
     * penalty are refused. `actor.ppoMiniBatchSize` splits the step as for GRPO (each mini-batch keeps its own kept
     * rows; one with none takes no optimizer step); `actor.ppoEpochs` > 1 makes that many SFT passes over the kept
     * rows (allowed: with no ratio nothing is off-policy). Metrics: `rft/kept_samples`, `rft/kept_share`,
     * `rft/kept_tokens`, `rft/skipped_steps` (optimizer steps skipped because their mini-batch kept no row; with one
     * mini-batch and one epoch, 1 on a step that kept nothing and so changed no weight).
     */
    advEstimator: z.enum([...ADVANTAGE_ESTIMATOR_NAMES, 'gae']).default('grpo'),
    /**
     * 'gae' (above): PPO with a learned critic (the `critic` section, required with it; docs/grpo.md, "PPO with a
     * critic"): token-level GAE over the sampled response tokens with `gamma` and `lam` (verl's
     * compute_gae_advantage_return, observation tokens skipped), whitened over the batch. verl's defaults (1, 1): the
     * advantage of a token is then the episode's return minus its value.
     */
    gamma: z.number().min(0).max(1).default(1),
    lam: z.number().min(0).max(1).default(1),
    rft: z.object({
      /** Episodes with a task reward ≥ this are kept (τ² rewards lie in [0, 1]; 1 = successes only). */
      minReward: z.number().gt(0).max(1).default(1),
    }).strict().prefault({}),
    /** false = Dr.GRPO. With `actionCredit` the std comes from the task rewards (see there). */
    normAdvByStdInGrpo: z.boolean().default(true),
    /** KL in the reward: token_level_rewards = scores − klCoef · kl(old, ref). verl parity, as are the next two. */
    useKlInReward: z.boolean().default(false),
    klPenalty: klType.default('kl'),
    /** Fixed β of `kl_ctrl`. */
    klCoef: z.number().min(0).default(0.001),
    filterGroups: z.object({
      enable: z.boolean().default(false),
      metric: z.enum(['reward', 'success']).default('reward'),
      /** ≤ 0: unlimited. */
      maxNumGenBatches: z.number().int().default(10),
    }).strict().prefault({}),
    /**
     * Rollout correction (docs/grpo.md, "Rollout correction"; https://verl.readthedocs.io/en/latest/algo/rollout_corr.html):
     * needs the engine's log-probs.
     */
    rolloutCorrection: z.object({
      /** Truncated importance weights π_old/π_rollout per token or per sequence, multiplied into the PG loss. verl parity. */
      rolloutIs: z.enum(['token', 'sequence']).nullable().default(null),
      /** `rollout_is_threshold`. verl parity. */
      threshold: z.number().positive().default(2),
      /** Use the rollout log-probs as π_old and skip the old-log-prob forward. */
      bypassMode: z.boolean().default(false),
      /**
       * The sampler-vs-trainer check (docs/grpo.md, "Rollout correction"): where π_old is not recomputed (bypass mode,
       * RFT), the trainer's forward recomputes the log-probs of the rollout's sampled tokens on step 1 and every
       * `checkEvery` steps and logs `rollout/logprob_max_abs_diff` and `rollout/logprob_mean_abs_diff` against the
       * engine's (otherwise π_old is that forward and they are logged every step). 0: never in bypass mode or RFT. It
       * only reads: the training numbers are the same with it on or off.
       */
      checkEvery: z.number().int().min(0).default(10),
      /** A logged alarm (and `rollout/logprob_alarm` = 1) when the largest |Δ log-prob| is above this (nats). */
      alarm: z.number().positive().default(0.01),
    }).strict().prefault({}),
    overlongBuffer: z.object({
      enable: z.boolean().default(false),
      len: z.number().int().positive().default(256),
      penaltyFactor: z.number().min(0).default(1),
    }).strict().prefault({}),
    /**
     * Partial credit for training only: an episode whose task reward r is below 1 earns `weight` × the share of the
     * task's gold actions it matched (τ²'s action check: right tool, right arguments), r' = r + (1 − r) · weight · f.
     * Validation keeps the task reward. Gives groups different rewards before the policy solves a task outright.
     *
     * GRPO's std normalisation scales every group to unit spread, which would give a group that differs only by a
     * 0.1 credit the same ±1 advantages as a group with a real success. With credit on, σ is the std of the group's
     * TASK rewards: a group with successes and failures is normalised as in GRPO (DeepSeekMath, arXiv 2402.03300,
     * §4.1), and a group whose task rewards are all equal is not normalised (divided by 1, as Dr.GRPO does everywhere,
     * arXiv 2503.20783), so its credit differences stay their own size.
     */
    actionCredit: z.object({
      enable: z.boolean().default(false),
      weight: z.number().min(0).max(1).default(0.5),
      /**
       * 'all' gold actions; only the 'writes' (no credit for reads such as the identity lookups); or 'writes-graded':
       * a matched write 1, a call of the right write tool with other arguments ½.
       */
      actions: z.enum(['all', 'writes', 'writes-graded']).default('all'),
    }).strict().prefault({}),
  }).strict().prefault({}),
  /**
   * The learned critic of `algorithm.advEstimator: 'gae'` (src/rl/critic.ts; verl's `critic.*` where a key has a verl
   * counterpart). Absent for the other estimators.
   */
  critic: z.object({
    /**
     * 'head': a linear value head on the policy's final hidden state, trained with the policy (the value loss times
     * `valueCoef` joins each actor micro-batch's loss and reaches the trunk). 'separate': a small gpt-oss model of its
     * own (`model`, a preset; the policy's vocabulary and positions) with a value head, trained before the actor.
     */
    type: z.enum(['head', 'separate']).default('head'),
    /** The critic's AdamW learning rate (the head's alone for 'head'). verl's critic.optim.lr default is 1e-5. */
    lr: z.number().min(0).default(1e-5),
    weightDecay: z.number().min(0).default(0.01),
    /** `cliprange_value`: predictions kept within ± this of the rollout's values (null: no clipping). */
    valueClip: z.number().positive().nullable().default(0.5),
    loss: z.enum(['mse', 'huber']).default('mse'),
    huberDelta: z.number().positive().default(1),
    /** `trainer.critic_warmup`: the first N steps train the critic only (the actor does not update). */
    warmupSteps: z.number().int().min(0).default(0),
    /** 'head' only: the weight of the value loss in the joint loss (PPO's c1, arXiv 1707.06347, Eq. 9). */
    valueCoef: z.number().min(0).default(0.5),
    /** 'separate' only: the critic model's preset (src/model/config.ts) and initialisation seed. */
    model: z.string().default('tiny-1m'),
    seed: z.number().int().min(0).default(0),
    /** `grad_clip` of the critic's optimizer step. */
    gradClip: z.number().default(1),
  }).strict().optional(),
  trainer: z.object({
    totalSteps: z.number().int().positive(),
    /**
     * A training-time budget in seconds: the run stops after the first step that brings the summed `timing/step` of
     * its steps (resumed ones included) to the budget, and checkpoints there (when `checkpointDir` is set). Validation
     * time is not counted. Lets GRPO and its baselines be compared at the same wall time. Unset: no budget.
     */
    maxWallSeconds: z.number().positive().optional(),
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
    /**
     * JSONL metrics file (one line per step and per validation). A resumed run keeps the rows up to its checkpoint's
     * step; a fresh start (no checkpoint, or `resume: false`) empties it, as does `episodesFile`'s.
     */
    metricsFile: z.string().optional(),
    /**
     * JSONL with one line per episode (training and validation): task, sample, family, reward, token counts, turns,
     * errors, and for some episodes the conversation (`episodeTranscripts`). `longrun train` writes it beside
     * `metricsFile` (else in `checkpointDir`) as `episodes.jsonl` when unset; '' writes none.
     */
    episodesFile: z.string().optional(),
    /**
     * Which episodes of `episodesFile` keep their conversation, so the file stays bounded: the first `trainGroups`
     * groups of every training step, the first `valSamples` samples of every validation task, each at most
     * `maxChars` characters (system prompt left out, the rest cut with the counts recorded).
     */
    episodeTranscripts: z.object({
      trainGroups: z.number().int().min(0).default(1),
      valSamples: z.number().int().min(0).default(1),
      maxChars: z.number().int().positive().default(16_000),
    }).strict().prefault({}),
    progress: z.boolean().default(false),
  }).strict(),
}).strict();

export type TrainerConfig = z.infer<typeof TrainerConfigSchema>;

/** Whether a run needs the reference policy: a KL loss or KL in the reward. */
export function needsReferencePolicy(c: Pick<TrainerConfig, 'actor' | 'algorithm'>): boolean {
  return c.actor.useKlLoss || c.algorithm.useKlInReward;
}
export type TrainerConfigInput = z.input<typeof TrainerConfigSchema>;

const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === 'object' && x !== null && !Array.isArray(x);

/** With `algorithm.advEstimator: 'rft'` and no `actor.policyLoss`, the policy loss is 'sft'. */
function withRftDefaults(raw: unknown): unknown {
  if (!isRecord(raw) || !isRecord(raw.algorithm) || raw.algorithm.advEstimator !== 'rft') return raw;
  const actor = raw.actor === undefined ? {} : raw.actor;
  if (!isRecord(actor) || actor.policyLoss !== undefined) return raw;
  return { ...raw, actor: { ...actor, policyLoss: 'sft' } };
}

/** What rejection-sampling fine-tuning refuses (config.ts, algorithm.advEstimator), as `path: reason` lines. */
function rftConflicts(c: TrainerConfig): string[] {
  const a = c.algorithm;
  if (a.advEstimator !== 'rft') return c.actor.policyLoss === 'sft' ? ["actor.policyLoss: 'sft' is rejection-sampling fine-tuning's loss; use it with algorithm.advEstimator: rft"] : [];
  const out: string[] = [];
  if (c.actor.policyLoss !== 'sft') out.push(`actor.policyLoss: algorithm.advEstimator rft takes an SFT step (policyLoss sft, the default with rft), not ${c.actor.policyLoss}`);
  if (c.actor.useKlLoss) out.push('actor.useKlLoss: rft is plain SFT on the kept samples, without a KL loss');
  if (a.useKlInReward) out.push('algorithm.useKlInReward: rft keeps samples by their task reward; a KL term in the reward does not apply');
  if (c.actor.entropyCoeff !== 0) out.push('actor.entropyCoeff: rft is plain SFT on the kept samples, without an entropy bonus');
  if (a.rolloutCorrection.rolloutIs !== null) out.push('algorithm.rolloutCorrection.rolloutIs: an SFT step has no importance weights');
  if (a.filterGroups.enable) out.push("algorithm.filterGroups: DAPO's filter would drop the all-success groups, which are rft's training data");
  if (a.actionCredit.enable) out.push('algorithm.actionCredit: rft keeps samples by their task reward; partial credit does not apply');
  if (a.overlongBuffer.enable) out.push('algorithm.overlongBuffer: rft keeps samples by their task reward; the overlong penalty does not apply');
  return out;
}

/** Validates a config object; errors list every bad field with its path. */
export function parseTrainerConfig(raw: unknown): TrainerConfig {
  const r = TrainerConfigSchema.safeParse(withRftDefaults(raw));
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
  if ((c.algorithm.advEstimator === 'gae') !== (c.critic !== undefined)) {
    throw new Error(c.critic ? "invalid trainer config:\n  critic: a critic is trained only with algorithm.advEstimator: gae" : 'invalid trainer config:\n  algorithm.advEstimator: gae needs a critic section (critic.type head or separate)');
  }
  const rft = rftConflicts(c);
  if (rft.length) throw new Error(`invalid trainer config:\n${rft.map((l) => `  ${l}`).join('\n')}`);
  return c;
}
