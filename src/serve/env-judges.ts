/** The env server's optional LLM user and judge, built from its CLI flags (server-side only; see env-kwargs.ts). */
import { loadRetailTaskSet } from '../domains/retail/register.ts';
import { ChatClient } from '../llm/openai/chat-client.ts';
import { LLMJudge } from '../llm/openai/judge.ts';
import { ConcurrencyLimiter } from '../llm/openai/limiter.ts';
import { LLMUserSimulator } from '../llm/openai/user-simulator.ts';
import type { ServerEnvConfig } from './env-kwargs.ts';
import { CommunicateFallbackJudge, FALLBACK_JUDGE_NAME } from '../tooluse/fallback-judge.ts';

export interface ServerLlmFlags {
  dataDir?: string;
  user?: { baseUrl: string; model: string; guidelines?: string };
  /** `communicate-fallback`, or an LLM judge. */
  judge?: typeof FALLBACK_JUDGE_NAME | { baseUrl: string; model: string };
  /** LLM requests in flight across all sessions. */
  maxRequests?: number;
}

export function serverLlmConfig(f: ServerLlmFlags): Pick<ServerEnvConfig, 'llmUser' | 'judge'> {
  const limiter = new ConcurrencyLimiter(f.maxRequests ?? 8);
  const out: Pick<ServerEnvConfig, 'llmUser' | 'judge'> = {};
  if (f.user) {
    const u = f.user;
    out.llmUser = () => new LLMUserSimulator(new ChatClient({ baseUrl: u.baseUrl, model: u.model, limiter, params: { temperature: 0 } }), { guidelines: u.guidelines });
  }
  if (f.judge === FALLBACK_JUDGE_NAME) {
    // Every task of both τ² releases, so any split or version of a session finds its assertions.
    const tasks = [...loadRetailTaskSet({ dataDir: f.dataDir, version: 'v1' }).allTasks, ...loadRetailTaskSet({ dataDir: f.dataDir, version: 'v0' }).allTasks];
    const judge = new CommunicateFallbackJudge(tasks);
    out.judge = () => judge;
  } else if (f.judge) {
    const j = f.judge;
    out.judge = () => new LLMJudge(new ChatClient({ baseUrl: j.baseUrl, model: j.model, limiter, params: { temperature: 0 } }));
  }
  return out;
}
