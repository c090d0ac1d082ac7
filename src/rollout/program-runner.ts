/**
 * Runs an agent program for one rollout: a child process in its own process group, given the gateway's per-rollout
 * base URL and the task, with a time-out; the whole group is killed when it times out or exits (stragglers it left
 * behind included). Nothing it does can fail the caller: a crash, a time-out or a bad command comes back as a
 * `ProgramResult` with the exit status and the tail of its stderr.
 *
 * The program sees (environment):
 *   OPENAI_BASE_URL      the rollout's base URL (`…/rollouts/{id}/v1`): the `openai` package and most SDKs read it
 *   OPENAI_API_KEY       the gateway's token, or `longrun` when it has none (SDKs refuse to start without a key)
 *   LONGRUN_ROLLOUT_ID   the rollout id
 *   LONGRUN_REWARD_URL   where to POST `{"reward": number, "info"?: {...}}`
 *   LONGRUN_TASK         the task as JSON (also written to stdin), LONGRUN_TASK_ID its id
 * and may print its reward as its last stdout line instead: `{"reward": 0.5}`.
 */
import { spawn } from 'node:child_process';

export interface ProgramSpec {
  /** An executable with `args`, or, without `args`, a shell command line (`node my-agent.mjs --fast`). */
  command: string;
  args?: string[];
  /** Extra environment variables (added to this process's environment). */
  env?: Record<string, string>;
  cwd?: string;
  /** Wall-clock limit per rollout (default 120 s); then SIGTERM to the group, SIGKILL 2 s later. */
  timeoutMs?: number;
}

export interface ProgramRunContext {
  baseUrl: string;
  rolloutId: string;
  rewardUrl: string;
  task: { id: string; [k: string]: unknown };
  apiKey?: string;
  signal?: AbortSignal;
}

export interface ProgramResult {
  exitCode: number | null;
  signal: NodeJS.Signals | null;
  timedOut: boolean;
  /** The process could not be started (bad command, cwd): the message. */
  spawnError?: string;
  /** The last 4 KB of stderr. */
  stderrTail: string;
  /** The last line of stdout that parses as a JSON object, if any. */
  lastJson: Record<string, unknown> | null;
  ms: number;
}

const TAIL = 4096;
const KILL_GRACE_MS = 2000;

function killGroup(pid: number | undefined, signal: NodeJS.Signals): void {
  if (pid === undefined) return;
  try {
    process.kill(-pid, signal);
  } catch {
    // the group is gone already
  }
}

/** The last line of `text` that is a JSON object. */
export function lastJsonLine(text: string): Record<string, unknown> | null {
  const lines = text.split('\n');
  for (let i = lines.length - 1; i >= 0; i--) {
    const line = lines[i].trim();
    if (!line.startsWith('{')) continue;
    try {
      const v = JSON.parse(line);
      if (v !== null && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
    } catch {
      // not JSON: keep looking upwards
    }
  }
  return null;
}

export function runProgram(spec: ProgramSpec, ctx: ProgramRunContext): Promise<ProgramResult> {
  const t0 = performance.now();
  const timeoutMs = spec.timeoutMs ?? 120_000;
  const taskJson = JSON.stringify(ctx.task);
  const env = {
    ...process.env,
    ...spec.env,
    OPENAI_BASE_URL: ctx.baseUrl,
    OPENAI_API_KEY: ctx.apiKey ?? 'longrun',
    LONGRUN_ROLLOUT_ID: ctx.rolloutId,
    LONGRUN_REWARD_URL: ctx.rewardUrl,
    LONGRUN_TASK: taskJson,
    LONGRUN_TASK_ID: ctx.task.id,
  };
  return new Promise((resolve) => {
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    let settled = false;
    const child = spec.args
      ? spawn(spec.command, spec.args, { env, cwd: spec.cwd, detached: true, stdio: ['pipe', 'pipe', 'pipe'] })
      : spawn(spec.command, { env, cwd: spec.cwd, detached: true, shell: true, stdio: ['pipe', 'pipe', 'pipe'] });
    const finish = (r: Omit<ProgramResult, 'stderrTail' | 'lastJson' | 'ms' | 'timedOut'>) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      clearTimeout(hardKill);
      ctx.signal?.removeEventListener('abort', onAbort);
      // Whatever the program started and left running goes with it.
      killGroup(child.pid, 'SIGKILL');
      resolve({ ...r, timedOut, stderrTail: stderr.slice(-TAIL), lastJson: lastJsonLine(stdout), ms: performance.now() - t0 });
    };
    let hardKill: NodeJS.Timeout | undefined;
    const stop = () => {
      killGroup(child.pid, 'SIGTERM');
      hardKill = setTimeout(() => killGroup(child.pid, 'SIGKILL'), KILL_GRACE_MS);
      hardKill.unref();
    };
    const timer = setTimeout(() => {
      timedOut = true;
      stop();
    }, timeoutMs);
    timer.unref();
    const onAbort = () => stop();
    ctx.signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout.on('data', (d: Buffer) => {
      stdout += d.toString('utf8');
      // Keep the tail only (the reward line is the last one).
      if (stdout.length > 1 << 20) stdout = stdout.slice(-(64 << 10));
    });
    child.stderr.on('data', (d: Buffer) => {
      stderr += d.toString('utf8');
      if (stderr.length > 64 << 10) stderr = stderr.slice(-TAIL);
    });
    child.stdin.on('error', () => {}); // a program that never reads stdin
    child.stdin.end(taskJson);
    child.on('error', (err) => finish({ exitCode: null, signal: null, spawnError: err.message }));
    // A child that inherited stdout would hold 'close' back: the group goes as soon as the program exits.
    child.on('exit', () => killGroup(child.pid, 'SIGKILL'));
    child.on('close', (code, signal) => finish({ exitCode: code, signal }));
  });
}
