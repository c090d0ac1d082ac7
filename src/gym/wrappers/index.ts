export { TimeLimit } from './time-limit.ts';
export { OrderEnforcing } from './order-enforcing.ts';
export { PassiveEnvChecker } from './passive-env-checker.ts';
export { RecordEpisodeStatistics, BoundedQueue, type EpisodeStatistics } from './record-episode-statistics.ts';
export { Autoreset } from './autoreset.ts';
