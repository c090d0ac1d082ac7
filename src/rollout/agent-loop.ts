/**
 * `AgentLoop`: one multi-turn episode, token-in/token-out, like verl's agent loop
 * (https://verl.readthedocs.io/en/latest/advance/agent_loop.html).
 *
 * The running token list is the ground truth and is only ever appended to:
 *   prompt   = render(system prompt + tools + first observation) + generation prompt      (rendered once)
 *   each turn: engine(all tokens so far) → sampled ids appended VERBATIM, mask 1, rollout log-probs kept
 *              → parsed into an env action → env.step
 *              → the observation's messages rendered as a delta (`session.append`) + the next generation prompt,
 *                appended with mask 0 and log-prob 0
 * Earlier turns are never re-tokenized.
 *
 * Limits and truncation (verl §3.5, adapted to an env that scores the episode):
 * - `maxResponseTokens` (R) is the budget for every token after the prompt (model + observation). A turn may sample
 *   at most `min(maxTokensPerTurn, R − used)` tokens. A turn cut by the budget is not sent to the env; the episode
 *   ends with `max_response_tokens`. An observation that would bring the total to ≥ R is dropped and the episode
 *   ends the same way (verl terminates without appending it).
 * - `maxTurns` assistant turns: the last turn is still sent to the env (it may finish the episode); if the env goes
 *   on, the episode ends with `max_turns`.
 * - An episode ended by the loop (not by the env) gets reward 0 and `truncated: true`: an unfinished τ² episode
 *   cannot be evaluated. DAPO's overlong shaping (rl/dapo.ts) can be applied on top.
 *
 * Parse errors (decided here): with `onParseError: 'send-text'` (default) the turn is sent to the env as a plain
 * message to the user, holding the text that could be read (the parse's partial content, else the decoded
 * completion without special tokens, else "..."), and counted in `parseErrors`; the env goes on as with any reply.
 * A well-formed turn with neither text nor a tool call is handled the same way (sent as "...").
 * With `'terminate'` the episode ends with `parse_error` and reward 0. Either way the sampled tokens stay in the
 * sequence with mask 1, so the policy gradient sees them.
 *
 * Env errors: an `EpisodeError` thrown by `env.reset` or `env.step` (a failure that is not the agent's: a tool server
 * died, the reward function threw) ends the episode with `env_error`, reward 0 and the message in `envError`; the
 * trajectory keeps the tokens so far (none when reset failed). Any other error from the env propagates.
 */
import type { ChatFormat, ChatMessage, CompletionParse, ToolSpec } from '../llm/index.ts';
import type { Info, ResetOptions } from '../gym/types.ts';
import type { RewardInfo } from '../tooluse/evaluator.ts';
import type { AgentTurn } from '../tooluse/orchestrator.ts';
import type { Message } from '../tooluse/messages.ts';
import { EpisodeError } from '../tooluse/api/errors.ts';
import type { GenerationRequest, InferenceEngine } from './inference.ts';

/**
 * What the loop needs from an env: ToolUseEnv's shape. Observations must be the messages since the agent's last
 * turn (ToolUseEnv's default; not `allMessagesAsObservation`), since each is appended once.
 */
export interface AgentEnv {
  reset(options?: ResetOptions): Promise<[{ messages: Message[] }, Info]>;
  step(action: AgentTurn): Promise<[{ messages: Message[] }, number, boolean, boolean, Info]>;
  close?(): Promise<void>;
}

export type TerminationReason = 'env_terminated' | 'env_truncated' | 'max_turns' | 'max_response_tokens' | 'parse_error' | 'aborted' | 'env_error';

export interface SamplingConfig {
  temperature: number;
  topP?: number;
  topK?: number;
}

export interface AgentLoopOptions {
  format: ChatFormat;
  engine: InferenceEngine;
  sampling: SamplingConfig;
  /** Max assistant turns (verl `max_assistant_turns`). */
  maxTurns: number;
  /** R: the token budget after the prompt (model + observation tokens). */
  maxResponseTokens: number;
  /** Per-turn cap on sampled tokens (default: no cap beyond the budget). */
  maxTokensPerTurn?: number;
  /** Overrides `info.systemPrompt`. */
  systemPrompt?: string;
  /** Overrides `info.tools`. */
  tools?: readonly ToolSpec[];
  /** An assistant greeting shown before the first observation (τ²'s agent opens with one; ToolUseEnv leaves it out of the observation). */
  greeting?: string;
  onParseError?: 'send-text' | 'terminate';
  /** Reward at or above this counts as success (default 1, τ²'s convention). */
  successThreshold?: number;
}

export interface Trajectory {
  promptIds: number[];
  /** Every token after the prompt: model turns and observations interleaved. */
  responseIds: number[];
  /** 1 on tokens the policy sampled, 0 on observation tokens. */
  responseMask: number[];
  /** The engine's log-probs of the sampled tokens, 0 where the mask is 0. */
  rolloutLogprobs: number[];
  reward: number;
  success: boolean;
  /**
   * τ²'s breakdown of the reward (`RewardInfo`: the DB check, the gold-action checks, …) as the env reported it under
   * `info.rewardInfo`, the last time it did; null when it never did. The tool-use envs report it at episode end.
   */
  rewardInfo: RewardInfo | null;
  /** Assistant turns. */
  numTurns: number;
  /** Observations appended (tool results, user replies). */
  userTurns: number;
  toolCalls: number;
  toolErrors: number;
  parseErrors: number;
  terminationReason: TerminationReason;
  /** The episode did not end naturally (a loop limit, a parse error, or the env's own time limit). */
  truncated: boolean;
  taskId: string | undefined;
  seed: number;
  /** The conversation as the session recorded it (parsed turns; unparseable turns as their text). */
  messages: ChatMessage[];
  /** With terminationReason 'env_error': the EpisodeError's message. */
  envError?: string;
}

export interface RunOptions {
  seed: number;
  taskId?: string;
}

/** Tool-use messages (τ² shape) → chat messages; the agent's own messages are skipped (it wrote them). */
export function toChatMessages(messages: readonly Message[], callNames: ReadonlyMap<string, string>): ChatMessage[] {
  const out: ChatMessage[] = [];
  for (const m of messages) {
    if (m.role === 'assistant') continue;
    if (m.role === 'tool') {
      const msg: ChatMessage = { role: 'tool', content: m.content, toolCallId: m.id };
      const name = callNames.get(m.id);
      if (name !== undefined) msg.name = name;
      out.push(msg);
    } else out.push({ role: m.role, content: m.content ?? '' });
  }
  return out;
}

function stripSpecials(format: ChatFormat, tokens: readonly number[]): string {
  return format.tokenizer.decode(tokens.filter((t) => !format.tokenizer.isSpecial(t))).trim();
}

/**
 * The env action for a parse: its content and tool calls (ids assigned here), or the fallback text when the turn is
 * unusable — malformed, or well-formed with neither text nor a tool call (the env needs one or the other).
 */
function toAction(parse: CompletionParse, format: ChatFormat, turn: number): { action: AgentTurn; callNames: [string, string][]; usable: boolean } {
  if (!parse.ok) {
    const text = parse.partial.content?.trim() || stripSpecials(format, parse.tokens) || '...';
    return { action: { content: text, toolCalls: null }, callNames: [], usable: false };
  }
  const calls = (parse.toolCalls ?? []).map((c, i) => ({ id: `call_${turn}_${i}`, name: c.name, arguments: c.arguments }));
  const content = parse.content !== undefined && parse.content.trim() !== '' ? parse.content : null;
  if (content === null && calls.length === 0) return { action: { content: '...', toolCalls: null }, callNames: [], usable: false };
  // The chain of thought goes with the action, so trajectories record it (the env and the user never read it).
  const reasoning = parse.reasoning !== undefined && parse.reasoning.trim() !== '' ? { reasoning: parse.reasoning } : {};
  return { action: { content, toolCalls: calls.length > 0 ? calls : null, ...reasoning }, callNames: calls.map((c) => [c.id, c.name]), usable: true };
}

let sessionCounter = 0;

export class AgentLoop {
  constructor(private readonly options: AgentLoopOptions) {
    if (!(Number.isInteger(options.maxTurns) && options.maxTurns >= 1)) throw new RangeError(`maxTurns must be a positive integer, got ${options.maxTurns}`);
    if (!(Number.isInteger(options.maxResponseTokens) && options.maxResponseTokens >= 1)) throw new RangeError(`maxResponseTokens must be a positive integer, got ${options.maxResponseTokens}`);
  }

  async run(env: AgentEnv, run: RunOptions): Promise<Trajectory> {
    const sessionId = `traj-${++sessionCounter}`;
    try {
      return await this.episode(env, run, sessionId);
    } finally {
      this.options.engine.endSession?.(sessionId);
    }
  }

  private async episode(env: AgentEnv, run: RunOptions, sessionId: string): Promise<Trajectory> {
    const o = this.options;
    let reset: [{ messages: Message[] }, Info];
    try {
      reset = await env.reset({ seed: run.seed, options: run.taskId !== undefined ? { taskId: run.taskId } : null });
    } catch (e) {
      if (!(e instanceof EpisodeError)) throw e;
      return {
        promptIds: [], responseIds: [], responseMask: [], rolloutLogprobs: [], reward: 0, success: false, rewardInfo: null,
        numTurns: 0, userTurns: 0, toolCalls: 0, toolErrors: 0, parseErrors: 0, terminationReason: 'env_error', truncated: true,
        taskId: run.taskId, seed: run.seed, messages: [], envError: e.message,
      };
    }
    const [obs0, info0] = reset;
    const systemPrompt = o.systemPrompt ?? (typeof info0.systemPrompt === 'string' ? info0.systemPrompt : undefined);
    const tools = o.tools ?? (Array.isArray(info0.tools) ? (info0.tools as ToolSpec[]) : undefined);
    const callNames = new Map<string, string>();
    const first: ChatMessage[] = [];
    if (systemPrompt !== undefined) first.push({ role: 'system', content: systemPrompt });
    if (o.greeting !== undefined) first.push({ role: 'assistant', content: o.greeting });
    first.push(...toChatMessages(obs0.messages, callNames));
    const session = o.format.startSession({ messages: first, tools });
    const promptIds = [...session.tokens, ...session.appendGenerationPrompt()];

    const response: number[] = [];
    const mask: number[] = [];
    const logprobs: number[] = [];
    const budget = o.maxResponseTokens;
    let numTurns = 0;
    let userTurns = 0;
    let toolCalls = 0;
    let toolErrors = 0;
    let parseErrors = 0;
    let reward = 0;
    // The env's info is untyped (Gymnasium's dict); the tool-use envs put τ²'s RewardInfo under `rewardInfo`.
    let rewardInfo = (info0.rewardInfo as RewardInfo | undefined) ?? null;
    let reason: TerminationReason | undefined;
    let envError: string | undefined;

    while (reason === undefined) {
      const room = budget - response.length;
      const maxNew = Math.min(room, o.maxTokensPerTurn ?? room);
      if (maxNew <= 0) {
        reason = 'max_response_tokens';
        break;
      }
      const request: GenerationRequest = {
        tokens: [...promptIds, ...response],
        maxNewTokens: maxNew,
        temperature: o.sampling.temperature,
        topP: o.sampling.topP,
        topK: o.sampling.topK,
        stop: o.format.stopTokenIds,
        seed: (run.seed * 1009 + numTurns * 7919) % 2147483647,
        session: sessionId,
      };
      const [out] = await o.engine.generate([request]);
      if (out.tokens.length !== out.logprobs.length) throw new Error(`inference engine returned ${out.tokens.length} tokens but ${out.logprobs.length} log-probs`);
      if (out.tokens.length > maxNew) throw new Error(`inference engine returned ${out.tokens.length} tokens, more than maxNewTokens ${maxNew}`);
      response.push(...out.tokens);
      mask.push(...out.tokens.map(() => 1));
      logprobs.push(...out.logprobs);
      numTurns++;
      if (out.finishReason === 'aborted') {
        reason = 'aborted';
        break;
      }
      const parse = session.appendGenerated(out.tokens);
      if (out.finishReason === 'length' && response.length >= budget) {
        reason = 'max_response_tokens';
        break;
      }
      const { action, callNames: names, usable } = toAction(parse, o.format, numTurns);
      if (!usable) {
        parseErrors++;
        if ((o.onParseError ?? 'send-text') === 'terminate') {
          reason = 'parse_error';
          break;
        }
      }
      for (const [id, name] of names) callNames.set(id, name);
      toolCalls += names.length;
      let stepped: [{ messages: Message[] }, number, boolean, boolean, Info];
      try {
        stepped = await env.step(action);
      } catch (e) {
        if (!(e instanceof EpisodeError)) throw e;
        reason = 'env_error';
        envError = e.message;
        break;
      }
      const [obs, r, terminated, truncated, info] = stepped;
      reward += r;
      if (info.rewardInfo !== undefined) rewardInfo = info.rewardInfo as RewardInfo | null;
      for (const m of obs.messages) if (m.role === 'tool' && m.error) toolErrors++;
      if (terminated || truncated) {
        reason = terminated ? 'env_terminated' : 'env_truncated';
        break;
      }
      if (numTurns >= o.maxTurns) {
        reason = 'max_turns';
        break;
      }
      const messages = toChatMessages(obs.messages, callNames);
      const delta = [...session.append(...messages), ...session.appendGenerationPrompt()];
      if (response.length + delta.length >= budget) {
        reason = 'max_response_tokens';
        break;
      }
      response.push(...delta);
      mask.push(...delta.map(() => 0));
      logprobs.push(...delta.map(() => 0));
      userTurns++;
    }

    const envEnded = reason === 'env_terminated' || reason === 'env_truncated';
    if (!envEnded) reward = 0;
    return {
      promptIds,
      responseIds: response,
      responseMask: mask,
      rolloutLogprobs: logprobs,
      reward,
      success: envEnded && reward >= (o.successThreshold ?? 1) - 1e-9,
      rewardInfo,
      numTurns,
      userTurns,
      toolCalls,
      toolErrors,
      parseErrors,
      terminationReason: reason!,
      truncated: reason !== 'env_terminated',
      taskId: typeof info0.taskId === 'string' ? info0.taskId : run.taskId,
      seed: run.seed,
      messages: [...session.messages],
      ...(envError !== undefined ? { envError } : {}),
    };
  }
}
