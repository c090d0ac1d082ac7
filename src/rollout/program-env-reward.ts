/**
 * An env's reward function (the environment API, src/tooluse/api/) over a program rollout the gateway recorded: the
 * env never ran the program's tools, so its `FinishedEpisode` is built from the conversation:
 * - `messages`: the rollout's last row's conversation (the most complete one when it split), in the tool-use message
 *   shape (src/tooluse/messages.ts); tool calls get ids `call_<message>_<k>`, each tool result answers the next
 *   unanswered call in order (a result whose text starts with `Error` counts as an error);
 * - `toolCalls`: those pairs, in order;
 * - `state`: a fresh state of the task (`spec.state(task, { seed })`), disposed after; `replay(calls, read)` runs calls
 *   on another fresh state through the env's own tools, so `rewards.finalState` can score what the program did
 *   when its tools mirror the env's;
 * - `terminationReason`: `agent_stop`, or `max_turns` when the gateway cut the rollout short; `sources`: none.
 */
import type { ChatMessage } from '../llm/messages.ts';
import type { AnyEnvDefinition } from '../tooluse/api/define.ts';
import { asEpisodeError, EpisodeError } from '../tooluse/api/errors.ts';
import { callTool } from '../tooluse/api/tool.ts';
import type { FinishedEpisode, ReplayCall, ToolCallRecord } from '../tooluse/api/types.ts';
import type { Message, ToolCall } from '../tooluse/messages.ts';
import type { ProgramRewardFn } from './program-sampler.ts';

/** Chat messages → tool-use messages and the tool calls paired with their results. */
export function toolUseConversation(chat: readonly ChatMessage[]): { messages: Message[]; toolCalls: ToolCallRecord[] } {
  const messages: Message[] = [];
  const toolCalls: ToolCallRecord[] = [];
  const open: { call: ToolCall }[] = [];
  chat.forEach((m, i) => {
    switch (m.role) {
      case 'system':
        messages.push({ role: 'system', content: m.content });
        break;
      case 'user':
        messages.push({ role: 'user', content: m.content, toolCalls: null });
        break;
      case 'assistant': {
        const calls = (m.toolCalls ?? []).map((c, k): ToolCall => ({ id: `call_${i}_${k}`, name: c.name, arguments: c.arguments, requestor: 'assistant' }));
        open.length = 0;
        for (const call of calls) open.push({ call });
        messages.push({ role: 'assistant', content: m.content === '' && calls.length ? null : m.content, toolCalls: calls.length ? calls : null, ...(m.reasoning !== undefined ? { reasoning: m.reasoning } : {}) });
        break;
      }
      case 'tool': {
        const answered = open.shift()?.call;
        const error = /^\s*error\b/i.test(m.content);
        messages.push({ role: 'tool', id: answered?.id ?? `call_${i}_orphan`, content: m.content, requestor: 'assistant', error });
        toolCalls.push({ name: answered?.name ?? m.name ?? 'unknown', arguments: answered?.arguments ?? {}, result: m.content, error });
        break;
      }
    }
  });
  return { messages, toolCalls };
}

/** The env's reward as a program rollout's reward function (`rollout.reward: env`). */
export function envRewardFn(def: AnyEnvDefinition): ProgramRewardFn {
  const spec = def.spec;
  const freshState = async (task: { id: string }, seed: number, what: string) => {
    try {
      return spec.state ? await spec.state(task, { seed }) : undefined;
    } catch (e) {
      throw asEpisodeError(e, def.id, `state() threw for task ${task.id} (${what})`);
    }
  };
  const dispose = async (state: unknown) => {
    try {
      await spec.disposeState?.(state);
    } catch {
      // a reward already computed stands; the env's own cleanup problem is not the rollout's
    }
  };
  return async ({ task, record, seed }) => {
    const last = record.rows.at(-1);
    const { messages, toolCalls } = toolUseConversation(last?.messages ?? []);
    const state = await freshState(task, seed, 'reward');
    try {
      const finished: FinishedEpisode = {
        task, state, messages, toolCalls, terminationReason: record.truncated ? 'max_turns' : 'agent_stop', sources: {}, seed, episodeId: record.id,
        replay: async <R>(calls: readonly ReplayCall[], read: (s: unknown) => R | Promise<R>): Promise<R> => {
          const s = await freshState(task, seed, 'replay');
          const tools = new Map((spec.tools ?? []).map((t) => [t.name, t]));
          const controller = new AbortController();
          try {
            for (const [i, c] of calls.entries()) {
              const out = await callTool(tools, c, { state: s, task, seed, episodeId: `${record.id}:replay`, signal: controller.signal });
              if (out.error) throw new EpisodeError(`env ${def.id}: call ${i} (${c.name}) of task ${task.id} failed on replay: ${out.output}`, { env: def.id });
            }
            return await read(s);
          } finally {
            controller.abort();
            await dispose(s);
          }
        },
      };
      return await spec.reward(finished);
    } finally {
      await dispose(state);
    }
  };
}
