export { VectorEnv, type VectorResetOptions, type VectorStepResult } from './vector-env.ts';
export { BatchedVectorEnv, type VectorEnvOptions } from './batched-vector-env.ts';
export { SyncVectorEnv } from './sync.ts';
export { AsyncVectorEnv } from './async.ts';
export { addInfo } from './info.ts';
export { VectorWrapper } from './vector-wrapper.ts';
export { VectorRecordEpisodeStatistics } from './record-episode-statistics.ts';
