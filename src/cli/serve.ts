import type { Command } from 'commander';
import { ENV_SERVER_DEFAULTS, startEnvServer } from '../serve/env-server.ts';
import { serveCheckpoint } from '../serve/model-serve.ts';
import { MODEL_SERVER_DEFAULTS } from '../serve/model-server.ts';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { basename, join, resolve } from 'node:path';
import { serverLlmConfig, type ServerLlmFlags } from '../serve/env-judges.ts';
import { startTrainerServer } from '../serve/trainer-server.ts';
import { loadModel } from '../model/checkpoint/model-io.ts';
import { FALLBACK_JUDGE_NAME } from '../tooluse/fallback-judge.ts';
import { resolveEnvArg } from './env-arg.ts';
import { outFile } from './out-file.ts';
import { createChatFormat, loadTokenizer } from '../llm/index.ts';
import { createStepModelEngine } from '../rollout/model-engine.ts';
import { startGateway } from '../serve/gateway.ts';

function positiveInt(name: string, min = 1) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer >= ${min}, got ${JSON.stringify(v)}`);
    return n;
  };
}

export interface ServeEnvOptions {
  host: string;
  port: number;
  token?: string;
  maxSessions: number;
  idleTimeout: number;
  maxBody: number;
  data?: string;
  userBaseUrl?: string;
  userModel?: string;
  userGuidelines?: string;
  judge?: string;
  judgeBaseUrl?: string;
  judgeModel?: string;
  maxRequests: number;
  /** Env modules to load (their envs are served beside the built-in ones), or registered ids to check. */
  env?: string[];
}

function llmFlags(opts: ServeEnvOptions): ServerLlmFlags {
  const flags: ServerLlmFlags = { dataDir: opts.data, maxRequests: opts.maxRequests };
  if (opts.userBaseUrl || opts.userModel) {
    if (!opts.userBaseUrl || !opts.userModel) throw new Error('an LLM user needs both --user-base-url and --user-model');
    flags.user = { baseUrl: opts.userBaseUrl, model: opts.userModel, guidelines: opts.userGuidelines ? readFileSync(opts.userGuidelines, 'utf8') : undefined };
  }
  if (opts.judge === FALLBACK_JUDGE_NAME) flags.judge = FALLBACK_JUDGE_NAME;
  else if (opts.judge !== undefined && opts.judge !== 'llm') throw new Error(`--judge must be "llm" or "${FALLBACK_JUDGE_NAME}", got ${opts.judge}`);
  else if (opts.judge === 'llm' || opts.judgeBaseUrl || opts.judgeModel) {
    if (!opts.judgeBaseUrl || !opts.judgeModel) throw new Error('an LLM judge needs both --judge-base-url and --judge-model');
    flags.judge = { baseUrl: opts.judgeBaseUrl, model: opts.judgeModel };
  }
  return flags;
}

/** `longrun serve env`: runs until SIGINT/SIGTERM, then stops accepting, closes every session and exits 0. */
export async function serveEnvCommand(opts: ServeEnvOptions): Promise<void> {
  const token = opts.token ?? process.env.LONGRUN_SERVE_TOKEN;
  for (const arg of opts.env ?? []) {
    const id = await resolveEnvArg(arg);
    console.error(`serving env ${id}${id === arg ? '' : ` (from ${arg})`}`);
  }
  const handle = await startEnvServer({
    host: opts.host,
    port: opts.port,
    token: token === undefined || token === '' ? null : token,
    maxSessions: opts.maxSessions,
    idleTimeoutS: opts.idleTimeout,
    maxBodyBytes: opts.maxBody,
    dataDir: opts.data,
    ...serverLlmConfig(llmFlags(opts)),
    log: (line) => console.error(line),
  });
  if (!['127.0.0.1', 'localhost', '::1'].includes(opts.host) && token === undefined) {
    console.error('warning: listening beyond loopback without --token; anyone who can reach this port can create sessions');
  }
  await untilSignal(handle.close, () => ` (closing ${handle.sessions.size} session(s))`);
}

/** Resolves on SIGINT/SIGTERM after `close()` finished. */
function untilSignal(close: () => Promise<void>, what: () => string): Promise<void> {
  return new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      console.error(`${signal}: shutting down${what()}`);
      void close().then(resolve);
    };
    process.once('SIGINT', () => stop('SIGINT'));
    process.once('SIGTERM', () => stop('SIGTERM'));
  });
}

export interface ServeModelCliOptions {
  checkpoint: string;
  tokenizer?: string;
  chatFormat?: string;
  modelName?: string;
  host: string;
  port: number;
  token?: string;
  maxBatch: number;
  maxPrompts: number;
}

export async function serveModelCommand(opts: ServeModelCliOptions): Promise<void> {
  const token = opts.token ?? process.env.LONGRUN_SERVE_TOKEN;
  const handle = await serveCheckpoint({ ...opts, token: token === undefined || token === '' ? null : token, log: (line) => console.error(line) });
  await untilSignal(handle.close, () => '');
}

export interface ServeTrainerCliOptions {
  checkpoint: string;
  modelName?: string;
  checkpointDir: string;
  host: string;
  port: number;
  apiKey?: string;
  maxBody: number;
  maxModels: number;
}

/** `longrun serve trainer`: the Tinker API (protobuf wire format of tinker SDK 0.38, JSON for SDKs ≤ 0.24.x) over our engine; runs until a signal. */
export async function serveTrainerCommand(opts: ServeTrainerCliOptions): Promise<void> {
  const apiKey = opts.apiKey ?? process.env.TINKER_API_KEY;
  const baseModel = opts.modelName ?? basename(resolve(opts.checkpoint));
  const handle = await startTrainerServer({
    host: opts.host, port: opts.port, apiKey: apiKey === undefined || apiKey === '' ? undefined : apiKey, baseModel,
    makeBase: () => loadModel(opts.checkpoint, { grads: true }), checkpointDir: opts.checkpointDir, maxBodyBytes: opts.maxBody, maxModels: opts.maxModels,
  });
  console.error(`tinker-compatible trainer for ${baseModel} at ${handle.url} (TINKER_BASE_URL)`);
  if (!['127.0.0.1', 'localhost', '::1'].includes(opts.host) && apiKey === undefined) console.error('warning: listening beyond loopback without --api-key');
  await untilSignal(handle.close, () => '');
}

export interface ServeGatewayCliOptions {
  checkpoint: string;
  tokenizer?: string;
  chatFormat: string;
  host: string;
  port: number;
  token?: string;
  maxBatch: number;
  maxResponseTokens?: number;
  record?: string;
}

/**
 * `longrun serve gateway`: the trajectory gateway over a checkpoint (src/serve/gateway.ts). Programs open a rollout
 * with POST /rollouts, point their OpenAI client at its base_url, and POST /rollouts/{id}/finish returns the recorded
 * rows (also appended to --record as JSON lines). Runs until SIGINT/SIGTERM.
 */
export async function serveGatewayCommand(opts: ServeGatewayCliOptions): Promise<void> {
  const token = opts.token ?? process.env.LONGRUN_SERVE_TOKEN;
  const dir = resolve(opts.checkpoint);
  const tokenizerPath = opts.tokenizer ?? (existsSync(join(dir, 'tokenizer.json')) ? join(dir, 'tokenizer.json') : undefined);
  if (!tokenizerPath) throw new Error('the gateway needs a tokenizer: --tokenizer, or a tokenizer.json in the checkpoint folder');
  const format = createChatFormat(opts.chatFormat, loadTokenizer(tokenizerPath));
  if (opts.record !== undefined) outFile(opts.record);
  const model = loadModel(dir);
  const handle = await startGateway({
    engine: createStepModelEngine(model, { maxBatchSize: opts.maxBatch }), format, contextLength: model.config.max_position_embeddings, modelName: basename(dir),
    maxResponseTokens: opts.maxResponseTokens, host: opts.host, port: opts.port, token: token === undefined || token === '' ? null : token,
    onFinish: opts.record ? (record) => appendFileSync(opts.record!, `${JSON.stringify(record)}\n`) : undefined, log: (line) => console.error(line),
  });
  await untilSignal(async () => {
    await handle.close();
    model.dispose();
  }, () => '');
}

export function register(program: Command): void {
  const serve = program.command('serve').description('serve longrun over HTTP (env server, OpenAI-compatible model server, Tinker-compatible trainer)');
  serve
    .command('env')
    .description('HTTP/JSON env server: sessions over the gym registry (see src/serve/env-server.ts for the API)')
    .option('--host <host>', 'interface to listen on', ENV_SERVER_DEFAULTS.host)
    .option('--port <n>', 'port (0 picks a free one)', positiveInt('--port', 0), ENV_SERVER_DEFAULTS.port)
    .option('--token <token>', 'require "Authorization: Bearer <token>" (default: env LONGRUN_SERVE_TOKEN, else none)')
    .option('--max-sessions <n>', 'most live sessions; more get 429', positiveInt('--max-sessions'), ENV_SERVER_DEFAULTS.maxSessions)
    .option('--idle-timeout <seconds>', 'close sessions idle this long (0: never)', positiveInt('--idle-timeout', 0), ENV_SERVER_DEFAULTS.idleTimeoutS)
    .option('--max-body <bytes>', 'largest request body; more gets 413', positiveInt('--max-body'), ENV_SERVER_DEFAULTS.maxBodyBytes)
    .option('--env <module-or-id>', 'an env module to serve (defineEnv; .ts, .mjs or .js, path:export picks an export), or a registered id to check; repeatable', (v: string, all: string[] = []) => [...all, v])
    .option('--data <dir>', 'τ² retail data folder (or a synthetic task-set folder) for the retail envs')
    .option('--user-base-url <url>', 'OpenAI-compatible server for an LLM user (sessions opt in with kwargs {"user": "llm"})')
    .option('--user-model <name>', 'LLM user model')
    .option('--user-guidelines <file>', "the LLM user's guidelines (τ²'s simulation_guidelines.md for parity)")
    .option('--judge <kind>', `judge for v1 NL assertions, given to every retail session: llm | ${FALLBACK_JUDGE_NAME} (not comparable to τ²)`)
    .option('--judge-base-url <url>', 'LLM judge base URL')
    .option('--judge-model <name>', 'LLM judge model')
    .option('--max-requests <n>', 'LLM requests in flight across all sessions', positiveInt('--max-requests'), 8)
    .action(async (opts: ServeEnvOptions) => serveEnvCommand(opts));
  serve
    .command('model')
    .description('OpenAI-compatible model server over a checkpoint: /v1/completions (token ids + log-probs), /v1/chat/completions')
    .requiredOption('--checkpoint <dir>', 'gpt-oss checkpoint folder (HF safetensors)')
    .option('--tokenizer <name|file>', 'o200k_harmony, qwen3 or a BPE tokenizer JSON (default: <checkpoint>/tokenizer.json if present)')
    .option('--chat-format <name>', 'harmony, hermes or qwen3 (needs --tokenizer qwen3); enables /v1/chat/completions')
    .option('--model-name <name>', 'model id clients send (default: the checkpoint folder name)')
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--port <n>', 'port (0 picks a free one)', positiveInt('--port', 0), 8000)
    .option('--token <token>', 'require "Authorization: Bearer <token>" (default: env LONGRUN_SERVE_TOKEN, else none)')
    .option('--max-batch <n>', 'sequences decoding together', positiveInt('--max-batch'), 8)
    .option('--max-prompts <n>', 'most prompts in one /v1/completions request; more gets 400', positiveInt('--max-prompts'), MODEL_SERVER_DEFAULTS.maxPromptsPerRequest)
    .action(async (opts: ServeModelCliOptions) => serveModelCommand(opts));
  serve
    .command('trainer')
    .description('Tinker-compatible training server (tinker SDK 0.38 protobuf and ≤ 0.24.x JSON): forward_backward, optim_step, sampling, weights')
    .requiredOption('--checkpoint <dir>', 'gpt-oss checkpoint folder (HF safetensors): the base model every create_model starts from')
    .option('--model-name <name>', 'base_model name clients send (default: the checkpoint folder name)')
    .option('--checkpoint-dir <dir>', 'where save_weights writes', 'runs/tinker-checkpoints')
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--port <n>', 'port (0 picks a free one)', positiveInt('--port', 0), 8010)
    .option('--api-key <key>', 'required X-API-Key (default: env TINKER_API_KEY, else any key is accepted)')
    .option('--max-body <bytes>', 'largest request body; more gets 413', positiveInt('--max-body'), 64 * 1024 * 1024)
    .option('--max-models <n>', 'most training models held at once', positiveInt('--max-models'), 8)
    .action(async (opts: ServeTrainerCliOptions) => serveTrainerCommand(opts));
  serve
    .command('gateway')
    .description('trajectory gateway: OpenAI-compatible /rollouts/{id}/v1/chat/completions over a checkpoint, recording every call token-exactly (docs/agent-programs.md)')
    .requiredOption('--checkpoint <dir>', 'gpt-oss checkpoint folder (HF safetensors)')
    .requiredOption('--chat-format <name>', 'harmony, hermes or qwen3 (needs --tokenizer qwen3)')
    .option('--tokenizer <name|file>', 'o200k_harmony, qwen3 or a BPE tokenizer JSON (default: <checkpoint>/tokenizer.json)')
    .option('--host <host>', 'interface to listen on', '127.0.0.1')
    .option('--port <n>', 'port (0 picks a free one)', positiveInt('--port', 0), 8100)
    .option('--token <token>', 'require "Authorization: Bearer <token>", the programs\' API key (default: env LONGRUN_SERVE_TOKEN, else none)')
    .option('--max-batch <n>', 'sequences decoding together', positiveInt('--max-batch'), 16)
    .option('--max-response-tokens <n>', 'most tokens after a row\'s first prompt (more is a 400 and the rollout is truncated)', positiveInt('--max-response-tokens'))
    .option('--record <file>', 'append each finished rollout\'s record (rows with token ids) as a JSON line')
    .action(async (opts: ServeGatewayCliOptions) => serveGatewayCommand(opts));
}
