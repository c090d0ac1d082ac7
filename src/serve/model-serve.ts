/** Builds the model server over a checkpoint: the in-process gpt-oss model behind the batching engine. */
import { existsSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { createChatFormat } from '../llm/formats.ts';
import { loadTokenizer } from '../llm/loadTokenizer.ts';
import type { Tokenizer } from '../llm/tokenizer.ts';
import { loadModel } from '../model/checkpoint/model-io.ts';
import { createModelEngine } from '../rollout/modelEngine.ts';
import { startModelServer, type ModelServerHandle } from './model-server.ts';

export interface ServeModelOptions {
  checkpoint: string;
  /** `o200k_harmony` or a BPE tokenizer JSON; default `<checkpoint>/tokenizer.json` when it exists. */
  tokenizer?: string;
  chatFormat?: string;
  modelName?: string;
  host?: string;
  port?: number;
  token?: string | null;
  maxBatch?: number;
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
    const engine = createModelEngine(model, { maxBatchSize: o.maxBatch ?? 8 });
    const handle = await startModelServer({
      engine,
      modelName: o.modelName ?? basename(dir),
      contextLength: model.config.max_position_embeddings,
      tokenizer,
      chatFormat,
      host: o.host,
      port: o.port,
      token: o.token,
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
