/**
 * Reward helpers: `rewards.finalState` (τ²-style: the final state's hash against the hash of the state the task's
 * gold actions lead to), `rewards.checks` (named predicates, the fraction that pass) and `rewards.rubric` (an LLM judge
 * through an OpenAI-compatible endpoint). A helper that cannot score an episode throws an EpisodeError: the episode is
 * recorded as an env error, never silently scored 0.
 */
import { createHash } from 'node:crypto';
import OpenAI from 'openai';
import { messagesToText } from '../messages.ts';
import { errorMessage, EpisodeError } from './errors.ts';
import type { FinishedEpisode, ReplayCall, RewardFn, RewardResult, Task } from './types.ts';

/** JSON with object keys sorted (Maps as sorted entries, Sets as sorted arrays), so equal states print alike. */
export function canonicalJson(value: unknown): string {
  const norm = (x: unknown): unknown => {
    if (x instanceof Map) return { $map: [...x.entries()].map(([k, v]) => [norm(k), norm(v)]).sort((a, b) => (JSON.stringify(a[0]) < JSON.stringify(b[0]) ? -1 : 1)) };
    if (x instanceof Set) return { $set: [...x].map(norm).map((v) => JSON.stringify(v)).sort() };
    if (Array.isArray(x)) return x.map(norm);
    if (typeof x === 'object' && x !== null && typeof (x as { toJSON?: unknown }).toJSON !== 'function') {
      return Object.fromEntries(Object.keys(x).sort().map((k) => [k, norm((x as Record<string, unknown>)[k])]));
    }
    if (typeof x === 'bigint') return `${x}n`;
    return x;
  };
  return JSON.stringify(norm(value)) ?? 'undefined';
}

/** sha256 of the canonical JSON of a state (the default hash of `finalState`). */
export function stateHash(state: unknown): string {
  return createHash('sha256').update(canonicalJson(state)).digest('hex');
}

export interface FinalStateOptions<S, T extends Task> {
  /** The state's snapshot hash; default `stateHash` (sha256 of its canonical JSON). */
  hash?: (state: S) => string | Promise<string>;
  /** The task's gold actions, replayed on a fresh state (same task, same seed) through the env's own tools. */
  gold?: (task: T) => readonly ReplayCall[];
  /** Or the expected hash itself. */
  expectedHash?: (task: T) => string | Promise<string>;
}

/** Expected hashes kept per reward function (by task and seed: a state may depend on the seed). */
const FINAL_STATE_CACHE = 4096;

/** 1 when the final state's hash equals the expected one, else 0; info: both hashes. */
function finalState<S, T extends Task>(options: FinalStateOptions<S, T>): RewardFn<S, T> {
  if ((options.gold === undefined) === (options.expectedHash === undefined)) throw new TypeError('rewards.finalState: give exactly one of gold (actions to replay) and expectedHash');
  const hash = options.hash ?? stateHash;
  const cache = new Map<string, string>();
  return async (ep: FinishedEpisode<S, T>): Promise<RewardResult> => {
    const key = `${ep.task.id}\0${ep.seed}`;
    let expected = cache.get(key);
    if (expected === undefined) {
      expected = options.gold ? await ep.replay(options.gold(ep.task), hash) : await options.expectedHash!(ep.task);
      if (typeof expected !== 'string') throw new TypeError(`rewards.finalState: the expected hash of task ${ep.task.id} is not a string`);
      if (cache.size >= FINAL_STATE_CACHE) cache.delete(cache.keys().next().value!); // oldest first: a long run stays bounded
      cache.set(key, expected);
    }
    const actual = await hash(ep.state);
    return { reward: actual === expected ? 1 : 0, info: { finalHash: actual, expectedHash: expected, match: actual === expected } };
  };
}

export interface Check<S, T extends Task> {
  name: string;
  check: (ep: FinishedEpisode<S, T>) => boolean | Promise<boolean>;
}

/** The fraction of checks that pass; info.checks lists each `{ name, passed }`. A check that throws is an EpisodeError. */
function checks<S, T extends Task>(list: readonly Check<S, T>[]): RewardFn<S, T> {
  if (!Array.isArray(list) || list.length === 0) throw new TypeError('rewards.checks: needs at least one { name, check }');
  const names = new Set<string>();
  for (const c of list) {
    if (typeof c?.name !== 'string' || typeof c.check !== 'function') throw new TypeError('rewards.checks: each check is { name: string, check: (episode) => boolean }');
    if (names.has(c.name)) throw new TypeError(`rewards.checks: two checks are named ${c.name}`);
    names.add(c.name);
  }
  return async (ep) => {
    const results: { name: string; passed: boolean }[] = [];
    for (const c of list) {
      let passed: boolean;
      try {
        passed = (await c.check(ep)) === true;
      } catch (e) {
        throw new EpisodeError(`check ${c.name} threw on task ${ep.task.id}: ${errorMessage(e)}`, { cause: e });
      }
      results.push({ name: c.name, passed });
    }
    return { reward: results.filter((r) => r.passed).length / results.length, info: { checks: results } };
  };
}

export interface RubricOptions<S, T extends Task> {
  baseUrl: string;
  model: string;
  /** What a good episode does; a fixed text or one per task. */
  rubric: string | ((task: T) => string);
  /** Default: env OPENAI_API_KEY, else a placeholder. */
  apiKey?: string;
  /** Default 0. */
  temperature?: number;
  /** Per request; default 60 000. */
  timeoutMs?: number;
  /** Default 2. */
  maxRetries?: number;
  /** What the judge reads; default every message as `role: content` lines (tool calls and results included). */
  transcript?: (ep: FinishedEpisode<S, T>) => string;
  /** For tests and custom clients: replaces the OpenAI client. */
  client?: Pick<OpenAI, 'chat'>;
}

const RUBRIC_SYSTEM = [
  'You grade a conversation between an AI assistant and a user against a rubric.',
  'Reply with one JSON object and nothing else: {"score": <a number from 0 to 1>, "reasoning": "<one or two sentences>"}.',
].join('\n');

/** The first JSON object in a reply (judges often wrap it in prose or a code fence). */
function firstJsonObject(text: string): unknown {
  const start = text.indexOf('{');
  for (let end = text.lastIndexOf('}'); start >= 0 && end > start; end = text.lastIndexOf('}', end - 1)) {
    try {
      return JSON.parse(text.slice(start, end + 1));
    } catch {
      // try a shorter span
    }
  }
  throw new Error(`no JSON object in the judge's reply: ${JSON.stringify(text.slice(0, 200))}`);
}

/**
 * An LLM judge: the model reads the rubric and the transcript and returns a score in [0, 1]. The reward is the score;
 * info holds its reasoning, the model and the token usage (`usage: { promptTokens, completionTokens }`). A failed
 * request or an unreadable reply throws an EpisodeError.
 */
function rubric<S, T extends Task>(options: RubricOptions<S, T>): RewardFn<S, T> {
  if (!options.client && (typeof options.baseUrl !== 'string' || options.baseUrl === '')) throw new TypeError('rewards.rubric: needs baseUrl');
  if (typeof options.model !== 'string' || options.model === '') throw new TypeError('rewards.rubric: needs model');
  let client = options.client;
  return async (ep) => {
    client ??= new OpenAI({
      baseURL: options.baseUrl,
      apiKey: options.apiKey ?? process.env.OPENAI_API_KEY ?? 'not-needed',
      timeout: options.timeoutMs ?? 60_000,
      maxRetries: options.maxRetries ?? 2,
    });
    const text = typeof options.rubric === 'function' ? options.rubric(ep.task) : options.rubric;
    const transcript = options.transcript ? options.transcript(ep) : messagesToText(ep.messages);
    const where = `rubric judge ${options.model} on task ${ep.task.id}`;
    let reply: OpenAI.Chat.Completions.ChatCompletion;
    try {
      reply = await client.chat.completions.create({
        model: options.model,
        temperature: options.temperature ?? 0,
        messages: [
          { role: 'system', content: RUBRIC_SYSTEM },
          { role: 'user', content: `Rubric:\n${text}\n\nConversation:\n${transcript}` },
        ],
      });
    } catch (e) {
      throw new EpisodeError(`${where}: the request failed: ${errorMessage(e)}`, { cause: e });
    }
    const usage = { promptTokens: reply.usage?.prompt_tokens ?? 0, completionTokens: reply.usage?.completion_tokens ?? 0 };
    const content = reply.choices?.[0]?.message?.content ?? '';
    let parsed: unknown;
    try {
      parsed = firstJsonObject(content);
    } catch (e) {
      throw new EpisodeError(`${where}: ${errorMessage(e)} (usage ${usage.promptTokens}+${usage.completionTokens} tokens)`, { cause: e });
    }
    const score = (parsed as { score?: unknown }).score;
    if (typeof score !== 'number' || !Number.isFinite(score) || score < 0 || score > 1) {
      throw new EpisodeError(`${where}: the judge's score must be a number in [0, 1], got ${JSON.stringify(score)} (usage ${usage.promptTokens}+${usage.completionTokens} tokens)`);
    }
    const reasoning = (parsed as { reasoning?: unknown }).reasoning;
    return { reward: score, info: { judge: options.model, reasoning: typeof reasoning === 'string' ? reasoning : '', usage } };
  };
}

export const rewards = { finalState, checks, rubric };
