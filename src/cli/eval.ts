import { SingleBar } from 'cli-progress';
import type { Command } from 'commander';
import { runEval, type EvalSummary } from '../serve/eval/runner.ts';
import { AGENT_KINDS, buildEval, USER_KINDS, type EvalCliOptions } from '../serve/eval/setup.ts';
import { FALLBACK_JUDGE_NAME } from '../tooluse/fallback-judge.ts';
import { withCheckpointAgent } from '../serve/eval/checkpoint-agent.ts';

function int(name: string, min: number) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isInteger(n) || n < min) throw new Error(`${name} must be an integer >= ${min}, got ${JSON.stringify(v)}`);
    return n;
  };
}

function num(name: string) {
  return (v: string): number => {
    const n = Number(v);
    if (!Number.isFinite(n) || n < 0) throw new Error(`${name} must be a non-negative number, got ${JSON.stringify(v)}`);
    return n;
  };
}

export function formatSummary(s: EvalSummary): string {
  const lines = [`episodes: ${s.finished}/${s.planned} finished, ${s.infrastructureErrors} infrastructure error(s)${s.complete ? '' : ' (INCOMPLETE: re-run with the same --out to retry)'}`];
  if (s.metrics) {
    lines.push(`avg reward: ${s.metrics.avgReward.toFixed(4)} ± ${s.metrics.rewardStdErr.toFixed(4)} (standard error over tasks)   success rate: ${s.metrics.successRate.toFixed(4)}`);
    lines.push(`pass^k: ${Object.entries(s.metrics.passHatK).map(([k, v]) => `pass^${k}=${v.toFixed(4)}`).join('  ')}`);
    lines.push(`pass@k: ${Object.entries(s.metrics.passAtK).map(([k, v]) => `pass@${k}=${v.toFixed(4)}`).join('  ')}`);
  }
  lines.push(`terminations: ${Object.entries(s.terminations).map(([k, v]) => `${k}=${v}`).join('  ')}`);
  const u = s.usage;
  lines.push(`tokens (prompt/completion): agent ${u.agent.promptTokens}/${u.agent.completionTokens}, user ${u.user.promptTokens}/${u.user.completionTokens}, judge ${u.judge.promptTokens}/${u.judge.completionTokens}; retries ${u.agent.retries + u.user.retries + u.judge.retries}`);
  if (s.meanSteps !== null) lines.push(`mean steps: ${s.meanSteps.toFixed(1)}   wall: ${s.wallS.toFixed(1)} s${s.resumedEpisodes ? `   resumed: ${s.resumedEpisodes} episode(s) already done` : ''}`);
  return lines.join('\n');
}

type EvalCommandOptions = EvalCliOptions & { progress: boolean; checkpoint?: string; tokenizer?: string; chatFormat?: string };

export function evalCommand(opts: EvalCommandOptions): Promise<number> {
  return withCheckpointAgent(opts, (resolved) => runEvalCommand({ ...opts, ...resolved }));
}

async function runEvalCommand(opts: EvalCommandOptions): Promise<number> {
  const { run, notes } = buildEval(opts);
  for (const n of notes) console.error(`note: ${n}`);
  const bar = opts.progress && process.stderr.isTTY ? new SingleBar({ format: 'eval [{bar}] {value}/{total} episodes | avg reward {avg} | {eta_formatted} left', stream: process.stderr }) : null;
  let rewardSum = 0;
  let finished = 0;
  const summary = await runEval({
    ...run,
    onStart: ({ total, alreadyDone }) => {
      if (alreadyDone) console.error(`resuming: ${alreadyDone}/${total} episode(s) already in ${opts.out}`);
      bar?.start(total, alreadyDone, { avg: '-' });
    },
    onEpisode: (r, p) => {
      if (r.status === 'ok') {
        rewardSum += r.reward ?? 0;
        finished++;
      } else {
        console.error(`\ntask ${r.taskId} trial ${r.trial}: infrastructure error: ${r.error}`);
      }
      if (bar) bar.update(p.done, { avg: finished ? (rewardSum / finished).toFixed(3) : '-' });
      else if (opts.progress) console.error(`[${p.done}/${p.total}] task ${r.taskId} trial ${r.trial}: ${r.status === 'ok' ? `reward ${r.reward} (${r.terminationReason})` : 'infrastructure error'}`);
    },
  });
  bar?.stop();
  console.log(formatSummary(summary));
  console.log(`results: ${opts.out}/results.json, trajectories: ${opts.out}/trajectories.jsonl`);
  return summary.complete ? 0 : 2;
}

export function register(program: Command): void {
  program
    .command('eval')
    .description('evaluate an agent on τ² retail (or generated tasks): k trials per task, pass^k, resumable')
    .requiredOption('--out <dir>', 'output folder (results.json, trajectories.jsonl); re-running with it resumes')
    .option('--agent <kind>', `agent: ${AGENT_KINDS.join(' | ')} | checkpoint`, 'openai')
    .option('--checkpoint <dir>', 'with --agent checkpoint: a gpt-oss checkpoint served on loopback for the run')
    .option('--tokenizer <name|file>', 'with --agent checkpoint: o200k_harmony or a BPE file (default <checkpoint>/tokenizer.json)')
    .option('--chat-format <name>', 'with --agent checkpoint: harmony (default) or hermes')
    .option('--base-url <url>', 'OpenAI-compatible base URL of the agent model (e.g. http://127.0.0.1:8000/v1); key from OPENAI_API_KEY')
    .option('--model <name>', 'agent model name')
    .option('--temperature <t>', 'sampling temperature for every LLM (default 0, as τ²)', num('--temperature'))
    .option('--max-tokens <n>', 'completion cap per LLM request (max_tokens)', int('--max-tokens', 1))
    .option('--data <dir>', 'τ² retail data folder (default env LONGRUN_TAU2_RETAIL or ../shared/tau2/retail)')
    .option('--task-set <v>', 'τ² task set: v0 (DB × COMMUNICATE) or v1 (DB × NL assertions, needs a judge)', 'v1')
    .option('--split <name>', 'task split (default base; ignored for --tasks unless given)')
    .option('--tasks <file>', 'a generated tasks.json (its folder\'s db.json is used when present)')
    .option('--task-ids <ids>', 'comma-separated task ids to run')
    .option('--num-tasks <n>', 'only the first n tasks', int('--num-tasks', 1))
    .option('--trials <k>', 'trials per task (pass^1..k)', int('--trials', 1), 1)
    .option('--user <kind>', `user simulator: ${USER_KINDS.join(' | ')}`, 'ticket')
    .option('--user-base-url <url>', 'LLM user base URL (default: --base-url)')
    .option('--user-model <name>', 'LLM user model')
    .option('--user-guidelines <file>', "the user simulator's guidelines text (τ²'s simulation_guidelines.md for parity)")
    .option('--judge <kind>', `NL-assertion judge: llm | ${FALLBACK_JUDGE_NAME}`)
    .option('--judge-base-url <url>', 'judge base URL (default: --base-url)')
    .option('--judge-model <name>', 'judge model')
    .option('--concurrency <n>', 'episodes at once', int('--concurrency', 1), 1)
    .option('--max-requests <n>', 'LLM requests in flight across the run', int('--max-requests', 1), 8)
    .option('--timeout <s>', 'per-request timeout in seconds', num('--timeout'), 120)
    .option('--max-retries <n>', 'retries on 429/5xx/timeouts (exponential backoff with jitter)', int('--max-retries', 0), 4)
    .option('--max-steps <n>', 'episode step limit (τ² CLI: 200)', int('--max-steps', 1), 200)
    .option('--max-errors <n>', 'tool errors before the episode ends', int('--max-errors', 1), 10)
    .option('--seed <n>', 'run seed (per-episode seeds derive from it)', int('--seed', 0), 300)
    .option('--no-progress', 'no progress output')
    .action(async (opts: EvalCommandOptions) => {
      process.exitCode = await evalCommand(opts);
    });
}
