/** Shared fixtures for the policy and actor-update tests: a tiny gpt-oss over the toy task's word vocabulary. */
import { validateConfig } from '../../src/model/config.ts';
import { GptOssModel } from '../../src/model/model.ts';
import { AgentLoop } from '../../src/rollout/agent-loop.ts';
import type { Batch } from '../../src/rollout/batch.ts';
import { collate } from '../../src/rollout/collate.ts';
import { flattenGroups, sampleGroups } from '../../src/rollout/groups.ts';
import { createModelEngine } from '../../src/rollout/model-engine.ts';
import { createToySetup } from '../../src/recipes/toy/toy-task.ts';

/** A tiny gpt-oss (2 layers, sliding + full attention, 4 experts); the same seed gives the same weights. */
export function tinyTransformer(vocab: number, seed = 3): GptOssModel {
  const config = validateConfig({
    num_hidden_layers: 2, hidden_size: 32, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8, sliding_window: 8,
    num_local_experts: 4, num_experts_per_tok: 2, intermediate_size: 32, vocab_size: vocab, rope_theta: 1000,
    max_position_embeddings: 128, rms_norm_eps: 1e-5, initializer_range: 0.1,
  });
  return new GptOssModel(config, { seed });
}

/**
 * A seeded GRPO batch from the tiny gpt-oss on the toy task (3 tasks × n 3 = 9 rows of different lengths), with π_old
 * a little off the rollout (ratios on both sides of the clip), per-sequence advantages and, with `reference`,
 * reference log-probs.
 */
export async function trainingBatch(seed: number, options: { reference?: boolean } = {}): Promise<{ batch: Batch; vocab: number }> {
  const s = createToySetup();
  const model = tinyTransformer(s.tokenizer.vocabSize, seed);
  const loop = new AgentLoop({ format: s.format, engine: createModelEngine(model, { maxBatchSize: 9 }), sampling: { temperature: 1 }, maxTurns: 3, maxResponseTokens: 40, maxTokensPerTurn: 8 });
  const groups = await sampleGroups({ loop, makeEnv: s.makeEnv, groups: [0, 1, 2].map((k) => ({ taskId: `toy-${k}`, uid: `g${k}` })), n: 3, seed, concurrency: 9 });
  const { trajectories, uids } = flattenGroups(groups);
  const batch = collate(trajectories, { padId: s.padId, uids, temperature: 1 });
  const B = batch.size;
  const R = batch.tensor('responses').shape[1];
  const mask = batch.tensor('response_mask').data;
  const rollout = batch.tensor('rollout_log_probs').data;
  const old = new Float32Array(B * R);
  const ref = new Float32Array(B * R);
  const adv = new Float32Array(B * R);
  for (let i = 0; i < B; i++) {
    for (let t = 0; t < R; t++) {
      const k = i * R + t;
      if (!mask[k]) continue;
      old[k] = rollout[k] + 0.3 * Math.sin(1.7 * k) + 0.25 * ((i % 3) - 1);
      ref[k] = rollout[k] + 0.2 * Math.cos(0.9 * k);
      adv[k] = [1.2, -0.7, 0.4][i % 3] * (i % 2 === 0 ? 1 : -1);
    }
  }
  batch.setTensor('old_log_probs', old, [B, R]);
  if (options.reference) batch.setTensor('ref_log_prob', ref, [B, R]);
  batch.setTensor('advantages', adv, [B, R]);
  return { batch, vocab: s.tokenizer.vocabSize };
}
