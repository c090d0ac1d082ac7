/**
 * Env-server load test on loopback: N concurrent sessions (default 200) each play τ² retail v0.x gold trajectories
 * through the HTTP API (create → reset → one gold action per step as a tool call → a closing text with the task's
 * communicate_info → the ticket user stops → DELETE). Every episode must end with reward 1 and DB reward 1, and its
 * final DB hash must equal its own task's gold hash (computed here, in the load generator, by replaying the gold
 * actions): a session that saw another session's writes would end on a different hash. Reports p50/p90/p99 step
 * latency (client-side, request to parsed reply) and steps/s. The server runs in its own process
 * (`longrun serve env`), so the load generator's JSON work does not share its event loop.
 *
 * Bounded: at most --sessions × --episodes episodes, and it stops by itself after --max-seconds (default 180).
 * Writes bench/results/serve.{json,md}. Usage: npm run bench:serve [-- --sessions 200 --episodes 5 --max-seconds 180]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { Agent, request } from 'node:http';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadRetailTaskSet } from '../src/domains/retail/register.ts';
import { goldTurns } from '../src/serve/gold-turns.ts';
import { replayGoldActions } from '../src/tooluse/evaluator.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const DATA_DIR = process.env.LONGRUN_TAU2_RETAIL ?? join(ROOT, '..', 'shared', 'tau2', 'retail');

function arg(name: string, dflt: number): number {
  const i = process.argv.indexOf(`--${name}`);
  if (i < 0) return dflt;
  const v = Number(process.argv[i + 1]);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`--${name} needs a positive number`);
  return v;
}

const SESSIONS = arg('sessions', 200);
const EPISODES = arg('episodes', 5);
const MAX_SECONDS = arg('max-seconds', 180);
const TOKEN = 'bench-serve-token';

function quantile(sorted: number[], q: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))]! : NaN;
}

async function startServer(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src/cli/main.ts'), 'serve', 'env', '--port', '0', '--data', DATA_DIR, '--max-sessions', String(SESSIONS + 8), '--idle-timeout', '120'], {
    cwd: ROOT,
    env: { ...process.env, LONGRUN_SERVE_TOKEN: TOKEN },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  const url = await new Promise<string>((resolve, reject) => {
    let text = '';
    const t = setTimeout(() => reject(new Error(`the server did not start in 60 s: ${text}`)), 60_000);
    child.stderr!.on('data', (d) => {
      text += d;
      const m = /listening on (http:\/\/\S+)/.exec(text);
      if (m) {
        clearTimeout(t);
        resolve(m[1]!);
      }
    });
    child.on('exit', (code) => reject(new Error(`the server exited (${code}): ${text}`)));
  });
  return { url, child };
}

interface Failure {
  session: number;
  taskId: string;
  why: string;
}

async function main(): Promise<void> {
  const { domain, tasks } = loadRetailTaskSet({ dataDir: DATA_DIR, version: 'v0' });
  const goldHash = new Map(tasks.map((t) => [t.id, domain.hashDb(replayGoldActions(domain, t).db)]));
  const { url, child } = await startServer();
  const deadline = Date.now() + MAX_SECONDS * 1000;
  const headers = { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` };
  // node:http with a keep-alive pool (lighter than fetch), so the load generator spends less of the shared CPU.
  const agent = new Agent({ keepAlive: true, maxSockets: SESSIONS + 8 });
  const call = (method: string, path: string, body?: unknown) =>
    new Promise<any>((resolve, reject) => {
      const data = body === undefined ? undefined : JSON.stringify(body);
      const req = request(url + path, { method, agent, headers: data === undefined ? headers : { ...headers, 'content-length': Buffer.byteLength(data) }, timeout: 30_000 }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          try {
            const json = JSON.parse(Buffer.concat(chunks).toString('utf8'));
            if ((res.statusCode ?? 500) >= 400) reject(new Error(`${method} ${path}: HTTP ${res.statusCode} ${JSON.stringify(json).slice(0, 200)}`));
            else resolve(json);
          } catch (err) {
            reject(err);
          }
        });
        res.on('error', reject);
      });
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: no reply in 30 s`)));
      req.on('error', reject);
      req.end(data);
    });

  const stepLatencies: number[] = [];
  const resetLatencies: number[] = [];
  const failures: Failure[] = [];
  let episodes = 0;
  let steps = 0;
  let peakOpen = 0;
  let open = 0;
  let stoppedEarly = false;
  const t0 = performance.now();

  const sessionWorker = async (i: number) => {
    const created = await call('POST', '/sessions', { env_id: 'longrun/retail-v0', compact_info: true });
    open++;
    peakOpen = Math.max(peakOpen, open);
    const id = created.session_id as string;
    try {
      for (let e = 0; e < EPISODES; e++) {
        if (Date.now() > deadline) {
          stoppedEarly = true;
          return;
        }
        const task = tasks[(i * EPISODES + e * 37) % tasks.length]!;
        let r0 = performance.now();
        await call('POST', `/sessions/${id}/reset`, { options: { taskId: task.id } });
        resetLatencies.push(performance.now() - r0);
        let last: any = null;
        for (const turn of goldTurns(task)) {
          r0 = performance.now();
          last = await call('POST', `/sessions/${id}/step`, { action: turn });
          stepLatencies.push(performance.now() - r0);
          steps++;
          if (last.terminated || last.truncated) break;
        }
        episodes++;
        const ri = last?.info?.rewardInfo;
        if (!last?.terminated) failures.push({ session: i, taskId: task.id, why: 'episode did not terminate' });
        else if (last.reward !== 1) failures.push({ session: i, taskId: task.id, why: `reward ${last.reward}` });
        else if (ri?.dbCheck?.dbReward !== 1) failures.push({ session: i, taskId: task.id, why: 'DB reward not 1' });
        else if (ri.dbCheck.predictedHash !== goldHash.get(task.id)) failures.push({ session: i, taskId: task.id, why: 'final DB hash differs from its own gold hash' });
      }
    } catch (err) {
      failures.push({ session: i, taskId: '?', why: (err as Error).message });
    } finally {
      await call('DELETE', `/sessions/${id}`).catch(() => undefined);
      open--;
    }
  };

  try {
    // All sessions are created and run at once: SESSIONS concurrent episodes in flight.
    await Promise.all(Array.from({ length: SESSIONS }, (_, i) => sessionWorker(i)));
  } finally {
    const health = await call('GET', '/health').catch(() => null);
    agent.destroy();
    child.kill('SIGTERM');
    const code = await new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
    if (code !== 0) failures.push({ session: -1, taskId: '-', why: `the server exited with ${code} on SIGTERM (expected 0)` });
    if (health && health.sessions !== 0) failures.push({ session: -1, taskId: '-', why: `${health.sessions} session(s) left open on the server` });
  }
  const wallS = (performance.now() - t0) / 1000;
  const sorted = [...stepLatencies].sort((a, b) => a - b);
  const resets = [...resetLatencies].sort((a, b) => a - b);
  const result = {
    date: new Date().toISOString(),
    node: process.version,
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    command: `npm run bench:serve -- --sessions ${SESSIONS} --episodes ${EPISODES} --max-seconds ${MAX_SECONDS}`,
    sessions: SESSIONS,
    peakConcurrentSessions: peakOpen,
    episodes,
    episodesPlanned: SESSIONS * EPISODES,
    stoppedEarly,
    steps,
    failures: failures.length,
    failureSamples: failures.slice(0, 10),
    allRewardsOne: failures.length === 0 && episodes === SESSIONS * EPISODES,
    stepLatencyMs: { p50: quantile(sorted, 0.5), p90: quantile(sorted, 0.9), p99: quantile(sorted, 0.99), max: sorted.at(-1) ?? NaN },
    resetLatencyMs: { p50: quantile(resets, 0.5), p99: quantile(resets, 0.99) },
    stepsPerSecond: steps / wallS,
    episodesPerSecond: episodes / wallS,
    wallS,
  };
  const f = (x: number) => x.toFixed(2);
  const md = [
    '# Env server load test (τ²-bench retail over HTTP)',
    '',
    `${result.date}, Node ${result.node}, ${result.cpu} (${result.cores} cores); server in its own process on 127.0.0.1, load generator in another. Command: \`${result.command}\`.`,
    '',
    '| measure | value |',
    '| --- | --- |',
    `| concurrent sessions (peak open) | ${result.peakConcurrentSessions} |`,
    `| episodes (gold trajectories, v0.x tasks) | ${episodes} / ${result.episodesPlanned}${stoppedEarly ? ' (stopped at the time limit)' : ''} |`,
    `| steps | ${steps} |`,
    `| episodes with reward 1, DB reward 1 and their own gold hash | ${episodes - failures.filter((x) => x.session >= 0).length} / ${episodes} |`,
    `| step latency p50 / p90 / p99 / max | ${f(result.stepLatencyMs.p50)} / ${f(result.stepLatencyMs.p90)} / ${f(result.stepLatencyMs.p99)} / ${f(result.stepLatencyMs.max)} ms |`,
    `| reset latency p50 / p99 | ${f(result.resetLatencyMs.p50)} / ${f(result.resetLatencyMs.p99)} ms |`,
    `| throughput | ${result.stepsPerSecond.toFixed(0)} steps/s, ${result.episodesPerSecond.toFixed(1)} episodes/s |`,
    `| wall time | ${wallS.toFixed(1)} s |`,
    '',
    'Latency is measured by the client (request sent → reply parsed) with every session stepping at once, so it includes',
    'queueing behind the other sessions on a machine shared with the load generator.',
    ...(failures.length ? ['', '## Failures', '', ...failures.slice(0, 10).map((x) => `- session ${x.session}, task ${x.taskId}: ${x.why}`)] : []),
    '',
  ].join('\n');
  const outDir = join(ROOT, 'bench', 'results');
  mkdirSync(outDir, { recursive: true });
  writeFileSync(join(outDir, 'serve.json'), JSON.stringify(result, null, 2) + '\n');
  writeFileSync(join(outDir, 'serve.md'), md);
  console.log(md);
  if (failures.length) process.exitCode = 1;
}

await main();
