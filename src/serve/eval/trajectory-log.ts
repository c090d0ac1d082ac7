/**
 * The eval output folder: `config.json` (what was run), `trajectories.jsonl` (one line per finished episode, in
 * completion order) and `results.json` (the summary). Resuming reads the JSONL back: episodes that finished are
 * skipped, infrastructure errors are run again, and a torn last line (a crash mid-write) is dropped.
 */
import { appendFileSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TokenUsage } from '../../llm/openai/chat-client.ts';
import type { Message } from '../../tooluse/messages.ts';
import type { RewardInfo } from '../../tooluse/evaluator.ts';

export interface EpisodeRecord {
  taskId: string;
  trial: number;
  seed: number;
  status: 'ok' | 'infrastructure_error';
  reward: number | null;
  terminationReason: string | null;
  steps: number;
  toolErrors: number;
  durationMs: number;
  usage: { agent: TokenUsage | null; user: TokenUsage | null; judge: TokenUsage | null };
  agentStats?: Record<string, number>;
  rewardInfo: RewardInfo | null;
  messages: Message[];
  /** Token-level agents with `--save-tokens`: the episode's prompt and response ids (mask 1 on sampled tokens). */
  tokens?: { prompt: number[]; response: number[]; responseMask: number[] };
  error?: string;
}

export const pairKey = (taskId: string, trial: number) => `${taskId}\u0000${trial}`;

export class TrajectoryLog {
  readonly file: string;
  readonly configFile: string;
  readonly resultsFile: string;

  constructor(readonly dir: string) {
    mkdirSync(dir, { recursive: true });
    this.file = join(dir, 'trajectories.jsonl');
    this.configFile = join(dir, 'config.json');
    this.resultsFile = join(dir, 'results.json');
  }

  /** Records already written, keeping the last one per (task, trial); rewrites the file if a line was torn. */
  load(): { records: EpisodeRecord[]; dropped: number } {
    if (!existsSync(this.file)) return { records: [], dropped: 0 };
    const lines = readFileSync(this.file, 'utf8').split('\n');
    const byPair = new Map<string, EpisodeRecord>();
    const good: string[] = [];
    let dropped = 0;
    for (const line of lines) {
      if (line.trim() === '') continue;
      try {
        const r = JSON.parse(line) as EpisodeRecord;
        if (typeof r.taskId !== 'string' || typeof r.trial !== 'number') throw new Error('not an episode record');
        byPair.set(pairKey(r.taskId, r.trial), r);
        good.push(line);
      } catch {
        dropped++;
      }
    }
    if (dropped > 0) writeFileSync(this.file, good.map((l) => l + '\n').join(''));
    return { records: [...byPair.values()], dropped };
  }

  append(record: EpisodeRecord): void {
    appendFileSync(this.file, JSON.stringify(record) + '\n');
  }

  /** Checks a previous run in this folder was the same evaluation; writes the config on a fresh folder. */
  checkOrWriteConfig(config: Record<string, unknown>, identityKeys: readonly string[]): void {
    if (existsSync(this.configFile)) {
      const old = JSON.parse(readFileSync(this.configFile, 'utf8')) as Record<string, unknown>;
      const differs = identityKeys.filter((k) => JSON.stringify(old[k]) !== JSON.stringify(config[k]));
      if (differs.length) {
        throw new Error(
          `${this.dir} holds a different evaluation (${differs.map((k) => `${k}: ${JSON.stringify(old[k])} → ${JSON.stringify(config[k])}`).join('; ')}); use another --out folder to start a new one`,
        );
      }
    }
    writeFileSync(this.configFile, JSON.stringify(config, null, 2) + '\n');
  }

  writeResults(results: unknown): void {
    writeFileSync(this.resultsFile, JSON.stringify(results, null, 2) + '\n');
  }
}
