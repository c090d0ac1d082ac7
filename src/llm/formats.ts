/** Picks a chat format by config name. */
import type { ChatFormat } from './chat-format.ts';
import { HarmonyFormat, type HarmonyOptions } from './harmony.ts';
import { HermesFormat, type HermesOptions } from './hermes.ts';
import { Qwen3Format } from './qwen3.ts';
import type { Tokenizer } from './tokenizer.ts';

export const CHAT_FORMAT_NAMES = ['harmony', 'hermes', 'qwen3'] as const;
export type ChatFormatName = (typeof CHAT_FORMAT_NAMES)[number];

export function createChatFormat(name: string, tokenizer: Tokenizer, options: HarmonyOptions & HermesOptions = {}): ChatFormat {
  switch (name) {
    case 'harmony':
      return new HarmonyFormat(tokenizer, options);
    case 'hermes':
      return new HermesFormat(tokenizer, options);
    case 'qwen3':
      return new Qwen3Format(tokenizer);
    default:
      throw new Error(`unknown chat format ${JSON.stringify(name)} (known: ${CHAT_FORMAT_NAMES.join(', ')})`);
  }
}
