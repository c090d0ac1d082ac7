/**
 * `LLMJudge`: τ²'s NL-assertion grader over an OpenAI-compatible server (tau2.md §7.4). One request per episode:
 * the system prompt asks for a JSON object `{"results": [{"expectedOutcome", "reasoning", "metExpectation"}]}`, the
 * user prompt holds the transcript (`role: content` lines, tool results included, `None` for tool-call messages)
 * and the assertions as a Python list. A reply that is not that JSON is asked again (bounded), then an error.
 */
import { z } from 'zod';
import type { Judge, JudgeRequest, JudgeResult } from '../../tooluse/evaluator.ts';
import { pyRepr } from '../../tooluse/python/pyvalue.ts';
import type { ChatClient } from './chat-client.ts';

export const JUDGE_SYSTEM_PROMPT = [
  'You grade a conversation between a customer service agent and a customer.',
  'You are given the conversation and a list of expected outcomes. For each expected outcome, decide from the',
  'conversation alone whether it was met, and explain why in one or two sentences.',
  '',
  'Answer with a JSON object only, in exactly this format:',
  '{"results": [{"expectedOutcome": "<the outcome, copied>", "reasoning": "<why>", "metExpectation": true or false}]}',
  'with one entry per expected outcome, in the order given.',
].join('\n');

const JudgeReply = z.object({
  results: z.array(z.object({ expectedOutcome: z.string(), reasoning: z.string(), metExpectation: z.boolean() })),
});

export function judgeUserPrompt(request: JudgeRequest): string {
  return `conversation:\n${request.transcript}\n\nexpectedOutcomes:\n${pyRepr([...request.assertions])}`;
}

/** Pulls the JSON object out of a reply (tolerates code fences and prose around it). */
export function parseJudgeReply(text: string): JudgeResult[] {
  const start = text.indexOf('{');
  const end = text.lastIndexOf('}');
  if (start < 0 || end <= start) throw new Error('the reply holds no JSON object');
  let raw: unknown;
  try {
    raw = JSON.parse(text.slice(start, end + 1));
  } catch (err) {
    throw new Error(`the reply is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
  const parsed = JudgeReply.safeParse(raw);
  if (!parsed.success) throw new Error(`the reply does not match {"results": [{expectedOutcome, reasoning, metExpectation}]}: ${parsed.error.issues[0]?.message}`);
  return parsed.data.results;
}

export interface LLMJudgeOptions {
  /** Requests per episode before giving up on unparseable replies (default 3). */
  maxAttempts?: number;
  /** Send `response_format: {type: "json_object"}` (not every local server supports it). Default false. */
  jsonMode?: boolean;
  seed?: number;
}

export class LLMJudge implements Judge {
  constructor(
    readonly client: ChatClient,
    private readonly options: LLMJudgeOptions = {},
  ) {}

  async judge(request: JudgeRequest): Promise<JudgeResult[]> {
    const messages = [
      { role: 'system' as const, content: JUDGE_SYSTEM_PROMPT },
      { role: 'user' as const, content: judgeUserPrompt(request) },
    ];
    const attempts = this.options.maxAttempts ?? 3;
    let lastError = '';
    for (let i = 0; i < attempts; i++) {
      const reply = await this.client.complete({
        messages,
        ...(this.options.jsonMode ? { response_format: { type: 'json_object' as const } } : {}),
        ...(this.options.seed !== undefined ? { seed: this.options.seed } : {}),
      });
      try {
        return parseJudgeReply(reply.choices[0]!.message.content ?? '');
      } catch (err) {
        lastError = (err as Error).message;
      }
    }
    throw new Error(`The NL-assertion judge (${this.client.model}) gave no usable answer in ${attempts} attempts: ${lastError}`);
  }
}
