/**
 * `GrpoTrainer`: GRPO (and its relatives) over tool-use episodes, in the order of verl's PPO trainer loop
 * (https://verl.readthedocs.io/en/latest/workers/ray_trainer.html). `trainStep` reads top to bottom as the phases
 * of one step, each described with its formulas in docs/grpo.md ("The phases of a step"):
 *   rollout (n episodes per task, grouped by uid; DAPO's dynamic sampling when on) → rewards (the episode's score on
 *   its last response token, shaped once) → old log-probs (current weights, no grad) → reference log-probs (only
 *   with a KL term) → advantages (KL in the reward first, when on) → actor update (actor-update.ts: epochs ×
 *   mini-batches × micro-batches) → weight sync → metrics.
 * Around the steps, `fit` validates every `testFreq` steps (mean reward and its standard error, success, pass^k)
 * and checkpoints every `saveFreq` steps with exact resume (trainer state + RNG here, weights + optimizer through the
 * Policy; the configured learning rate wins over the checkpoint's; metrics and episode rows after the checkpoint
 * are dropped); one JSONL metrics line per step. A fresh start (no checkpoint to resume) empties the metrics and
 * episode files first, as SFT does (sft.ts), so a rerun of a run killed before its first checkpoint repeats no rows.
 *
 * With `algorithm.advEstimator: 'rft'` the same loop is online rejection-sampling fine-tuning (config.ts): the same
 * rollout, then no old-log-prob or reference forward, advantages 1 on the episodes whose task reward reaches
 * `rft.minReward` and 0 elsewhere, and an actor update on the kept rows only with the `sft` policy loss.
 *
 * Env errors: an episode the agent loop ended with `env_error` (an EpisodeError: a tool server died, the reward threw)
 * is left out of its group, of the update and of the reward metrics; it is counted (`rollout/env_errors`,
 * `val/env_errors`) and recorded in the episodes file as a row of kind `env_error` with its message, and training
 * goes on. A step whose episodes all failed updates nothing.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import cliProgress from 'cli-progress';
import type { ChatFormat, ToolSpec } from '../llm/index.ts';
import { XoshiroRng, type RngState } from '../gym/rng.ts';
import { computeMetrics } from '../tooluse/metrics.ts';
import { AgentLoop, type AgentEnv, type Trajectory } from '../rollout/agent-loop.ts';
import { collate } from '../rollout/collate.ts';
import { flattenGroups, sampleGroups, type GroupSpec, type SampledGroup } from '../rollout/groups.ts';
import type { InferenceEngine } from '../rollout/inference.ts';
import { miniBatchIndices, scoreInMicroBatches, updateActor, type ActorUpdateOptions } from './actor-update.ts';
import { computeAdvantages } from './advantages.ts';
import { criticStepOptions, gaeAdvantages, updateCritic, type Critic } from './critic.ts';
import { aggregateLoss } from './aggregate.ts';
import { needsReferencePolicy, type TrainerConfig } from './config.ts';
import { checkpointDirName, grpoCheckpointDir } from './checkpoint-dirs.ts';
import { calledToolNames, goldActionMetrics, goldActionShare, withActionCredit } from './action-credit.ts';
import { dynamicSampling, overlongPenalty } from './dapo.ts';
import { applyKlInReward } from './kl.ts';
import type { Policy } from './policy.ts';
import { rolloutIsWeights } from './policy-loss.ts';
import { isCheckStep, logprobAlarmLine, logprobDrift } from './logprob-check.ts';
import { transcript } from './transcript.ts';
import { LearnableTaskSampler, type TaskSamplerState } from './task-sampler.ts';
import type { Batch } from '../rollout/batch.ts';

export interface TrainerDeps {
  config: TrainerConfig;
  policy: Policy;
  engine: InferenceEngine;
  format: ChatFormat;
  makeEnv: () => AgentEnv;
  trainTasks: readonly string[];
  valTasks?: readonly string[];
  /** Env factory for validation when the validation tasks live elsewhere (another split); default `makeEnv`. */
  makeValEnv?: () => AgentEnv;
  padId: number;
  /** A task's family or category, for per-family validation metrics (`val/family/<name>/reward`). */
  taskFamily?: (taskId: string) => string | undefined;
  /** Extra agent-loop options (system prompt, greeting). */
  loop?: { systemPrompt?: string; tools?: readonly ToolSpec[]; greeting?: string };
  /**
   * The actor update, when not `updateActor` on `policy`: a run on a training backend passes
   * `BackendPolicy.actorUpdate()` (the same update through forward_backward/optim_step, backend-update.ts).
   */
  actorUpdate?: (batch: Batch, options: ActorUpdateOptions) => Promise<Metrics>;
  /** The learned critic of `algorithm.advEstimator: 'gae'` (src/rl/critic.ts `createCritic`); required with it. */
  critic?: Critic;
  /**
   * Samples the groups instead of the agent loop (`makeEnv` is then unused): agent programs run through the trajectory
   * gateway (src/rollout/program-sampler.ts). Its metrics join the step's; failed rollouts are its to leave out.
   */
  groupSampler?: GroupSampler;
  log?: (line: string) => void;
}

export type Metrics = Record<string, number>;

/** What `TrainerDeps.groupSampler` is asked for: n samples of each group's task, at this temperature and seed base. */
export interface GroupSampleRequest {
  groups: readonly GroupSpec[];
  n: number;
  seed: number;
  temperature: number;
  kind: 'train' | 'val';
  onProgress?: (done: number, total: number) => void;
}

export interface GroupSampler {
  sample(request: GroupSampleRequest): Promise<{ groups: SampledGroup[]; metrics?: Metrics }>;
}

/** What a GRPO checkpoint's `trainer.json` holds besides the metrics history (`TRAINER_STATE_FORMAT`). */
interface GrpoTrainerState {
  step: number;
  rng: RngState;
  /** Position in the current shuffled pass over the training tasks. */
  order: number[];
  cursor: number;
  epoch: number;
  /** The learnable sampler's estimates, orders and cursors (`data.sampling.mode: learnable`). */
  sampler?: TaskSamplerState;
}

const TRAINER_STATE_FORMAT = 'longrun-grpo-trainer-v1';

/** A sampled group with each episode's training reward: the episode reward after shaping (`shapedReward`). */
interface ShapedGroup extends SampledGroup {
  shaped: number[];
}

const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

/** Splits sampled groups into the episodes to learn from (groups left empty dropped) and those that ended in an env error. */
function withoutEnvErrors<G extends SampledGroup>(groups: readonly G[]): { kept: G[]; errors: SampledGroup[] } {
  const isError = (t: Trajectory) => t.terminationReason === 'env_error';
  if (!groups.some((g) => g.trajectories.some(isError))) return { kept: [...groups], errors: [] };
  const kept = groups.map((g) => ({ ...g, trajectories: g.trajectories.filter((t) => !isError(t)) })).filter((g) => g.trajectories.length > 0);
  const errors = groups.map((g) => ({ uid: g.uid, taskId: g.taskId, trajectories: g.trajectories.filter(isError) })).filter((g) => g.trajectories.length > 0);
  return { kept, errors };
}

/**
 * What training and validation both report about a set of episodes (their metrics name these differently, see
 * `trainStep` and `validate`): turns and response tokens per episode, tool errors per tool call, unparsed turns per
 * turn, and the share of episodes the agent loop cut off (turn limit or response-token budget) instead of the env.
 */
function episodeStats(ts: readonly Trajectory[]): { turns: number; responseLength: number; toolErrorRate: number; parseErrorRate: number; truncatedShare: number } {
  const sum = (f: (t: Trajectory) => number) => ts.reduce((a, t) => a + f(t), 0);
  return {
    turns: mean(ts.map((t) => t.numTurns)),
    responseLength: mean(ts.map((t) => t.responseIds.length)),
    toolErrorRate: sum((t) => t.toolErrors) / Math.max(1, sum((t) => t.toolCalls)),
    parseErrorRate: sum((t) => t.parseErrors) / Math.max(1, sum((t) => t.numTurns)),
    truncatedShare: mean(ts.map((t) => (t.terminationReason === 'max_turns' || t.terminationReason === 'max_response_tokens' ? 1 : 0))),
  };
}

/** Wall-clock seconds of the phases of one step, as `timing/<phase>` metrics. */
class PhaseTimer {
  readonly seconds: Metrics = {};
  private readonly start = performance.now();

  async time<T>(phase: string, f: () => Promise<T> | T): Promise<T> {
    const t0 = performance.now();
    const r = await f();
    this.seconds[`timing/${phase}`] = (performance.now() - t0) / 1000;
    return r;
  }

  /** `timing/step`: the whole step so far. */
  stop(): number {
    return (this.seconds['timing/step'] = (performance.now() - this.start) / 1000);
  }
}

export class GrpoTrainer {
  readonly config: TrainerConfig;
  private readonly deps: TrainerDeps;
  private readonly rng: XoshiroRng;
  private state: Omit<GrpoTrainerState, 'rng' | 'sampler'>;
  /** Set with `data.sampling.mode: learnable`; otherwise tasks come in shuffled passes (`nextTasks`). */
  private readonly sampler: LearnableTaskSampler | null;
  /** Per-step metrics, also written to the JSONL file. */
  readonly history: Metrics[] = [];
  readonly validations: Metrics[] = [];
  /** The group sampler's metrics of the current step (summed over DAPO's generation rounds). */
  private samplerMetrics: Metrics = {};

  constructor(deps: TrainerDeps) {
    this.deps = deps;
    this.config = deps.config;
    if (deps.trainTasks.length === 0) throw new Error('trainer: no training tasks');
    if (this.config.critic && !deps.critic) throw new Error('trainer: algorithm.advEstimator gae needs a critic (TrainerDeps.critic, built by createCritic)');
    this.rng = new XoshiroRng(this.config.trainer.seed);
    this.state = { step: 0, order: [], cursor: 0, epoch: 0 };
    const sampling = this.config.data.sampling;
    this.sampler = sampling.mode === 'learnable' ? new LearnableTaskSampler(deps.trainTasks, (id) => deps.taskFamily?.(id), sampling) : null;
  }

  get step(): number {
    return this.state.step;
  }

  private loop(temperature: number): AgentLoop {
    const r = this.config.rollout;
    return new AgentLoop({
      format: this.deps.format,
      engine: this.deps.engine,
      sampling: { temperature, topP: r.topP, topK: r.topK > 0 ? r.topK : undefined },
      maxTurns: r.maxTurns,
      maxResponseTokens: r.maxResponseTokens,
      maxTokensPerTurn: r.maxTokensPerTurn,
      onParseError: r.onParseError,
      systemPrompt: this.deps.loop?.systemPrompt,
      tools: this.deps.loop?.tools,
      greeting: this.deps.loop?.greeting,
    });
  }

  /** The next `count` training tasks: shuffled passes over the task list (seeded, resumable). */
  private nextTasks(count: number): string[] {
    if (this.sampler) return this.sampler.next(count, this.rng);
    const out: string[] = [];
    while (out.length < count) {
      if (this.state.cursor >= this.state.order.length) {
        this.state.order = this.rng.permutation(this.deps.trainTasks.length);
        this.state.cursor = 0;
        this.state.epoch++;
      }
      out.push(this.deps.trainTasks[this.state.order[this.state.cursor++]]);
    }
    return out;
  }

  /** Whether training rewards differ from the episode rewards (partial credit or the overlong penalty is on). */
  private get shapes(): boolean {
    const { overlongBuffer, actionCredit } = this.config.algorithm;
    return overlongBuffer.enable || actionCredit.enable;
  }

  /** The reward used for training: the episode reward, with gold-action credit and the DAPO overlong penalty when enabled. */
  private shapedReward(t: Trajectory): number {
    const { overlongBuffer: ob, actionCredit: ac } = this.config.algorithm;
    let r = t.reward;
    if (ac.enable) r = withActionCredit(r, goldActionShare(t.rewardInfo, ac.actions, calledToolNames(t.messages)), ac.weight);
    if (ob.enable) r += overlongPenalty(t.responseIds.length, { maxResponseLength: this.config.rollout.maxResponseTokens, bufferLength: ob.len, penaltyFactor: ob.penaltyFactor });
    return r;
  }

  /** The rollout of one step: `trainBatchSize` groups of n episodes, with DAPO's dynamic sampling when enabled. */
  private async rollout(bar: cliProgress.SingleBar | null): Promise<{ groups: ShapedGroup[]; genMetrics: Metrics; envErrors: SampledGroup[] }> {
    const c = this.config;
    const step = this.state.step;
    const loop = this.loop(c.rollout.temperature);
    const envErrors: SampledGroup[] = [];
    const round = async (index: number, count: number): Promise<ShapedGroup[]> => {
      const tasks = this.nextTasks(count);
      const specs = tasks.map((taskId, i) => ({ taskId, uid: `s${step}-r${index}-${i}` }));
      bar?.start(specs.length * c.rollout.n, 0, { phase: `step ${step + 1} gen` });
      const seed = (c.trainer.seed * 1_000_003 + step * 10_007 + index * 101) % 2_000_000_000;
      const hook = this.deps.groupSampler;
      const sampled = hook && await hook.sample({ groups: specs, n: c.rollout.n, seed, temperature: c.rollout.temperature, kind: 'train', onProgress: (done) => bar?.update(done) });
      if (sampled?.metrics) for (const [k, v] of Object.entries(sampled.metrics)) this.samplerMetrics[k] = (this.samplerMetrics[k] ?? 0) + v;
      const all = sampled ? sampled.groups : await sampleGroups({
        loop,
        makeEnv: this.deps.makeEnv,
        groups: specs,
        n: c.rollout.n,
        concurrency: c.rollout.concurrency,
        seed,
        onTrajectory: (_t, done) => bar?.update(done),
      });
      bar?.stop();
      const { kept: groups, errors } = withoutEnvErrors(all);
      envErrors.push(...errors);
      const shapedGroups = groups.map((g) => ({ ...g, shaped: g.trajectories.map((t) => this.shapedReward(t)) }));
      this.sampler?.update(shapedGroups.map((g) => ({
        taskId: g.taskId,
        informative: !g.shaped.every((r) => r === g.shaped[0]),
        tokens: g.trajectories.reduce((a, t) => a + t.promptIds.length + t.responseIds.length, 0),
      })));
      return shapedGroups;
    };
    const fg = c.algorithm.filterGroups;
    if (!fg.enable) return { groups: await round(0, c.data.trainBatchSize), genMetrics: {}, envErrors };
    const r = await dynamicSampling({
      generate: (index) => round(index, c.data.genBatchSize ?? c.data.trainBatchSize),
      metricOf: (g) => (fg.metric === 'success' ? g.trajectories.map((t) => (t.success ? 1 : 0)) : g.shaped),
      targetGroups: c.data.trainBatchSize,
      maxRounds: fg.maxNumGenBatches,
    });
    return { groups: r.groups, genMetrics: { 'dapo/gen_rounds': r.rounds, 'dapo/dropped_groups': r.dropped, 'dapo/generated_groups': r.generated }, envErrors };
  }

  /** One training step (docs/grpo.md, "The phases of a step"); returns its metrics. */
  async trainStep(bar: cliProgress.SingleBar | null = null): Promise<Metrics> {
    const c = this.config;
    const { policy } = this.deps;
    const temperature = c.rollout.temperature;
    const rft = c.algorithm.advEstimator === 'rft';
    const timer = new PhaseTimer();

    // Rollout: n episodes per task, grouped by uid; each episode's training reward computed once (`shaped`).
    this.samplerMetrics = {};
    const { groups, genMetrics, envErrors } = await timer.time('gen', () => this.rollout(bar));
    Object.assign(genMetrics, this.samplerMetrics);
    const { trajectories, uids } = flattenGroups(groups);
    const shaped = groups.flatMap((g) => g.shaped);
    const envErrorCount = envErrors.reduce((a, g) => a + g.trajectories.length, 0);
    this.recordEpisodes('train', this.state.step + 1, groups);
    this.recordEnvErrors('train', this.state.step + 1, envErrors);
    if (trajectories.length === 0) {
      // Every episode of the step failed in its env: nothing to learn from; the step is counted and training goes on.
      this.state.step++;
      timer.stop();
      const metrics: Metrics = { step: this.state.step, 'rollout/env_errors': envErrorCount, ...genMetrics, ...timer.seconds };
      this.deps.log?.(`step ${this.state.step}: all ${envErrorCount} episodes ended in env errors (${envErrors[0]?.trajectories[0]?.envError ?? ''}); no update`);
      this.history.push(metrics);
      this.writeMetrics({ kind: 'train', ...metrics });
      return metrics;
    }
    const batch = collate(trajectories, { padId: this.deps.padId, uids, temperature });
    const B = batch.size;
    const R = batch.tensor('responses').shape[1];
    const mask = batch.tensor('response_mask').data;

    // Rewards: `token_level_scores` holds each episode's reward on its last response token; shaping replaces it.
    const scores = batch.tensor('token_level_scores').data as Float32Array;
    if (this.shapes) {
      trajectories.forEach((t, i) => {
        scores[i * R + Math.max(t.responseIds.length - 1, 0)] = shaped[i];
      });
    }

    // Old log-probs: π_old = the current weights, with the entropy for the metric. In bypass mode π_old is the
    // rollout's; RFT's SFT loss has no ratio, so it skips this forward too (π_old = the rollout's).
    const rc = c.algorithm.rolloutCorrection;
    const rollout = batch.tensor('rollout_log_probs').data as Float32Array;
    const old = rc.bypassMode || rft
      ? { logprobs: Float32Array.from(rollout), entropy: undefined }
      : await timer.time('old_log_prob', () => scoreInMicroBatches(batch, c.actor, (b) => policy.logprobs(b, { temperature, grad: false, entropy: true })));
    batch.setTensor('old_log_probs', old.logprobs, [B, R]);
    // Sampler vs trainer (src/rl/logprob-check.ts): the trainer's log-probs of the sampled tokens against the engine's.
    // π_old is that forward when it runs; in bypass mode and RFT a scoring-only forward on step 1 and every checkEvery.
    const recomputed = !(rc.bypassMode || rft) ? old.logprobs
      : isCheckStep(this.state.step + 1, rc.checkEvery) ? (await timer.time('logprob_check', () => scoreInMicroBatches(batch, c.actor, (b) => policy.logprobs(b, { temperature, grad: false, entropy: false })))).logprobs : null;
    const drift = recomputed ? logprobDrift(rollout, recomputed, mask) : null;
    if (rc.rolloutIs !== null) batch.setTensor('rollout_is_weights', rolloutIsWeights(old.logprobs, rollout, mask, B, R, rc.rolloutIs, rc.threshold), [B, R]);

    // Reference log-probs, only for a KL loss or KL in the reward.
    if (needsReferencePolicy(c)) batch.setTensor('ref_log_prob', (await timer.time('ref', () => scoreInMicroBatches(batch, c.actor, async (b) => ({ logprobs: await policy.referenceLogprobs(b, { temperature }) })))).logprobs, [B, R]);

    // Values, only with a critic (advEstimator gae): V(s_t) of every response slot, before any update.
    const critic = c.critic ? this.deps.critic : undefined;
    if (critic) batch.setTensor('values', (await timer.time('values', () => scoreInMicroBatches(batch, c.actor, async (b) => ({ values: await critic.values(b) })))).values, [B, R]);

    // Advantages: KL in the reward first (when on), then the estimator over the groups. With partial credit the GRPO
    // std comes from the task rewards (config.ts, algorithm.actionCredit).
    const extra: Metrics = {};
    const adv = await timer.time('adv', () => {
      let tokenRewards: Float32Array = scores;
      if (c.algorithm.useKlInReward) {
        const k = applyKlInReward(scores, old.logprobs, batch.tensor('ref_log_prob').data, mask, B, R, c.algorithm.klCoef, c.algorithm.klPenalty);
        tokenRewards = k.rewards;
        extra['critic/kl_in_reward'] = k.meanKl;
      }
      batch.setTensor('token_level_rewards', tokenRewards, [B, R]);
      // PPO with a critic: token-level GAE (critic.ts), also setting `returns`.
      if (c.algorithm.advEstimator === 'gae') return gaeAdvantages(batch, c.algorithm, extra);
      const stdScores = c.algorithm.actionCredit.enable ? trajectories.map((t) => t.reward) : undefined;
      const a = computeAdvantages(c.algorithm.advEstimator, tokenRewards, mask, uids, B, R, { normAdvByStd: c.algorithm.normAdvByStdInGrpo, stdScores, minReward: c.algorithm.rft.minReward });
      batch.setTensor('advantages', a.tokens, [B, R]);
      return a;
    });

    // Actor update: ppoEpochs × mini-batches × micro-batches; RFT trains on the kept rows only (A_i = 1).
    const miniBatchRows = (c.actor.ppoMiniBatchSize ?? c.data.trainBatchSize) * c.rollout.n;
    const keep = rft ? adv.sequence : undefined;
    if (keep) Object.assign(extra, rftKeptMetrics(keep, mask, R, miniBatchRows, c.actor.ppoEpochs));
    const updateOptions: ActorUpdateOptions = {
      actor: c.actor,
      miniBatchRows,
      temperature,
      // seq-mean-token-sum-norm's constant: the configured response budget (verl's padded width R).
      lossScaleFactor: c.actor.lossScaleFactor ?? c.rollout.maxResponseTokens,
      keep,
    };
    // The critic: a separate one (and the head during critic.warmupSteps) trains first on the same mini-batches; the
    // head otherwise trains inside the actor update. During the warm-up the actor does not update.
    const cs = critic && criticStepOptions(c, this.state.step, miniBatchRows, critic);
    if (cs?.separateUpdate) Object.assign(extra, await timer.time('critic', () => updateCritic(critic!, batch, cs.separateUpdate!)));
    if (cs?.value) updateOptions.value = cs.value;
    const actorUpdate = this.deps.actorUpdate;
    const update = cs?.warmup ? { 'critic/warmup': 1 } : await timer.time('update', () => (actorUpdate ? actorUpdate(batch, updateOptions) : updateActor(policy, batch, updateOptions)));

    // Weight sync to the inference engine.
    await timer.time('sync', () => policy.syncToInference());
    this.state.step++;

    // Metrics.
    const stepSeconds = timer.stop();
    const stats = episodeStats(trajectories);
    const responseTokens = trajectories.reduce((a, t) => a + t.responseIds.length, 0);
    const allTokens = responseTokens + trajectories.reduce((a, t) => a + t.promptIds.length, 0);
    const modelTokens = trajectories.reduce((a, t) => a + t.responseMask.reduce((x, y) => x + y, 0), 0);
    const metrics: Metrics = {
      step: this.state.step,
      'reward/mean': mean(trajectories.map((t) => t.reward)),
      'reward/shaped_mean': mean(shaped),
      ...(c.algorithm.actionCredit.enable ? goldActionMetrics(trajectories) : {}),
      'success/mean': mean(trajectories.map((t) => (t.success ? 1 : 0))),
      'response_length/mean': stats.responseLength,
      'response_length/max': Math.max(...trajectories.map((t) => t.responseIds.length)),
      'response_length/clip_ratio': mean(trajectories.map((t) => (t.terminationReason === 'max_response_tokens' ? 1 : 0))),
      'rollout/truncated_share': stats.truncatedShare,
      'rollout/env_errors': envErrorCount,
      'turns/mean': stats.turns,
      'tool_calls/mean': mean(trajectories.map((t) => t.toolCalls)),
      'tool_error_rate': stats.toolErrorRate,
      'parse_error_rate': stats.parseErrorRate,
      // RFT runs no old-log-prob forward (π_old is the rollout's by construction): nothing to compare.
      ...(drift ? { 'rollout/logprob_max_abs_diff': drift.max, 'rollout/logprob_mean_abs_diff': drift.mean, 'rollout/logprob_alarm': drift.max > rc.alarm ? 1 : 0 } : {}),
      'adv/mean_abs': mean([...adv.sequence].map(Math.abs)),
      'adv/zero_groups': groups.filter((g) => g.shaped.every((r) => r === g.shaped[0])).length / groups.length,
      'perf/tokens_per_s': allTokens / Math.max(stepSeconds, 1e-9),
      'perf/gen_model_tokens_per_s': modelTokens / Math.max(timer.seconds['timing/gen'], 1e-9),
      'perf/model_tokens': modelTokens,
      ...update,
      ...extra,
      ...genMetrics,
      ...(this.sampler ? Object.fromEntries(Object.entries(this.sampler.estimates()).map(([k, v]) => [`sampler/informative/${k || 'all'}`, v])) : {}),
      ...(this.sampler && (c.data.sampling.cost ?? 0) > 0 ? Object.fromEntries(Object.entries(this.sampler.relativeCosts()).map(([k, v]) => [`sampler/cost/${k || 'all'}`, v])) : {}),
      ...timer.seconds,
    };
    if (old.entropy) metrics['actor/entropy'] = aggregateLoss(old.entropy, mask, B, R, 'token-mean').value;
    const peak = policy.peakMemoryBytes?.();
    if (peak !== undefined) metrics['perf/peak_memory_bytes'] = peak;
    this.history.push(metrics);
    this.writeMetrics({ kind: 'train', ...metrics });
    if (drift && drift.max > rc.alarm) this.deps.log?.(logprobAlarmLine(this.state.step, drift, rc.alarm));
    return metrics;
  }

  /** Runs `valN` samples of every validation task: mean reward (mean@1) and its standard error over tasks, success rate, pass^k, pass@k. */
  async validate(): Promise<Metrics> {
    const c = this.config;
    const tasks = this.deps.valTasks ?? this.deps.trainTasks;
    const groups = tasks.map((taskId, i) => ({ taskId, uid: `val-${this.state.step}-${i}` }));
    const hook = this.deps.groupSampler;
    const viaHook = hook && await hook.sample({ groups, n: c.trainer.valN, seed: 1_500_000_000 + c.trainer.seed, temperature: c.trainer.valTemperature, kind: 'val' });
    const sampled = viaHook ? viaHook.groups : await sampleGroups({
      loop: this.loop(c.trainer.valTemperature),
      makeEnv: this.deps.makeValEnv ?? this.deps.makeEnv,
      groups,
      n: c.trainer.valN,
      concurrency: c.rollout.concurrency,
      // A fixed seed base for validation, so validations at different steps are comparable.
      seed: 1_500_000_000 + c.trainer.seed,
    });
    const { kept, errors } = withoutEnvErrors(sampled);
    const { trajectories } = flattenGroups(kept);
    const envErrorCount = errors.reduce((a, g) => a + g.trajectories.length, 0);
    this.recordEpisodes('val', this.state.step, kept);
    this.recordEnvErrors('val', this.state.step, errors);
    if (trajectories.length === 0) {
      const out: Metrics = { step: this.state.step, 'val/env_errors': envErrorCount };
      this.validations.push(out);
      this.writeMetrics({ kind: 'val', ...out });
      return out;
    }
    const m = computeMetrics(trajectories.map((t) => ({ taskId: t.taskId ?? '?', reward: t.reward })));
    const stats = episodeStats(trajectories);
    const out: Metrics = {
      step: this.state.step, 'val/reward_mean': m.avgReward, 'val/success': m.successRate, 'val/turns_mean': stats.turns,
      'val/response_length/mean': stats.responseLength,
      'val/total_length/max': Math.max(...trajectories.map((t) => t.promptIds.length + t.responseIds.length)),
      'val/tool_error_rate': stats.toolErrorRate,
      'val/parse_error_rate': stats.parseErrorRate,
      'val/truncated_share': stats.truncatedShare,
      'val/env_errors': envErrorCount,
    };
    out['val/reward_se'] = m.rewardStdErr;
    for (const [k, v] of Object.entries(viaHook?.metrics ?? {})) out[`val/${k}`] = v;
    for (const [k, v] of Object.entries(m.passHatK)) out[`val/pass^${k}`] = v;
    for (const [k, v] of Object.entries(m.passAtK)) if (Number(k) > 1) out[`val/pass@${k}`] = v;
    if (this.deps.taskFamily) {
      const byFamily = new Map<string, number[]>();
      for (const t of trajectories) {
        const f = t.taskId !== undefined ? this.deps.taskFamily(t.taskId) : undefined;
        if (f !== undefined) byFamily.set(f, [...(byFamily.get(f) ?? []), t.reward]);
      }
      for (const [f, rewards] of [...byFamily].sort((a, b) => a[0].localeCompare(b[0]))) out[`val/family/${f}/reward`] = mean(rewards);
    }
    this.validations.push(out);
    this.writeMetrics({ kind: 'val', ...out });
    return out;
  }

  /** Trains until `trainer.totalSteps`, validating and checkpointing on schedule; resumes from the latest checkpoint first. */
  async fit(): Promise<{ history: Metrics[]; validations: Metrics[] }> {
    const t = this.config.trainer;
    if (t.resume && t.checkpointDir && existsSync(join(t.checkpointDir, 'latest'))) {
      await this.loadCheckpoint(t.checkpointDir);
      this.dropLogRowsAfter(this.state.step);
      this.deps.log?.(`resumed from ${t.checkpointDir} at step ${this.state.step}`);
    } else {
      // A fresh start: rows an earlier run left (killed before its first checkpoint, or run with resume off) go.
      for (const f of [t.metricsFile, t.episodesFile]) if (f) writeFileSync(f, '');
    }
    const bar = t.progress ? new cliProgress.SingleBar({ format: '{phase} [{bar}] {value}/{total} episodes', hideCursor: true }, cliProgress.Presets.shades_classic) : null;
    if (t.testFreq > 0 && t.valBeforeTrain && this.state.step === 0) this.report(await this.validate());
    while (this.state.step < t.totalSteps && !this.budgetSpent()) {
      const m = await this.trainStep(bar);
      this.report(m);
      const last = this.state.step === t.totalSteps || this.budgetSpent();
      if (t.testFreq > 0 && (this.state.step % t.testFreq === 0 || last)) this.report(await this.validate());
      if (t.checkpointDir && ((t.saveFreq > 0 && this.state.step % t.saveFreq === 0) || (last && (t.saveFreq > 0 || t.maxWallSeconds !== undefined)))) {
        await this.saveCheckpoint(t.checkpointDir);
      }
    }
    if (this.budgetSpent() && this.state.step < t.totalSteps) {
      this.deps.log?.(`stopped at step ${this.state.step}: ${this.trainSeconds().toFixed(0)} s of training steps reached trainer.maxWallSeconds ${t.maxWallSeconds}`);
    }
    return { history: this.history, validations: this.validations };
  }

  /** Summed `timing/step` of every step so far (a resumed run's history included). */
  trainSeconds(): number {
    return this.history.reduce((a, m) => a + (m['timing/step'] ?? 0), 0);
  }

  private budgetSpent(): boolean {
    const max = this.config.trainer.maxWallSeconds;
    return max !== undefined && this.trainSeconds() >= max;
  }

  private report(m: Metrics): void {
    if (!this.deps.log) return;
    const keys = ['reward/mean', 'success/mean', 'tool_error_rate', 'rft/kept_share', 'actor/pg_clipfrac', 'actor/grad_norm', 'actor/entropy', 'critic/value_loss', 'critic/explained_variance', 'timing/step',
      'val/reward_mean', 'val/reward_se', 'val/success', 'val/pass^1', 'val/tool_error_rate'];
    const families = Object.keys(m).filter((k) => k.startsWith('val/family/')).map((k) => `${k.split('/')[2]} ${m[k].toFixed(2)}`);
    this.deps.log(`step ${m.step}: ${keys.filter((k) => k in m).map((k) => `${k}=${m[k].toFixed(3)}`).join(' ')}${families.length ? ` | ${families.join(', ')}` : ''}`);
  }

  /**
   * On resume: keeps the `metricsFile` and `episodesFile` rows of steps ≤ `step` (the checkpoint's, its validation
   * included), so the rows of steps a killed run did after its last checkpoint are not written twice.
   */
  private dropLogRowsAfter(step: number): void {
    for (const f of [this.config.trainer.metricsFile, this.config.trainer.episodesFile]) {
      if (!f || !existsSync(f)) continue;
      const kept = readFileSync(f, 'utf8').split('\n').filter((line) => {
        if (line.trim() === '') return false;
        try {
          const row = JSON.parse(line) as { step?: unknown };
          return typeof row.step === 'number' && row.step <= step;
        } catch {
          return false; // a line cut by the kill
        }
      });
      writeFileSync(f, kept.map((l) => `${l}\n`).join(''));
    }
  }

  /**
   * One line per episode in `trainer.episodesFile` (the token-length and per-family analyses and the dashboard read
   * it): `sample` is the episode's place in its group. The conversation (`messages`, see `transcript`) is kept for the
   * first `episodeTranscripts.trainGroups` groups of a training step and the first `episodeTranscripts.valSamples`
   * samples of each validation task, so the dashboard can set a task's episodes before and after training side by side.
   */
  private recordEpisodes(kind: 'train' | 'val', step: number, groups: readonly SampledGroup[]): void {
    const f = this.config.trainer.episodesFile;
    if (!f) return;
    const keep = this.config.trainer.episodeTranscripts;
    const lines = groups.flatMap((g, gi) => g.trajectories.map((t, sample) => JSON.stringify({
      kind, step, taskId: t.taskId, sample, family: t.taskId !== undefined ? this.deps.taskFamily?.(t.taskId) : undefined, reward: t.reward, success: t.success,
      promptTokens: t.promptIds.length, responseTokens: t.responseIds.length, modelTokens: t.responseMask.reduce((a, b) => a + b, 0),
      turns: t.numTurns, toolCalls: t.toolCalls, toolErrors: t.toolErrors, parseErrors: t.parseErrors, termination: t.terminationReason,
      ...((kind === 'train' ? gi < keep.trainGroups : sample < keep.valSamples) ? transcript(t.messages, keep.maxChars) : {}),
    })));
    if (lines.length) appendFileSync(f, lines.join('\n') + '\n');
  }

  /**
   * Episodes that ended in an env error, one row each in `trainer.episodesFile` of kind `env_error` (so readers of
   * train and val rows skip them): the phase, step, task, the error's message and how far the episode got.
   */
  private recordEnvErrors(phase: 'train' | 'val', step: number, groups: readonly SampledGroup[]): void {
    const f = this.config.trainer.episodesFile;
    if (!f || groups.length === 0) return;
    const lines = groups.flatMap((g) => g.trajectories.map((t) => JSON.stringify({
      kind: 'env_error', phase, step, taskId: t.taskId, family: t.taskId !== undefined ? this.deps.taskFamily?.(t.taskId) : undefined,
      envError: t.envError, turns: t.numTurns, toolCalls: t.toolCalls, termination: t.terminationReason,
    })));
    appendFileSync(f, lines.join('\n') + '\n');
  }

  private writeMetrics(line: Record<string, unknown>): void {
    const f = this.config.trainer.metricsFile;
    if (f) appendFileSync(f, `${JSON.stringify(line)}\n`);
  }

  /** `dir/step-NNNNNNNN/{trainer.json, policy/}` (checkpoint-dirs.ts) and `dir/latest` (the step number). */
  async saveCheckpoint(dir: string): Promise<string> {
    const stepDir = join(dir, checkpointDirName(this.state.step));
    mkdirSync(stepDir, { recursive: true });
    const state: GrpoTrainerState & { format: string } = { format: TRAINER_STATE_FORMAT, ...this.state, rng: this.rng.state(), ...(this.sampler ? { sampler: this.sampler.saveState() } : {}) };
    writeFileSync(join(stepDir, 'trainer.json'), JSON.stringify({ ...state, history: this.history, validations: this.validations }));
    await this.deps.policy.saveCheckpoint(join(stepDir, 'policy'));
    if (this.config.critic) await this.deps.critic!.saveCheckpoint(join(stepDir, 'critic'));
    writeFileSync(join(dir, 'latest'), String(this.state.step));
    return stepDir;
  }

  async loadCheckpoint(dir: string, step?: number): Promise<void> {
    const latest = join(dir, 'latest');
    const text = step === undefined ? readFileSync(latest, 'utf8').trim() : String(step);
    const s = Number(text);
    if (text === '' || !Number.isSafeInteger(s) || s < 0) {
      throw new Error(`${latest} should hold the step number of the last checkpoint but holds ${JSON.stringify(text.slice(0, 40))}; restore it, or delete it to start afresh`);
    }
    const stepDir = grpoCheckpointDir(dir, s);
    const file = join(stepDir, 'trainer.json');
    let raw: GrpoTrainerState & { format: string; history: Metrics[]; validations: Metrics[] };
    try {
      raw = JSON.parse(readFileSync(file, 'utf8'));
    } catch (err) {
      throw new Error(`cannot read the trainer state ${file} (checkpoint of step ${s}): ${(err as Error).message}`, { cause: err });
    }
    if (raw?.format !== TRAINER_STATE_FORMAT) throw new Error(`${file} is not a ${TRAINER_STATE_FORMAT} checkpoint`);
    this.state = { step: raw.step, order: raw.order, cursor: raw.cursor, epoch: raw.epoch };
    this.rng.setState(raw.rng);
    if (this.sampler) {
      if (raw.sampler) this.sampler.loadState(raw.sampler);
      else this.deps.log?.(`checkpoint ${stepDir} has no task-sampler state (it was written with data.sampling.mode shuffle): the learnable sampler starts afresh`);
    }
    this.history.splice(0, this.history.length, ...raw.history);
    this.validations.splice(0, this.validations.length, ...raw.validations);
    const configuredLr = this.deps.policy.learningRate;
    await this.deps.policy.loadCheckpoint(join(stepDir, 'policy'));
    // The run's configured learning rate wins over the one saved with the optimizer state.
    if (configuredLr !== undefined && this.deps.policy.learningRate !== configuredLr) {
      this.deps.log?.(`lr changed from ${this.deps.policy.learningRate} (checkpoint ${stepDir}) to ${configuredLr} (config)`);
      this.deps.policy.learningRate = configuredLr;
    }
    if (this.config.critic) {
      await this.deps.critic!.loadCheckpoint(join(stepDir, 'critic'));
      this.deps.critic!.learningRate = this.config.critic.lr;
    }
    await this.deps.policy.syncToInference();
  }
}

/**
 * RFT's `rft/*` metrics: the kept samples, their share and response tokens, and the optimizer steps skipped because
 * their mini-batch kept no row (over all epochs).
 */
function rftKeptMetrics(keep: ArrayLike<number>, mask: ArrayLike<number>, R: number, miniBatchRows: number, epochs: number): Metrics {
  const B = keep.length;
  let kept = 0, keptTokens = 0;
  for (let i = 0; i < B; i++) {
    if (!keep[i]) continue;
    kept++;
    for (let t = 0; t < R; t++) keptTokens += mask[i * R + t];
  }
  return {
    'rft/kept_samples': kept,
    'rft/kept_share': kept / B,
    'rft/kept_tokens': keptTokens,
    'rft/skipped_steps': miniBatchIndices(B, miniBatchRows, keep).filter((rows) => rows.length === 0).length * epochs,
  };
}
