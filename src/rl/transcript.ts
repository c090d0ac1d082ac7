/**
 * The conversation of an episode as the GRPO trainer records it in `trainer.episodesFile` (trainer.ts,
 * `trainer.episodeTranscripts`), bounded so that the file stays small enough to read whole (the dashboard's
 * trajectory viewer reads it).
 */
import type { ChatMessage } from '../llm/index.ts';

/**
 * An episode's conversation for `episodesFile`, at most `maxChars` characters of text: the system prompt (the same in
 * every episode) is left out and its length given; past the budget a message's text is cut and later messages are
 * dropped, with the counts given (`messagesCut`, `charsCut`).
 */
export function transcript(messages: readonly ChatMessage[], maxChars: number): { messages: ChatMessage[]; systemPromptChars?: number; messagesCut?: number; charsCut?: number } {
  const out: ChatMessage[] = [];
  let left = maxChars, cutMessages = 0, cutChars = 0, system: number | undefined;
  for (const m of messages) {
    if (m.role === 'system') {
      system = (system ?? 0) + m.content.length;
      continue;
    }
    const size = m.content.length + (m.reasoning?.length ?? 0) + (m.toolCalls ? JSON.stringify(m.toolCalls).length : 0);
    if (left <= 0) {
      cutMessages++;
      cutChars += size;
      continue;
    }
    if (size <= left) {
      out.push(m);
      left -= size;
      continue;
    }
    // The first message past the budget keeps the head of its text (its tool calls whole when they fit).
    const calls = m.toolCalls && JSON.stringify(m.toolCalls).length <= left ? m.toolCalls : undefined;
    const room = Math.max(0, left - (calls ? JSON.stringify(calls).length : 0));
    const cut: ChatMessage = { ...m, content: m.content.slice(0, room) };
    if (m.reasoning !== undefined) cut.reasoning = m.reasoning.slice(0, Math.max(0, room - cut.content.length));
    if (calls) cut.toolCalls = calls;
    else delete cut.toolCalls;
    const kept = cut.content.length + (cut.reasoning?.length ?? 0) + (calls ? JSON.stringify(calls).length : 0);
    cutChars += size - kept;
    out.push(cut);
    left = 0;
  }
  return { messages: out, ...(system !== undefined ? { systemPromptChars: system } : {}), ...(cutMessages ? { messagesCut: cutMessages } : {}), ...(cutChars ? { charsCut: cutChars } : {}) };
}
