/** Shared fixtures for the policy and actor-update tests: a tiny gpt-oss over the toy task's word vocabulary. */
import { validateConfig } from '../../src/model/config.ts';
import { GptOssModel } from '../../src/model/model.ts';

/** A tiny gpt-oss (2 layers, sliding + full attention, 4 experts); the same seed gives the same weights. */
export function tinyTransformer(vocab: number, seed = 3): GptOssModel {
  const config = validateConfig({
    num_hidden_layers: 2, hidden_size: 32, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8, sliding_window: 8,
    num_local_experts: 4, num_experts_per_tok: 2, intermediate_size: 32, vocab_size: vocab, rope_theta: 1000,
    max_position_embeddings: 128, rms_norm_eps: 1e-5, initializer_range: 0.1,
  });
  return new GptOssModel(config, { seed });
}
