/**
 * `longrun eval --agent checkpoint --checkpoint DIR`: serves the checkpoint with the OpenAI-compatible model server on
 * a free loopback port for the duration of the run and points the OpenAI agent at it, so a trained model is evaluated
 * through exactly the path an external model would take.
 */
import { basename, resolve } from 'node:path';
import { serveCheckpoint } from '../model-serve.ts';
import type { EvalCliOptions } from './setup.ts';

export async function withCheckpointAgent<T>(o: EvalCliOptions & { checkpoint?: string; tokenizer?: string; chatFormat?: string }, run: (opts: EvalCliOptions) => Promise<T>): Promise<T> {
  if (o.agent !== 'checkpoint') return run(o);
  if (!o.checkpoint) throw new Error('--agent checkpoint needs --checkpoint DIR');
  const name = basename(resolve(o.checkpoint));
  const server = await serveCheckpoint({ checkpoint: o.checkpoint, tokenizer: o.tokenizer, chatFormat: o.chatFormat ?? 'harmony', modelName: name, port: 0 });
  try {
    return await run({ ...o, agent: 'openai', baseUrl: `${server.url}/v1`, model: name });
  } finally {
    await server.close();
  }
}
