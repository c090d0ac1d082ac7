/**
 * Builds the model server over a checkpoint: the in-process gpt-oss model behind the step-level (continuous)
 * batching engine, so a short request joins at the next decode step instead of waiting for a running batch to end.
 */
import { existsSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { createChatFormat } from '../llm/formats.ts';
import { loadTokenizer } from '../llm/load-tokenizer.ts';
import type { Tokenizer } from '../llm/tokenizer.ts';
import { loadModel } from '../model/checkpoint/model-io.ts';
import { createStepModelEngine } from '../rollout/model-engine.ts';
import { MODEL_SERVER_DEFAULTS, RESERVED_SLOTS, startModelServer, type ModelServerHandle } from './model-server.ts';

export interface ServeModelOptions {
  checkpoint: string;
  /** `o200k_harmony` or a BPE tokenizer JSON; default `<checkpoint>/tokenizer.json` when it exists. */
  tokenizer?: string;
  chatFormat?: string;
  modelName?: string;
  host?: string;
  port?: number;
  token?: string | null;
  /** Sequences decoding together (default 8). */
  maxBatch?: number;
  /** Most prompts in one request (default MODEL_SERVER_DEFAULTS.maxPromptsPerRequest). */
  maxPrompts?: number;
  log?: (line: string) => void;
}

export async function serveCheckpoint(o: ServeModelOptions): Promise<ModelServerHandle> {
  const dir = resolve(o.checkpoint);
  const model = loadModel(dir);
  try {
    const tokenizerPath = o.tokenizer ?? (existsSync(join(dir, 'tokenizer.json')) ? join(dir, 'tokenizer.json') : undefined);
    const tokenizer: Tokenizer | undefined = tokenizerPath ? loadTokenizer(tokenizerPath) : undefined;
    if (tokenizer && tokenizer.vocabSize > model.config.vocab_size) {
      throw new Error(`the tokenizer has ${tokenizer.vocabSize} ids but the model's vocabulary is ${model.config.vocab_size}`);
    }
    if (o.chatFormat && !tokenizer) throw new Error('--chat-format needs a tokenizer (--tokenizer, or a tokenizer.json in the checkpoint folder)');
    const chatFormat = o.chatFormat && tokenizer ? createChatFormat(o.chatFormat, tokenizer) : undefined;
    const maxBatch = o.maxBatch ?? MODEL_SERVER_DEFAULTS.maxConcurrentPrompts;
    // The dispatcher keeps maxBatch prompts in the engine plus RESERVED_SLOTS for requests that have none there yet.
    const engine = createStepModelEngine(model, { maxBatchSize: maxBatch + RESERVED_SLOTS });
    const handle = await startModelServer({
      engine,
      modelName: o.modelName ?? basename(dir),
      contextLength: model.config.max_position_embeddings,
      tokenizer,
      chatFormat,
      host: o.host,
      port: o.port,
      token: o.token,
      maxConcurrentPrompts: maxBatch,
      maxPromptsPerRequest: o.maxPrompts,
      log: o.log,
    });
    return {
      ...handle,
      close: async () => {
        await handle.close();
        model.dispose();
      },
    };
  } catch (err) {
    model.dispose();
    throw err;
  }
}
