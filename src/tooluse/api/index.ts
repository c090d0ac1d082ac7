/** The environment API (README.md here): everything public of src/tooluse/api. */
export { EpisodeError } from './errors.ts';
export type {
  DefineEnvSpec, DefinedTerminationReason, DemoContext, DemoSession, DemoTurn, FinishedEpisode, JsonSchema, OpenToolSource, ReplayCall, RewardFn,
  RewardResult, Task, TaskList, ToolCallHookContext, ToolCallOutcome, ToolCallRecord, ToolContext, ToolDef, ToolSource, ToolSourceContext,
  UserContext, UserReply, UserSpec,
} from './types.ts';
export type { AgentTurn } from '../orchestrator.ts';
export { tool, toolSpec, parametersSchema, validateArguments, DEFAULT_TOOL_TIMEOUT_MS } from './tool.ts';
export { defineEnv, EnvDefinition, isEnvDefinition, DEFAULT_MAX_TURNS, type AnyEnvDefinition } from './define.ts';
export { DefinedToolEnv, DONE_TOOL_SPEC, doneToolSpec, type DefinedEnvOptions } from './env.ts';
export { scriptedUser, llmUser, USER_STOP_TOKEN, type LlmUserOptions } from './users.ts';
export { rewards, canonicalJson, stateHash, type Check, type FinalStateOptions, type RubricOptions } from './rewards.ts';
export { registerEnv, getEnvDefinition, definedEnvIds, unregisterEnv, loadEnvModule, type LazyEnvDefinition, type RegisterEnvOptions } from './registry.ts';
export { readTasksFile } from './tasks-file.ts';
export { demonstrationEpisodes, writeTrajectoriesJsonl, type DemonstrationOptions, type DemonstrationRecord } from './demonstrations.ts';
export { mcpServer, type McpServerSpec, type McpServerOptions, type McpToolSource, type OpenMcpServer } from './mcp.ts';
