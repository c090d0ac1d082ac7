export { ChatClient, sumUsage, type ChatClientOptions, type TokenUsage } from './chat-client.ts';
export { ConcurrencyLimiter } from './limiter.ts';
export { Retrier, isRetryable, type RetryOptions } from './retry.ts';
export { OpenAIAgent, EMPTY_REPLY_TEXT, withoutDoneTool, type AgentEpisode } from './agent.ts';
export { LLMUserSimulator, DEFAULT_USER_GUIDELINES, type LLMUserOptions } from './user-simulator.ts';
export { LLMJudge, JUDGE_SYSTEM_PROMPT, judgeUserPrompt, parseJudgeReply, type LLMJudgeOptions } from './judge.ts';
