/**
 * `longrun eval --agent checkpoint --checkpoint DIR`: serves the checkpoint with the OpenAI-compatible model server on
 * a free loopback port for the duration of the run, and plays every episode with the token-level `AgentLoop` of
 * training (src/rollout/agent-loop.ts) against its `/v1/completions` endpoint (token ids in, token ids and log-probs
 * out): the prompt is rendered once by the chat format, sampled tokens are kept verbatim, observations are appended as
 * token deltas. So the model sees, token for token, what GRPO's in-process rollouts show it
 * for the same system prompt, tools, limits and seeds — which chat completions cannot promise, since they re-render
 * the whole conversation from parsed messages every turn (sampled JSON re-serialised, malformed turns replaced).
 *
 * The prompt defaults to the env's (τ²'s agent system prompt around the task set's policy.md, the env's tools with
 * `done`); a model folder's `longrun.json` (src/recipes/model-settings.ts) sets it as the model was trained, through
 * `systemPrompt` and `tools` here (resolved by the CLI).
 */
import { basename, join, resolve } from 'node:path';
import { existsSync } from 'node:fs';
import { createChatFormat } from '../../llm/formats.ts';
import { loadTokenizer } from '../../llm/load-tokenizer.ts';
import type { ChatFormat } from '../../llm/chat-format.ts';
import type { ToolSpec } from '../../llm/messages.ts';
import type { TokenUsage } from '../../llm/openai/chat-client.ts';
import { AgentLoop, type AgentEnv, type SamplingConfig } from '../../rollout/agent-loop.ts';
import type { GenerationRequest, GenerationResult, InferenceEngine } from '../../rollout/inference.ts';
import { OpenAICompatibleEngine } from '../../rollout/openai-engine.ts';
import { GREETING } from '../../tooluse/orchestrator.ts';
import type { Task } from '../../tooluse/tasks.ts';
import { serveCheckpoint } from '../model-serve.ts';
import { loadModel } from '../../model/checkpoint/index.ts';
import { createStepModelEngine } from '../../rollout/model-engine.ts';
import type { EpisodeEvalAgent, EvalEnvLike, PlayedEpisode } from './agents.ts';
import type { EvalCliOptions } from './setup.ts';

/** How the checkpoint agent builds its prompt and samples (the CLI fills it from flags and the model's longrun.json). */
export interface CheckpointAgentSettings {
  /** Overrides the env's system prompt (τ²'s agent prompt around the task set's policy.md). */
  systemPrompt?: string;
  /** The tools shown, from the env's (τ²'s `done` last); default: the env's as they are. */
  tools?: (envTools: readonly ToolSpec[]) => ToolSpec[];
  sampling: SamplingConfig;
  /** Assistant turns per episode (default: the env's step limit). */
  maxTurns?: number;
  /** Token budget after the prompt (default: the model's context). */
  maxResponseTokens?: number;
  maxTokensPerTurn?: number;
  onParseError?: 'send-text' | 'terminate';
  /** Keep each episode's token ids in the trajectory log. */
  saveTokens?: boolean;
}

export interface TokenLoopAgentOptions extends CheckpointAgentSettings {
  name: string;
  engine: InferenceEngine;
  format: ChatFormat;
  /** The model's context: requests are capped to it, and an episode that fills it ends as `context_length`. */
  contextLength: number;
  /** The env's step limit, the default turn limit. */
  maxSteps: number;
  /** The assistant greeting that opens the prompt: τ²'s by default (retail); null for none (an env without one). */
  greeting?: string | null;
}

/** An engine that caps each request to the context and remembers when the context was full. */
class ContextCap implements InferenceEngine {
  full = false;
  readonly usage: TokenUsage = { requests: 0, promptTokens: 0, completionTokens: 0, retries: 0, failures: 0 };
  constructor(private readonly inner: InferenceEngine, private readonly context: number) {}

  async generate(requests: readonly GenerationRequest[]): Promise<GenerationResult[]> {
    const sent: GenerationRequest[] = [];
    const out: (GenerationResult | null)[] = requests.map((r) => {
      const room = this.context - r.tokens.length;
      if (room < 1) {
        this.full = true;
        return { tokens: [], logprobs: [], finishReason: 'aborted' };
      }
      sent.push(room < r.maxNewTokens ? { ...r, maxNewTokens: room } : r);
      return null;
    });
    let results: GenerationResult[];
    try {
      results = await this.inner.generate(sent);
    } catch (e) {
      this.usage.failures++;
      throw e;
    }
    this.usage.requests += sent.length;
    for (const r of sent) this.usage.promptTokens += r.tokens.length;
    for (const r of results) this.usage.completionTokens += r.tokens.length;
    let k = 0;
    return out.map((r) => r ?? results[k++]!);
  }
}

/** Records the env's last info for the eval record (the agent loop keeps only the reward info). */
function tracking(env: EvalEnvLike): { env: AgentEnv; last: () => Record<string, unknown> } {
  let last: Record<string, unknown> = {};
  return {
    env: {
      reset: async (options) => {
        const r = await env.reset(options);
        last = r[1];
        return r;
      },
      step: async (action) => {
        const r = await env.step(action);
        last = r[4];
        return r;
      },
    },
    last: () => last,
  };
}

/** Plays episodes with the agent loop of training over any engine (here: the served checkpoint's completions). */
export class TokenLoopEvalAgent implements EpisodeEvalAgent {
  readonly name: string;
  constructor(private readonly o: TokenLoopAgentOptions) {
    this.name = o.name;
  }

  async play(env: EvalEnvLike, episode: { task: Task; seed: number }): Promise<PlayedEpisode> {
    const o = this.o;
    const engine = new ContextCap(o.engine, o.contextLength);
    const loop = new AgentLoop({
      format: o.format,
      engine,
      sampling: o.sampling,
      maxTurns: o.maxTurns ?? o.maxSteps,
      maxResponseTokens: o.maxResponseTokens ?? o.contextLength,
      maxTokensPerTurn: o.maxTokensPerTurn,
      onParseError: o.onParseError,
      ...(o.greeting === null ? {} : { greeting: o.greeting ?? GREETING }),
      systemPrompt: o.systemPrompt,
      tools: o.tools && env.tools ? o.tools(env.tools as readonly ToolSpec[]) : undefined,
    });
    const tracked = tracking(env);
    const t = await loop.run(tracked.env, { seed: episode.seed, taskId: episode.task.id });
    // A failure that is not the agent's (the env's reward threw, a tool server died) is recorded as an error, never scored.
    if (t.terminationReason === 'env_error') throw new Error(`env error: ${t.envError ?? 'unknown'}`);
    const envEnded = t.terminationReason === 'env_terminated' || t.terminationReason === 'env_truncated';
    return {
      info: tracked.last(),
      reward: t.reward,
      ...(envEnded ? {} : { agentEnded: t.terminationReason === 'aborted' && engine.full ? 'context_length' : t.terminationReason }),
      usage: { ...engine.usage },
      stats: { turns: t.numTurns, parseErrors: t.parseErrors, toolCalls: t.toolCalls, promptTokens: t.promptIds.length, responseTokens: t.responseIds.length },
      ...(o.saveTokens ? { tokens: { prompt: t.promptIds, response: t.responseIds, responseMask: t.responseMask } } : {}),
    };
  }
}

/** Where the checkpoint runs: in this process (GRPO's engine, KV cache kept across turns) or behind the loopback server. */
export const CHECKPOINT_ENGINES = ['in-process', 'server'] as const;
export type CheckpointEngine = (typeof CHECKPOINT_ENGINES)[number];

export type CheckpointCliOptions = EvalCliOptions & {
  checkpoint?: string; tokenizer?: string; chatFormat?: string; checkpointAgent?: CheckpointAgentSettings; engine?: CheckpointEngine;
  /** Serve the model with its attention sinks ignored (ModelOptions.sinks 'ignore'); in-process engine only. */
  ignoreSinks?: boolean;
};

/**
 * Runs `run` with the token-level agent in `agentInstance` over the checkpoint; other agents pass through. The
 * tokenizer defaults to DIR/tokenizer.json, the chat format to harmony. `engine: 'in-process'` (the default) samples
 * with GRPO's step-batching engine, whose sessions keep each episode's KV cache between turns; `'server'` goes through
 * the OpenAI-compatible server's /v1/completions, which re-reads the whole prompt every turn (several times slower on
 * long episodes) but is the path an external model takes. Both give the same tokens for the same seeds
 * (test/serve/eval-checkpoint-parity.test.ts).
 */
export async function withCheckpointAgent<T>(o: CheckpointCliOptions, run: (opts: EvalCliOptions) => Promise<T>): Promise<T> {
  if (o.agent !== 'checkpoint') return run(o);
  if (!o.checkpoint) throw new Error('--agent checkpoint needs --checkpoint DIR');
  const dir = resolve(o.checkpoint);
  const tokenizerPath = o.tokenizer ?? join(dir, 'tokenizer.json');
  if (tokenizerPath !== 'o200k_harmony' && !existsSync(tokenizerPath)) throw new Error(`--agent checkpoint renders the prompt itself and needs a tokenizer: ${tokenizerPath} does not exist (pass --tokenizer FILE|o200k_harmony)`);
  const format = createChatFormat(o.chatFormat ?? 'harmony', loadTokenizer(tokenizerPath));
  const name = basename(dir);
  const s: CheckpointAgentSettings = o.checkpointAgent ?? { sampling: { temperature: o.temperature ?? 0 }, maxTokensPerTurn: o.maxTokens };
  if ((o.engine ?? 'in-process') === 'in-process') {
    const model = loadModel(dir, { grads: false, sinks: o.ignoreSinks ? 'ignore' : 'exact' });
    const contextLength = model.config.max_position_embeddings;
    const engine = createStepModelEngine(model, { maxBatchSize: Math.max(1, o.concurrency), sessionCapacity: contextLength });
    const agent = new TokenLoopEvalAgent({ ...s, name: `checkpoint:${name}`, engine, format, contextLength, maxSteps: o.maxSteps });
    return run({ ...o, model: name, agentInstance: agent });
  }
  if (o.engine !== 'server') throw new Error(`--engine must be one of ${CHECKPOINT_ENGINES.join(', ')}, got ${JSON.stringify(o.engine)}`);
  if (o.ignoreSinks) throw new Error('--ignore-sinks runs with --engine in-process only (the model server serves the checkpoint as it is)');
  const server = await serveCheckpoint({ checkpoint: dir, tokenizer: tokenizerPath, chatFormat: format.name, modelName: name, port: 0 });
  try {
    const contextLength = await servedContextLength(server.url, name);
    const agent = new TokenLoopEvalAgent({
      ...s,
      name: `checkpoint:${name}`,
      engine: new OpenAICompatibleEngine({ baseUrl: server.url, model: name, concurrency: o.concurrency, timeoutMs: o.timeout * 1000, maxRetries: o.maxRetries }),
      format,
      contextLength,
      maxSteps: o.maxSteps,
    });
    return await run({ ...o, model: name, agentInstance: agent });
  } finally {
    await server.close();
  }
}

/** The served model's context (`max_model_len` of /v1/models). */
async function servedContextLength(url: string, model: string): Promise<number> {
  const res = await fetch(`${url}/v1/models`);
  const body = (await res.json()) as { data?: { id?: string; max_model_len?: unknown }[] };
  const n = body.data?.find((m) => m.id === model)?.max_model_len;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 1) throw new Error(`the model server at ${url} does not report max_model_len for ${model}`);
  return n;
}
