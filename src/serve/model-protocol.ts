/** Request bodies of the model server's OpenAI-compatible endpoints (zod), with vLLM's extensions that RL needs. */
import { z } from 'zod';

const tokenIds = z.array(z.number().int().min(0));

const sampling = {
  model: z.string().optional(),
  max_tokens: z.number().int().min(1).nullable().optional(),
  temperature: z.number().min(0).max(10).nullable().optional(),
  top_p: z.number().gt(0).max(1).nullable().optional(),
  /** vLLM: -1 or absent = off. */
  top_k: z.number().int().nullable().optional(),
  seed: z.number().int().min(0).nullable().optional(),
  n: z.number().int().min(1).max(1, 'n > 1 is not supported; send separate requests with different seeds').nullable().optional(),
  stream: z.literal(false, 'streaming is not supported; omit "stream" or set it to false').nullable().optional(),
  user: z.string().optional(),
};

export const CompletionBody = z.looseObject({
  ...sampling,
  prompt: z.union([tokenIds.min(1), z.string().min(1), z.array(tokenIds.min(1)).min(1), z.array(z.string().min(1)).min(1)]),
  /** vLLM: generation also stops after any of these ids (the id is part of the output). */
  stop_token_ids: tokenIds.nullable().optional(),
  logprobs: z.number().int().min(0).max(1, 'only the sampled token\'s log-prob is returned; use logprobs 0 or 1').nullable().optional(),
  stop: z.union([z.string(), z.array(z.string())]).nullable().optional(),
  echo: z.literal(false, 'echo is not supported').nullable().optional(),
});
export type CompletionBody = z.infer<typeof CompletionBody>;

const textParts = z.array(z.looseObject({ type: z.string(), text: z.string().optional() }));
const content = z.union([z.string(), textParts]).nullable().optional();

const toolCall = z.looseObject({
  id: z.string().optional(),
  type: z.literal('function').optional(),
  function: z.looseObject({ name: z.string(), arguments: z.string() }),
});

export const ChatMessageBody = z.discriminatedUnion('role', [
  z.looseObject({ role: z.literal('system'), content }),
  z.looseObject({ role: z.literal('developer'), content }),
  z.looseObject({ role: z.literal('user'), content }),
  z.looseObject({ role: z.literal('assistant'), content, tool_calls: z.array(toolCall).nullable().optional(), reasoning_content: z.string().nullable().optional() }),
  z.looseObject({ role: z.literal('tool'), content, tool_call_id: z.string().optional(), name: z.string().optional() }),
]);

export const ChatCompletionBody = z.looseObject({
  ...sampling,
  messages: z.array(ChatMessageBody).min(1),
  tools: z
    .array(z.looseObject({ type: z.literal('function'), function: z.looseObject({ name: z.string().min(1), description: z.string().optional(), parameters: z.record(z.string(), z.unknown()).optional() }) }))
    .nullable()
    .optional(),
  tool_choice: z.union([z.literal('auto'), z.literal('none')], 'tool_choice must be "auto" or "none"').nullable().optional(),
  max_completion_tokens: z.number().int().min(1).nullable().optional(),
  logprobs: z.boolean().nullable().optional(),
  parallel_tool_calls: z.boolean().nullable().optional(),
  response_format: z.unknown().optional(),
  stop: z.union([z.string(), z.array(z.string())]).nullable().optional(),
});
export type ChatCompletionBody = z.infer<typeof ChatCompletionBody>;
