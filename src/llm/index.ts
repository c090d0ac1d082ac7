/** src/llm: tokenizers and chat formats, the text↔token layer between the agent loop and the model. */
export type { AllowedSpecial, EncodeOptions, Tokenizer } from './tokenizer.ts';
export { StreamingDecoder } from './tokenizer.ts';
export { BpeTokenizer, type BpeModel, type BpeTrainOptions } from './bpe.ts';
export { O200kHarmonyTokenizer, o200kHarmony, O200K_HARMONY_VOCAB_SIZE } from './o200k.ts';
export { loadTokenizer } from './load-tokenizer.ts';
export { CHATML, DEFAULT_BPE_SPECIALS, HARMONY, PAD } from './special-tokens.ts';
export type { ChatMessage, Role, ToolCall, ToolSpec } from './messages.ts';
export type {
  ChatFormat,
  ChatSession,
  CompletionParse,
  CompletionParseError,
  CompletionStreamParser,
  ConversationStart,
  ParsedCompletion,
  ParsedToolCall,
  ParseErrorKind,
  StreamEvent,
} from './chat-format.ts';
export { parsedToMessage } from './chat-format.ts';
export { HarmonyFormat, type HarmonyOptions, type ReasoningEffort } from './harmony.ts';
export { HermesFormat, type HermesOptions } from './hermes.ts';
export { Qwen3Format, QWEN3_TAGS } from './qwen3.ts';
export { HfByteLevelBpeTokenizer } from './hf-bpe.ts';
export { qwen3Tokenizer, QWEN3_TOKENIZER_NAME } from './qwen3-tokenizer.ts';
export { createChatFormat, CHAT_FORMAT_NAMES, type ChatFormatName } from './formats.ts';
