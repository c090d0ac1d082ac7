/**
 * `LLMUserSimulator`: τ²'s LLM user over an OpenAI-compatible server (tau2.md §8). The system prompt is the
 * simulation guidelines followed by the task's scenario in `<scenario>` tags; the conversation is shown with roles
 * flipped (the agent's texts as `user`, the simulator's own past messages as `assistant`, no tool traffic); the
 * episode ends when the reply contains `###STOP###`, `###TRANSFER###` or `###OUT-OF-SCOPE###` (the orchestrator
 * checks). τ²'s own guidelines file can be passed in for parity; the default below is our own wording of the same
 * rules.
 */
import type { UserEpisodeContext, UserSession, UserSimulator, UserViewTurn } from '../../tooluse/user.ts';
import { userSimulatorSystemPrompt } from '../../tooluse/user.ts';
import type { ChatClient } from './chat-client.ts';

export const DEFAULT_USER_GUIDELINES = [
  '# User simulation guidelines',
  'You are playing the role of a customer contacting a customer service agent. Your goal is to reach the outcome',
  'described in the scenario below by talking with the agent.',
  '',
  '- Write one message at a time, as a customer would: short and natural.',
  '- Follow the scenario exactly. Never make up information that the scenario does not give you: if the agent asks',
  '  for something you do not know, say that you do not have it.',
  '- Do not copy the scenario text word for word; say things in your own words.',
  '- Reveal information only when it is needed or asked for, a little at a time, not all at once.',
  '- When the goal of the scenario is reached, write ###STOP### as your whole message.',
  '- If you are transferred to another agent, write ###TRANSFER###.',
  '- If the scenario does not tell you what to do in the situation you are in, write ###OUT-OF-SCOPE###.',
].join('\n');

export interface LLMUserOptions {
  /** The guidelines text (τ²'s `simulation_guidelines.md` for parity); default DEFAULT_USER_GUIDELINES. */
  guidelines?: string;
  /** Requests to make when the model answers with nothing (default 2). */
  maxEmptyRetries?: number;
}

export class LLMUserSimulator implements UserSimulator {
  readonly name: string;
  readonly guidelines: string;
  private readonly maxEmptyRetries: number;

  constructor(
    readonly client: ChatClient,
    options: LLMUserOptions = {},
  ) {
    this.name = `llm:${client.model}`;
    this.guidelines = options.guidelines ?? DEFAULT_USER_GUIDELINES;
    this.maxEmptyRetries = options.maxEmptyRetries ?? 2;
  }

  systemPrompt(context: UserEpisodeContext): string {
    return userSimulatorSystemPrompt(this.guidelines, context.instructions);
  }

  start(context: UserEpisodeContext): UserSession {
    const system = this.systemPrompt(context);
    return {
      respond: async (conversation: readonly UserViewTurn[]) => {
        const messages = [{ role: 'system' as const, content: system }, ...conversation.map((t) => ({ role: t.role, content: t.content }))];
        for (let attempt = 0; attempt <= this.maxEmptyRetries; attempt++) {
          const reply = await this.client.complete({ messages, seed: context.seed });
          const text = reply.choices[0]!.message.content;
          if (typeof text === 'string' && text.trim() !== '') return text;
        }
        throw new Error(`The user simulator (${this.client.model}) answered with an empty message ${this.maxEmptyRetries + 1} times`);
      },
    };
  }
}
