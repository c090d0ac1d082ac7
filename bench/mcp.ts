/**
 * MCP tool sources (src/tooluse/api/mcp.ts):
 * - per-call overhead: one tool (`echo`: returns its text argument) called through the env's call path (`callTool`:
 *   argument validation, timeout, result text) as an in-process `tool()`, as a tool of an MCP server over stdio (a
 *   child process on the SDK's McpServer, test/fixtures/mcp/fake-server.mjs) and over Streamable HTTP (the same
 *   tool on the SDK's McpServer + StreamableHTTPServerTransport, in a child process on 127.0.0.1); median, p90 and
 *   mean latency over sequential calls after a warm-up;
 * - episodes per second of the MCP memory example (examples/mcp-memory: a @modelcontextprotocol/server-memory process
 *   per episode, the demonstrator's gold turns played through DefinedToolEnv, the reward read from the server) with
 *   1 and 8 episodes at once, and the median time of a reset (state, server spawn, initialize, tools/list) and of a
 *   whole episode.
 * Writes bench/results/mcp.{json,md}. `--quick` for a short run. The machine is shared: the load average at the start
 * and the end is recorded with the numbers.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { callTool, tool } from '../src/tooluse/api/tool.ts';
import { mcpServer, type OpenMcpServer } from '../src/tooluse/api/mcp.ts';
import type { ToolDef } from '../src/tooluse/api/types.ts';
import type { ToolUseAction } from '../src/tooluse/spaces.ts';
import { startHttpMcpServer } from '../test/fixtures/mcp/http-server.ts';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
const FAKE = join(ROOT, 'test', 'fixtures', 'mcp', 'fake-server.mjs');
const quick = process.argv.includes('--quick');

function quantile(xs: readonly number[], q: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor(q * s.length))]!;
}
const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

interface CallStats { calls: number; medianUs: number; p90Us: number; meanUs: number; callsPerSecond: number }

async function timeCalls(def: ToolDef, warmup: number, n: number): Promise<CallStats> {
  const tools = new Map([[def.name, def]]);
  const ctx = { state: undefined, task: { id: 'bench' }, seed: 0, episodeId: 'bench', signal: new AbortController().signal };
  const times: number[] = [];
  const text = 'the quick brown fox jumps over the lazy dog';
  for (let i = -warmup; i < n; i++) {
    const t0 = performance.now();
    const out = await callTool(tools, { name: def.name, arguments: { text } }, ctx);
    const dt = performance.now() - t0;
    if (out.error || out.output !== text) throw new Error(`echo through ${def.name} returned ${JSON.stringify(out)}`);
    if (i >= 0) times.push(dt);
  }
  const total = times.reduce((a, b) => a + b, 0);
  return { calls: n, medianUs: quantile(times, 0.5) * 1000, p90Us: quantile(times, 0.9) * 1000, meanUs: (total / n) * 1000, callsPerSecond: n / (total / 1000) };
}

const openCtx = () => ({ signal: new AbortController().signal, seed: 0, episodeId: 'bench', task: { id: 'bench' }, state: undefined });

async function benchCalls(warmup: number, n: number) {
  const inProcess = tool({ name: 'echo', description: 'Echoes the text back.', parameters: z.object({ text: z.string().describe('What to echo') }), run: ({ text }) => text });
  const local = await timeCalls(inProcess, warmup, n);

  const stdioOpen = await mcpServer({ name: 'bench-stdio', command: process.execPath, args: [FAKE, 'serve'] }, { include: ['echo'] }).open(openCtx());
  let stdio: CallStats;
  try {
    stdio = await timeCalls(stdioOpen.tools[0], warmup, n);
  } finally {
    await stdioOpen.close();
  }

  const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(import.meta.url), '--serve-http'], { cwd: ROOT, stdio: ['pipe', 'pipe', 'inherit'] });
  let http: CallStats;
  try {
    const url = await new Promise<string>((resolve, reject) => {
      createInterface({ input: child.stdout! }).once('line', resolve);
      child.once('exit', (code) => reject(new Error(`the HTTP server child exited with ${code}`)));
    });
    const httpOpen: OpenMcpServer = await mcpServer({ name: 'bench-http', url }).open(openCtx());
    try {
      http = await timeCalls(httpOpen.tools[0], warmup, n);
    } finally {
      await httpOpen.close();
    }
  } finally {
    child.stdin!.end();
    await new Promise((r) => child.once('close', r));
  }
  return { inProcess: local, stdio, http };
}

async function benchEpisodes(concurrency: number, episodes: number) {
  const { default: env, memoryTasks } = await import('../examples/mcp-memory/env.ts');
  const tasks = memoryTasks('train');
  let next = 0;
  const resets: number[] = [];
  const whole: number[] = [];
  const rewards: number[] = [];
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      const e = env.makeEnv({ split: 'train' });
      try {
        for (let i = next++; i < episodes; i = next++) {
          const task = tasks[i % tasks.length]!;
          const t0 = performance.now();
          await e.reset({ seed: i, options: { taskId: task.id } });
          resets.push(performance.now() - t0);
          for (const turn of env.spec.demonstrator!(task)) {
            const [, reward, terminated, truncated] = await e.step(turn as ToolUseAction);
            if (terminated || truncated) {
              rewards.push(reward);
              break;
            }
          }
          await e.close();
          whole.push(performance.now() - t0);
        }
      } finally {
        await e.close();
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  if (rewards.length !== episodes || rewards.some((r) => r !== 1)) throw new Error(`gold episodes must all score 1: ${rewards.length} rewards, mean ${mean(rewards)}`);
  return { concurrency, episodes, seconds, episodesPerSecond: episodes / seconds, resetMedianMs: quantile(resets, 0.5), episodeMedianMs: quantile(whole, 0.5), episodeP90Ms: quantile(whole, 0.9), meanReward: mean(rewards) };
}

async function main(): Promise<void> {
  const loadStart = loadavg();
  const warmup = quick ? 50 : 200;
  const n = quick ? 300 : 2000;
  const calls = await benchCalls(warmup, n);
  const episodes = [await benchEpisodes(1, quick ? 4 : 16), await benchEpisodes(8, quick ? 16 : 64)];
  const loadEnd = loadavg();
  const result = {
    bench: 'mcp',
    date: new Date().toISOString(),
    node: process.version,
    cpu: cpus()[0]?.model.trim() ?? 'unknown',
    cores: cpus().length,
    quick,
    loadAvg1m: { start: loadStart[0], end: loadEnd[0] },
    calls: { warmup, ...calls },
    episodes,
  };
  const dir = join(ROOT, 'bench', 'results');
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'mcp.json'), `${JSON.stringify(result, null, 2)}\n`);
  const us = (x: number) => (x >= 1000 ? `${(x / 1000).toFixed(2)} ms` : `${x.toFixed(1)} µs`);
  const row = (label: string, s: CallStats) => `| ${label} | ${us(s.medianUs)} | ${us(s.p90Us)} | ${us(s.meanUs)} | ${Math.round(s.callsPerSecond)} | ${s === calls.inProcess ? '' : `+${us(s.medianUs - calls.inProcess.medianUs)}`} |`;
  const md = [
    '# MCP tool sources benchmark',
    '',
    `${result.date}, Node ${result.node}, ${result.cpu} (${result.cores} cores), load average (1 min) ${loadStart[0].toFixed(2)} at the start and ${loadEnd[0].toFixed(2)} at the end (a shared machine: timings scale with the load). Command: \`npm run bench:mcp\`${quick ? ' -- --quick' : ''}.`,
    '',
    `## Per-call latency of one tool (\`echo\`), ${n} sequential calls after ${warmup} warm-up calls`,
    '',
    'Every call goes through the env\'s call path (`callTool`: argument validation, timeout, result text). stdio: the server is a child process (the SDK\'s McpServer); HTTP: the same tool served over Streamable HTTP by a child process on 127.0.0.1, one session.',
    '',
    '| tool | median | p90 | mean | calls/s | median overhead vs in process |',
    '| --- | --- | --- | --- | --- | --- |',
    row('in process (`tool()`, zod)', calls.inProcess),
    row('MCP over stdio', calls.stdio),
    row('MCP over Streamable HTTP', calls.http),
    '',
    '## Episodes of the MCP memory example (examples/mcp-memory)',
    '',
    'A @modelcontextprotocol/server-memory process per episode (spawn, initialize, tools/list), the demonstrator\'s gold turns (2–3 tool-call turns and a final message) through `DefinedToolEnv`, the reward read from the server with `read_graph`, then the server closed and the episode folder removed. No model. Every episode scored 1.',
    '',
    '| episodes at once | episodes | episodes/s | median reset (server start) | median episode | p90 episode |',
    '| --- | --- | --- | --- | --- | --- |',
    ...episodes.map((e) => `| ${e.concurrency} | ${e.episodes} | ${e.episodesPerSecond.toFixed(2)} | ${e.resetMedianMs.toFixed(0)} ms | ${e.episodeMedianMs.toFixed(0)} ms | ${e.episodeP90Ms.toFixed(0)} ms |`),
    '',
  ].join('\n');
  writeFileSync(join(dir, 'mcp.md'), md);
  console.log(md);
}

// `--serve-http`: the child process that serves the echo tool over Streamable HTTP and prints its URL.
if (process.argv.includes('--serve-http')) {
  const server = await startHttpMcpServer((s) => {
    s.registerTool('echo', { description: 'Echoes the text back.', inputSchema: { text: z.string().describe('What to echo') } }, async ({ text }) => ({ content: [{ type: 'text', text }] }));
  });
  process.stdout.write(`${server.url}\n`);
  process.stdin.resume();
  process.stdin.on('end', () => void server.close().then(() => process.exit(0)));
} else {
  await main();
}
