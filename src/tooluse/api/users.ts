/**
 * Users for defined envs: `scriptedUser(fn)` (a function of the conversation) and `llmUser(...)` (a model behind an
 * OpenAI-compatible chat endpoint). Any object with `respond(ctx) → string | null` is a user too.
 */
import OpenAI from 'openai';
import type { Message } from '../messages.ts';
import type { Task, UserContext, UserSpec } from './types.ts';

/** A user played by a function: a string is the user's next message, null means the user leaves. */
export function scriptedUser<S = unknown, T extends Task = Task>(respond: (ctx: UserContext<S, T>) => string | null | Promise<string | null>, name = 'scripted'): UserSpec<S, T> {
  if (typeof respond !== 'function') throw new TypeError('scriptedUser: needs a function (ctx) => string | null');
  return { name, respond };
}

/** τ²'s convention: a user message holding this token ends the conversation. */
export const USER_STOP_TOKEN = '###STOP###';

export interface LlmUserOptions<T extends Task = Task> {
  /** An OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1. */
  baseUrl: string;
  model: string;
  /** Default: env OPENAI_API_KEY, else a placeholder (local servers need none). */
  apiKey?: string;
  /** The user's role: a fixed text, or one per task (e.g. the task's scenario). */
  instructions: string | ((task: T) => string);
  temperature?: number;
  /** Per request; default 60 000. */
  timeoutMs?: number;
  /** Retries of a failed request (the openai client's); default 2. */
  maxRetries?: number;
  /** Ends the conversation when the reply contains it (default `###STOP###`, which the user is told about). */
  stopToken?: string;
  /** For tests and custom clients: replaces the OpenAI client. */
  client?: Pick<OpenAI, 'chat'>;
}

/** The user's view: the agent's messages as the user's input and its own as its output (roles swapped). */
function userView(messages: readonly Message[]): { role: 'user' | 'assistant'; content: string }[] {
  const out: { role: 'user' | 'assistant'; content: string }[] = [];
  for (const m of messages) {
    if (m.role === 'assistant' && m.content !== null && m.content.trim() !== '') out.push({ role: 'user', content: m.content });
    else if (m.role === 'user' && m.content !== null) out.push({ role: 'assistant', content: m.content });
  }
  return out;
}

/**
 * A user played by a model through an OpenAI-compatible chat endpoint (the `openai` package). A request that fails
 * throws (the env turns it into an EpisodeError: the episode is recorded as an env error, never scored).
 */
export function llmUser<S = unknown, T extends Task = Task>(options: LlmUserOptions<T>): UserSpec<S, T> {
  if (!options.client && (typeof options.baseUrl !== 'string' || options.baseUrl === '')) throw new TypeError('llmUser: needs baseUrl');
  if (typeof options.model !== 'string' || options.model === '') throw new TypeError('llmUser: needs model');
  const stop = options.stopToken ?? USER_STOP_TOKEN;
  let client = options.client;
  return {
    name: `llm:${options.model}`,
    async respond(ctx) {
      client ??= new OpenAI({
        baseURL: options.baseUrl,
        apiKey: options.apiKey ?? process.env.OPENAI_API_KEY ?? 'not-needed',
        timeout: options.timeoutMs ?? 60_000,
        maxRetries: options.maxRetries ?? 2,
      });
      const role = typeof options.instructions === 'function' ? options.instructions(ctx.task) : options.instructions;
      const system = `${role}\n\nYou are the user talking to an assistant. Write only your next message. When your goal is met or you want to end the conversation, reply with ${stop}.`;
      const history = userView(ctx.messages);
      const reply = await client.chat.completions.create({
        model: options.model,
        messages: [{ role: 'system', content: system }, ...(history.length ? history : [{ role: 'user' as const, content: '(The conversation starts: write your first message.)' }])],
        temperature: options.temperature ?? 0,
        seed: ctx.seed,
      }, { signal: ctx.signal });
      const text = reply.choices?.[0]?.message?.content;
      if (typeof text !== 'string') throw new Error(`llmUser ${options.model}: the reply has no message text`);
      if (text.includes(stop)) return null;
      return text.trim() === '' ? '...' : text;
    },
  };
}
