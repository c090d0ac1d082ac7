/**
 * The toy task with the real policy: a tiny gpt-oss transformer, warm-started by SFT (src/rl/sft.ts) on expert-format
 * trajectories whose tool and argument are drawn at random, so it learns the call/answer grammar but not which tool
 * each cue wants — that is left to RL, as with the tabular policy's format prior. Returns the same shape as
 * `createToySetup`, with `policy`/`engine` being `GptOssPolicy` and the continuous-batching model engine.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { XoshiroRng } from '../../gym/rng.ts';
import type { ChatMessage } from '../../llm/index.ts';
import { validateConfig } from '../../model/config.ts';
import { GptOssModel } from '../../model/model.ts';
import { createStepModelEngine } from '../../rollout/model-engine.ts';
import { GptOssPolicy } from '../../rl/model-policy.ts';
import { runSft } from '../../rl/sft.ts';
import { renderTrajectory } from '../../rl/sft-data.ts';
import { solution, TOY_ARGS, TOY_TASKS, TOY_TOOLS, ToyToolEnv } from '../../domains/toy/toy-env.ts';
import { createToySetup } from './toy-task.ts';

export interface ToyTransformerOptions {
  seed?: number;
  /** SFT documents and steps of the format warm start. */
  sftDocuments?: number;
  sftSteps?: number;
  /** GRPO AdamW learning rate. */
  lr?: number;
}

export async function createToyTransformerSetup(options: ToyTransformerOptions = {}) {
  const s = createToySetup();
  const seed = options.seed ?? 1;
  const config = validateConfig({
    num_hidden_layers: 2, hidden_size: 32, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8, sliding_window: 8,
    num_local_experts: 4, num_experts_per_tok: 2, intermediate_size: 32, vocab_size: s.tokenizer.vocabSize, rope_theta: 1000,
    max_position_embeddings: 128, rms_norm_eps: 1e-5, initializer_range: 0.1,
  });
  const model = new GptOssModel(config, { seed });
  const rng = new XoshiroRng(seed);
  const tools = new ToyToolEnv().tools;
  const docs = Array.from({ length: options.sftDocuments ?? 400 }, () => {
    const k = rng.integers(TOY_TASKS);
    const tool = TOY_TOOLS[rng.integers(TOY_TOOLS.length)];
    const x = rng.integers(TOY_ARGS);
    const right = tool === solution(k).tool && x === solution(k).x;
    const messages: ChatMessage[] = [
      { role: 'system', content: 'solve' },
      { role: 'user', content: `please cue_${k}` },
      { role: 'assistant', content: '', toolCalls: [{ name: tool, arguments: { x } }] },
      { role: 'tool', content: right ? 'ok' : 'wrong', name: tool },
      { role: 'assistant', content: 'done' },
    ];
    const r = renderTrajectory(s.format, { messages, tools });
    return { tokens: Int32Array.from(r.tokens), lossMask: Uint8Array.from(r.lossMask) };
  });
  const out = mkdtempSync(join(tmpdir(), 'longrun-toy-sft-'));
  try {
    await runSft({ seqLen: 64, microBatchTokens: 512, rowsPerStep: 4, steps: options.sftSteps ?? 100, lr: 3e-3, schedule: 'constant', padId: s.padId, weightDecay: 0, seed }, { model, data: docs, outDir: out, quiet: true });
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
  // The KL reference is the SFT model, frozen.
  const policy = new GptOssPolicy(model, { optimizer: { lr: options.lr ?? 3e-3, weightDecay: 0 }, reference: new GptOssModel(config, { seed, grads: false }) });
  policy.resetReferenceToCurrent();
  return { ...s, model, policy, engine: createStepModelEngine(model, { maxBatchSize: 32 }) };
}
