/**
 * The GRPO trainer loop, in verl's order (verl.md §2):
 *   generate (n per prompt, grouped by uid) → reward (at episode end, in the agent loop; optional DAPO overlong
 *   shaping and dynamic sampling) → old log-probs (current weights, no grad) → reference log-probs (only with a KL
 *   term) → KL-in-reward → advantages → ppo_epochs × mini-batches (one optimizer step each) × micro-batches
 *   (actorUpdate.ts) → weight sync to the inference engine.
 * Validation every `testFreq` steps (mean reward, success, pass^k); checkpoints every `saveFreq` steps with exact
 * resume (trainer state + RNG here, weights + optimizer through the Policy; the configured learning rate wins over
 * the checkpoint's; metrics and episode rows after the checkpoint are dropped); one JSONL metrics line per step. A
 * fresh start (no checkpoint to resume) empties the metrics and episode files first, as SFT does (sft.ts), so a
 * rerun of a run killed before its first checkpoint does not repeat rows.
 *
 * With `algorithm.advEstimator: 'rft'` the same loop is online rejection-sampling fine-tuning (config.ts): the same
 * generation, then no old-log-prob or reference forward, advantages 1 on the episodes whose task reward reaches
 * `rft.minReward` and 0 elsewhere, and an actor update on the kept rows only with the `sft` policy loss.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import cliProgress from 'cli-progress';
import type { ChatFormat, ToolSpec } from '../llm/index.ts';
import { Rng, type RngState } from '../gym/rng.ts';
import { computeMetrics } from '../tooluse/metrics.ts';
import { AgentLoop, type AgentEnv, type Trajectory } from '../rollout/agentLoop.ts';
import { collate } from '../rollout/collate.ts';
import { flattenGroups, sampleGroups, type SampledGroup } from '../rollout/groups.ts';
import type { InferenceEngine } from '../rollout/inference.ts';
import { miniBatchIndices, updateActor, type ActorUpdateOptions } from './actorUpdate.ts';
import { computeAdvantages } from './advantages.ts';
import { aggregateLoss } from './aggregate.ts';
import { needsReferencePolicy, type TrainerConfig } from './config.ts';
import { calledToolNames, goldActionShare, withActionCredit } from './actionCredit.ts';
import { dynamicSampling, overlongPenalty } from './dapo.ts';
import { applyKlInReward, type KlPenaltyType } from './kl.ts';
import type { Policy } from './policy.ts';
import { transcript } from './transcript.ts';
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
   * `BackendPolicy.actorUpdate()` (the same update through forward_backward/optim_step, backendUpdate.ts).
   */
  actorUpdate?: (batch: Batch, options: ActorUpdateOptions) => Promise<Metrics>;
  log?: (line: string) => void;
}

export type Metrics = Record<string, number>;

interface TrainerState {
  step: number;
  rng: RngState;
  /** Position in the current shuffled pass over the training tasks. */
  order: number[];
  cursor: number;
  epoch: number;
}

const TRAINER_STATE_FORMAT = 'longrun-grpo-trainer-v1';

/**
 * Truncated importance weights π_old/π_rollout (verl.md §4.8): per token `min(exp(old − rollout), threshold)`, or per
 * sequence `min(exp(Σ_t (old − rollout)·m), threshold)` broadcast over its tokens; 0 where the mask is 0.
 */
export function rolloutIsWeights(old: ArrayLike<number>, rollout: ArrayLike<number>, mask: ArrayLike<number>, B: number, R: number, level: 'token' | 'sequence', threshold: number): Float32Array {
  const w = new Float32Array(B * R);
  for (let i = 0; i < B; i++) {
    let seq = 0;
    for (let t = 0; t < R; t++) if (mask[i * R + t]) seq += old[i * R + t] - rollout[i * R + t];
    for (let t = 0; t < R; t++) {
      const k = i * R + t;
      if (!mask[k]) continue;
      w[k] = Math.min(Math.exp(level === 'token' ? old[k] - rollout[k] : seq), threshold);
    }
  }
  return w;
}

const mean = (xs: readonly number[]) => (xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 0);

/** Share of episodes the agent loop cut off (turn limit or response-token budget) instead of the env ending them. */
const truncatedShare = (ts: readonly Trajectory[]) => mean(ts.map((t) => (t.terminationReason === 'max_turns' || t.terminationReason === 'max_response_tokens' ? 1 : 0)));

export class GrpoTrainer {
  readonly config: TrainerConfig;
  private readonly deps: TrainerDeps;
  private readonly rng: Rng;
  private state: Omit<TrainerState, 'rng'>;
  /** Per-step metrics, also written to the JSONL file. */
  readonly history: Metrics[] = [];
  readonly validations: Metrics[] = [];

  constructor(deps: TrainerDeps) {
    this.deps = deps;
    this.config = deps.config;
    if (deps.trainTasks.length === 0) throw new Error('trainer: no training tasks');
    this.rng = new Rng(this.config.trainer.seed);
    this.state = { step: 0, order: [], cursor: 0, epoch: 0 };
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

  /** Generation for one step (with DAPO dynamic sampling when enabled). */
  private async generate(bar: cliProgress.SingleBar | null): Promise<{ groups: SampledGroup[]; genMetrics: Metrics }> {
    const c = this.config;
    const step = this.state.step;
    const loop = this.loop(c.rollout.temperature);
    const roundOf = async (round: number, count: number) => {
      const tasks = this.nextTasks(count);
      const groups = tasks.map((taskId, i) => ({ taskId, uid: `s${step}-r${round}-${i}` }));
      const total = groups.length * c.rollout.n;
      bar?.start(total, 0, { phase: `step ${step + 1} gen` });
      const out = await sampleGroups({
        loop,
        makeEnv: this.deps.makeEnv,
        groups,
        n: c.rollout.n,
        concurrency: c.rollout.concurrency,
        seed: (c.trainer.seed * 1_000_003 + step * 10_007 + round * 101) % 2_000_000_000,
        onTrajectory: (_t, done) => bar?.update(done),
      });
      bar?.stop();
      return out;
    };
    const fg = c.algorithm.filterGroups;
    if (!fg.enable) return { groups: await roundOf(0, c.data.trainBatchSize), genMetrics: {} };
    const metricOf = (g: SampledGroup) => g.trajectories.map((t) => (fg.metric === 'success' ? (t.success ? 1 : 0) : this.shapedReward(t)));
    const r = await dynamicSampling({
      generate: (round) => roundOf(round, c.data.genBatchSize ?? c.data.trainBatchSize),
      metricOf,
      targetGroups: c.data.trainBatchSize,
      maxRounds: fg.maxNumGenBatches,
    });
    return { groups: r.groups, genMetrics: { 'dapo/gen_rounds': r.rounds, 'dapo/dropped_groups': r.dropped, 'dapo/generated_groups': r.generated } };
  }

  /** The reward used for training: the episode reward, with gold-action credit and the DAPO overlong penalty when enabled. */
  private shapedReward(t: Trajectory): number {
    const { overlongBuffer: ob, actionCredit: ac } = this.config.algorithm;
    let r = t.reward;
    if (ac.enable) r = withActionCredit(r, goldActionShare(t.rewardInfo, ac.actions, calledToolNames(t.messages)), ac.weight);
    if (ob.enable) r += overlongPenalty(t.responseIds.length, { maxResponseLength: this.config.rollout.maxResponseTokens, bufferLength: ob.len, penaltyFactor: ob.penaltyFactor });
    return r;
  }

  /** One training step; returns its metrics. */
  async trainStep(bar: cliProgress.SingleBar | null = null): Promise<Metrics> {
    const c = this.config;
    const { policy } = this.deps;
    const stepStart = performance.now();
    const timing: Metrics = {};
    const time = async <T>(name: string, f: () => Promise<T>): Promise<T> => {
      const t0 = performance.now();
      const r = await f();
      timing[`timing/${name}`] = (performance.now() - t0) / 1000;
      return r;
    };

    // 1–4. Generate n trajectories per prompt (reward computed at episode end by the env).
    const { groups, genMetrics } = await time('gen', () => this.generate(bar));
    const { trajectories, uids } = flattenGroups(groups);
    this.recordEpisodes('train', this.state.step + 1, groups);
    const batch = collate(trajectories, { padId: this.deps.padId, uids, temperature: c.rollout.temperature });
    const B = batch.size;
    const R = batch.tensor('responses').shape[1];
    const mask = batch.tensor('response_mask').data;

    // 7. Reward: token_level_scores from the agent loop, with gold-action credit and overlong shaping when enabled.
    const scores = batch.tensor('token_level_scores').data as Float32Array;
    if (c.algorithm.overlongBuffer.enable || c.algorithm.actionCredit.enable) {
      trajectories.forEach((t, i) => {
        scores[i * R + Math.max(t.responseIds.length - 1, 0)] = this.shapedReward(t);
      });
    }

    // 8. Old log-probs (π_old = current weights) and entropy for the metric; in bypass mode π_old = the rollout's.
    // RFT's SFT loss has no ratio, so it skips this forward too (π_old = the rollout's, for the drift statistic only).
    const rft = c.algorithm.advEstimator === 'rft';
    const rc = c.algorithm.rolloutCorrection;
    const rollout = batch.tensor('rollout_log_probs').data as Float32Array;
    const old = rc.bypassMode || rft
      ? { logprobs: Float32Array.from(rollout), entropy: undefined }
      : await time('old_log_prob', () => policy.logprobs(batch, { temperature: c.rollout.temperature, grad: false, entropy: true }));
    batch.setTensor('old_log_probs', old.logprobs, [B, R]);
    let mismatch = 0;
    for (let k = 0; k < B * R; k++) if (mask[k]) mismatch = Math.max(mismatch, Math.abs(rollout[k] - old.logprobs[k]));
    if (rc.rolloutIs !== null) batch.setTensor('rollout_is_weights', rolloutIsWeights(old.logprobs, rollout, mask, B, R, rc.rolloutIs, rc.threshold), [B, R]);

    // 9. Reference log-probs, only for a KL loss or KL in the reward.
    if (needsReferencePolicy(c)) batch.setTensor('ref_log_prob', await time('ref', () => policy.referenceLogprobs(batch, { temperature: c.rollout.temperature })), [B, R]);

    // 11. KL in reward, then advantages.
    const t0 = performance.now();
    let tokenRewards: Float32Array = scores;
    const extra: Metrics = {};
    if (c.algorithm.useKlInReward) {
      const k = applyKlInReward(scores, old.logprobs, batch.tensor('ref_log_prob').data, mask, B, R, c.algorithm.klCoef, c.algorithm.klPenalty as KlPenaltyType);
      tokenRewards = k.rewards;
      extra['critic/kl_in_reward'] = k.meanKl;
    }
    batch.setTensor('token_level_rewards', tokenRewards, [B, R]);
    // With partial credit the GRPO std comes from the task rewards (config.ts, algorithm.actionCredit).
    const stdScores = c.algorithm.actionCredit.enable ? trajectories.map((t) => t.reward) : undefined;
    const adv = computeAdvantages(c.algorithm.advEstimator, tokenRewards, mask, uids, B, R, { normAdvByStd: c.algorithm.normAdvByStdInGrpo, stdScores, minReward: c.algorithm.rft.minReward });
    batch.setTensor('advantages', adv.tokens, [B, R]);
    timing['timing/adv'] = (performance.now() - t0) / 1000;

    // 13. Actor update; RFT trains on the kept rows only (A_i = 1), each mini-batch on its own kept rows.
    const miniBatchRows = (c.actor.ppoMiniBatchSize ?? c.data.trainBatchSize) * c.rollout.n;
    const keep = rft ? adv.sequence : undefined;
    if (keep) {
      let kept = 0, keptTokens = 0;
      for (let i = 0; i < B; i++) {
        if (!keep[i]) continue;
        kept++;
        for (let t = 0; t < R; t++) keptTokens += mask[i * R + t];
      }
      extra['rft/kept_samples'] = kept;
      extra['rft/kept_share'] = kept / B;
      extra['rft/kept_tokens'] = keptTokens;
      extra['rft/skipped_steps'] = miniBatchIndices(B, miniBatchRows, keep).filter((rows) => rows.length === 0).length * c.actor.ppoEpochs;
    }
    const updateOptions: ActorUpdateOptions = {
      actor: c.actor,
      miniBatchRows,
      temperature: c.rollout.temperature,
      // seq-mean-token-sum-norm's constant: the configured response budget (verl's padded width R).
      lossScaleFactor: c.actor.lossScaleFactor ?? c.rollout.maxResponseTokens,
      keep,
    };
    const actorUpdate = this.deps.actorUpdate;
    const update = await time('update', () => (actorUpdate ? actorUpdate(batch, updateOptions) : updateActor(policy, batch, updateOptions)));
    await time('sync', () => policy.syncToInference());

    this.state.step++;
    const responseTokens = trajectories.reduce((a, t) => a + t.responseIds.length, 0);
    const allTokens = responseTokens + trajectories.reduce((a, t) => a + t.promptIds.length, 0);
    timing['timing/step'] = (performance.now() - stepStart) / 1000;
    const modelTokens = trajectories.reduce((a, t) => a + t.responseMask.reduce((x, y) => x + y, 0), 0);
    const metrics: Metrics = {
      step: this.state.step,
      'reward/mean': mean(trajectories.map((t) => t.reward)),
      'reward/shaped_mean': mean(trajectories.map((t) => this.shapedReward(t))),
      'reward/gold_action_share': mean(trajectories.map((t) => goldActionShare(t.rewardInfo))),
      'reward/gold_write_share': mean(trajectories.map((t) => goldActionShare(t.rewardInfo, 'writes'))),
      'reward/gold_write_graded': mean(trajectories.map((t) => goldActionShare(t.rewardInfo, 'writes-graded', calledToolNames(t.messages)))),
      'success/mean': mean(trajectories.map((t) => (t.success ? 1 : 0))),
      'response_length/mean': responseTokens / B,
      'response_length/max': Math.max(...trajectories.map((t) => t.responseIds.length)),
      'response_length/clip_ratio': mean(trajectories.map((t) => (t.terminationReason === 'max_response_tokens' ? 1 : 0))),
      'rollout/truncated_share': truncatedShare(trajectories),
      'turns/mean': mean(trajectories.map((t) => t.numTurns)),
      'tool_calls/mean': mean(trajectories.map((t) => t.toolCalls)),
      'tool_error_rate': trajectories.reduce((a, t) => a + t.toolErrors, 0) / Math.max(1, trajectories.reduce((a, t) => a + t.toolCalls, 0)),
      'parse_error_rate': trajectories.reduce((a, t) => a + t.parseErrors, 0) / Math.max(1, trajectories.reduce((a, t) => a + t.numTurns, 0)),
      // RFT runs no old-log-prob forward (π_old is the rollout's by construction): nothing to compare.
      ...(rft ? {} : { 'rollout/logprob_max_abs_diff': mismatch }),
      'adv/mean_abs': mean([...adv.sequence].map(Math.abs)),
      'adv/zero_groups': groups.filter((g) => g.trajectories.every((t) => this.shapedReward(t) === this.shapedReward(g.trajectories[0]))).length / groups.length,
      'perf/tokens_per_s': allTokens / Math.max(timing['timing/step'], 1e-9),
      'perf/gen_model_tokens_per_s': modelTokens / Math.max(timing['timing/gen'], 1e-9),
      'perf/model_tokens': modelTokens,
      ...update,
      ...extra,
      ...genMetrics,
      ...timing,
    };
    if (old.entropy) metrics['actor/entropy'] = aggregateLoss(old.entropy, mask, B, R, 'token-mean').value;
    const peak = policy.peakMemoryBytes?.();
    if (peak !== undefined) metrics['perf/peak_memory_bytes'] = peak;
    this.history.push(metrics);
    this.writeMetrics({ kind: 'train', ...metrics });
    return metrics;
  }

  /** Runs `valN` samples of every validation task: mean reward (mean@1) and its standard error over tasks, success rate, pass^k, pass@k. */
  async validate(): Promise<Metrics> {
    const c = this.config;
    const tasks = this.deps.valTasks ?? this.deps.trainTasks;
    const groups = tasks.map((taskId, i) => ({ taskId, uid: `val-${this.state.step}-${i}` }));
    const sampled = await sampleGroups({
      loop: this.loop(c.trainer.valTemperature),
      makeEnv: this.deps.makeValEnv ?? this.deps.makeEnv,
      groups,
      n: c.trainer.valN,
      concurrency: c.rollout.concurrency,
      // A fixed seed base for validation, so validations at different steps are comparable.
      seed: 1_500_000_000 + c.trainer.seed,
    });
    const { trajectories } = flattenGroups(sampled);
    this.recordEpisodes('val', this.state.step, sampled);
    const m = computeMetrics(trajectories.map((t) => ({ taskId: t.taskId ?? '?', reward: t.reward })));
    const sum = (f: (t: Trajectory) => number) => trajectories.reduce((a, t) => a + f(t), 0);
    const out: Metrics = {
      step: this.state.step, 'val/reward_mean': m.avgReward, 'val/success': m.successRate, 'val/turns_mean': mean(trajectories.map((t) => t.numTurns)),
      'val/response_length/mean': mean(trajectories.map((t) => t.responseIds.length)),
      'val/total_length/max': Math.max(...trajectories.map((t) => t.promptIds.length + t.responseIds.length)),
      'val/tool_error_rate': sum((t) => t.toolErrors) / Math.max(1, sum((t) => t.toolCalls)),
      'val/parse_error_rate': sum((t) => t.parseErrors) / Math.max(1, sum((t) => t.numTurns)),
      'val/truncated_share': truncatedShare(trajectories),
    };
    out['val/reward_se'] = m.rewardStdErr;
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
    while (this.state.step < t.totalSteps) {
      const m = await this.trainStep(bar);
      this.report(m);
      if (t.testFreq > 0 && (this.state.step % t.testFreq === 0 || this.state.step === t.totalSteps)) this.report(await this.validate());
      if (t.saveFreq > 0 && t.checkpointDir && (this.state.step % t.saveFreq === 0 || this.state.step === t.totalSteps)) await this.saveCheckpoint(t.checkpointDir);
    }
    return { history: this.history, validations: this.validations };
  }

  private report(m: Metrics): void {
    if (!this.deps.log) return;
    const keys = ['reward/mean', 'success/mean', 'tool_error_rate', 'rft/kept_share', 'actor/pg_clipfrac', 'actor/grad_norm', 'actor/entropy', 'timing/step',
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

  private writeMetrics(line: Record<string, unknown>): void {
    const f = this.config.trainer.metricsFile;
    if (f) appendFileSync(f, `${JSON.stringify(line)}\n`);
  }

  /** `dir/step_N/{trainer.json, policy/}` and `dir/latest` (the step number). */
  async saveCheckpoint(dir: string): Promise<string> {
    const stepDir = join(dir, `step_${this.state.step}`);
    mkdirSync(stepDir, { recursive: true });
    const state: TrainerState & { format: string } = { format: TRAINER_STATE_FORMAT, ...this.state, rng: this.rng.state() };
    writeFileSync(join(stepDir, 'trainer.json'), JSON.stringify({ ...state, history: this.history, validations: this.validations }));
    await this.deps.policy.saveCheckpoint(join(stepDir, 'policy'));
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
    const stepDir = join(dir, `step_${s}`);
    const file = join(stepDir, 'trainer.json');
    let raw: TrainerState & { format: string; history: Metrics[]; validations: Metrics[] };
    try {
      raw = JSON.parse(readFileSync(file, 'utf8'));
    } catch (err) {
      throw new Error(`cannot read the trainer state ${file} (checkpoint of step ${s}): ${(err as Error).message}`, { cause: err });
    }
    if (raw?.format !== TRAINER_STATE_FORMAT) throw new Error(`${file} is not a ${TRAINER_STATE_FORMAT} checkpoint`);
    this.state = { step: raw.step, order: raw.order, cursor: raw.cursor, epoch: raw.epoch };
    this.rng.setState(raw.rng);
    this.history.splice(0, this.history.length, ...raw.history);
    this.validations.splice(0, this.validations.length, ...raw.validations);
    const configuredLr = this.deps.policy.learningRate;
    await this.deps.policy.loadCheckpoint(join(stepDir, 'policy'));
    // The run's configured learning rate wins over the one saved with the optimizer state.
    if (configuredLr !== undefined && this.deps.policy.learningRate !== configuredLr) {
      this.deps.log?.(`lr changed from ${this.deps.policy.learningRate} (checkpoint ${stepDir}) to ${configuredLr} (config)`);
      this.deps.policy.learningRate = configuredLr;
    }
    await this.deps.policy.syncToInference();
  }
}
